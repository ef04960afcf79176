"""In-place ops (PyTorch's trailing underscore): ``add_ sub_ mul_ div_ zero_ fill_ copy_ clamp_
masked_fill_``, and the augmented assignments ``+= -= *= /=``.

They change the tensor's storage and return the tensor. Like PyTorch, they refuse a tensor that
requires grad while grad mode is on (its gradient would silently be wrong); under ``no_grad()``
(weight init, manual updates) they work, and backward then refuses any graph that saved the old
values (see autograd's version cells). The result keeps the tensor's dtype and shape: a value
that would need another dtype or a larger shape is an error, never a silent cast or reallocation.
"""

from __future__ import annotations

from collections.abc import Callable

from ..array_types import Array
from ..autograd import GRAD_ENABLED, mark_modified
from ..devices import backend_of
from ..dtypes import checked_cast, numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor
from .arith import combine_error, operand
from .indexing import mask_and_value


def _check_writable(fn: str, a: Tensor, other: object = None) -> None:
    if not GRAD_ENABLED[0]:
        return
    if a.requires_grad or a._ctx is not None:
        kind = "a leaf tensor that requires grad" if a._ctx is None else "a tensor that is part of a graph"
        raise RuntimeError(
            f"{fn}: {kind} cannot be changed in place while gradients are recorded; "
            "wrap the change in tinytensor.no_grad() (as optimizers do), or use the out-of-place op "
            "(x = x + y instead of x += y)"
        )
    if isinstance(other, Tensor) and other.requires_grad:
        raise RuntimeError(
            f"{fn}: the operand requires grad, but the tensor changed in place does not, so the result "
            "could not carry a gradient; use the out-of-place op (x = x + y instead of x += y)"
        )


def _value(fn: str, a: Tensor, other: object) -> Array | float:
    """The other operand as an array on ``a``'s device, or a Python number."""
    other = operand(other, a, fn)
    if not isinstance(other, Tensor):
        return other
    y = other._data
    x = a._data
    if type(y) is not type(x) or backend_of(x).device(x) != backend_of(y).device(y):
        raise combine_error(fn, x, y)
    return y


def _apply(fn: str, a: Tensor, update: Callable[[Array], None], other: object = None) -> Tensor:
    """Run ``update(x)`` (which writes into x) with the errors in the user's terms."""
    _check_writable(fn, a, other)
    x = a._data
    try:
        update(x)
    except TypeError as exc:  # numpy's casting rule: e.g. a float result into an int64 tensor
        raise TypeError(f"{fn}: the result cannot be stored in a tensor of dtype {x.dtype} ({exc})") from None
    except ValueError as exc:
        if "read-only" in str(exc):
            raise RuntimeError(
                f"{fn}: this tensor is a broadcast view (from expand) whose elements share memory; clone() it first"
            ) from None
        raise ShapeError(
            f"{fn}: the operand cannot be broadcast to the tensor's shape {tuple(x.shape)} ({exc})"
        ) from None
    mark_modified(a)
    return a


def _float_result_into_int(fn: str, a: Tensor, value: Array | float) -> None:
    kind = numpy_dtype(a.dtype).kind
    if kind in "biu" and (
        isinstance(value, float) or (hasattr(value, "dtype") and numpy_dtype(value.dtype).kind == "f")
    ):
        raise TypeError(f"{fn}: a floating-point result cannot be stored in a tensor of dtype {a.dtype}")


def _add(fn: str, a: Tensor, other: object, alpha: float = 1, sign: int = 1) -> Tensor:
    y = _value(fn, a, other)
    _float_result_into_int(fn, a, y)
    scaled = y if alpha == 1 else y * alpha

    def update(x: Array) -> None:
        if sign > 0:
            x += scaled
        else:
            x -= scaled

    return _apply(fn, a, update, other)


def _mul(fn: str, a: Tensor, other: object) -> Tensor:
    y = _value(fn, a, other)
    _float_result_into_int(fn, a, y)

    def update(x: Array) -> None:
        x *= y

    return _apply(fn, a, update, other)


def _div(fn: str, a: Tensor, other: object) -> Tensor:
    y = _value(fn, a, other)
    if numpy_dtype(a.dtype).kind != "f":
        raise TypeError(f"{fn}: true division cannot be stored in a tensor of dtype {a.dtype}")

    def update(x: Array) -> None:
        x /= y

    return _apply(fn, a, update, other)


def add_(a: Tensor, other: Tensor | Array | float, alpha: float = 1) -> Tensor:
    """``a += alpha * other``, in place; returns ``a``.

    ``other`` (a tensor, array or number) broadcasts to ``a``'s shape. A result that ``a``'s dtype
    cannot hold (a float into an integer tensor) is a TypeError, and a tensor that requires grad
    cannot be changed while gradients are recorded (a RuntimeError, as in PyTorch)."""
    return _add("add_", a, other, alpha)


def sub_(a: Tensor, other: Tensor | Array | float, alpha: float = 1) -> Tensor:
    """``a -= alpha * other``, in place; returns ``a`` (the rules of ``add_``)."""
    return _add("sub_", a, other, alpha, sign=-1)


def mul_(a: Tensor, other: Tensor | Array | float) -> Tensor:
    """``a *= other``, in place; returns ``a`` (the rules of ``add_``)."""
    return _mul("mul_", a, other)


def div_(a: Tensor, other: Tensor | Array | float) -> Tensor:
    """``a /= other``, in place; returns ``a``. A floating-point tensor only (the rules of ``add_``)."""
    return _div("div_", a, other)


# The augmented assignments x += y, x -= y, x *= y, x /= y: in place, as in PyTorch (without them
# Python would rebind x to a new tensor, and an update of a parameter would be lost).
def iadd(a: Tensor, other: Tensor | Array | float) -> Tensor:
    """``a += other``: changes ``a`` in place (``add_``)."""
    return _add("+=", a, other)


def isub(a: Tensor, other: Tensor | Array | float) -> Tensor:
    """``a -= other``: changes ``a`` in place (``sub_``)."""
    return _add("-=", a, other, sign=-1)


def imul(a: Tensor, other: Tensor | Array | float) -> Tensor:
    """``a *= other``: changes ``a`` in place (``mul_``)."""
    return _mul("*=", a, other)


def itruediv(a: Tensor, other: Tensor | Array | float) -> Tensor:
    """``a /= other``: changes ``a`` in place (``div_``)."""
    return _div("/=", a, other)


def fill_(a: Tensor, value: Tensor | float) -> Tensor:
    """Set every element to the number ``value`` (or a one-element tensor's value)."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ShapeError(f"fill_: value must be a number or a one-element tensor, got shape {value.shape}")
        value = value.item()
    value = operand(value, a, "fill_", "value")
    if isinstance(value, Tensor):
        raise TypeError(f"fill_: value must be a number, got an array of shape {value.shape}")
    _float_result_into_int("fill_", a, value)

    def update(x: Array) -> None:
        x[...] = value

    return _apply("fill_", a, update)


def zero_(a: Tensor) -> Tensor:
    """Set every element to 0, in place."""

    def update(x: Array) -> None:
        x[...] = 0

    return _apply("zero_", a, update)


def copy_(a: Tensor, src: Tensor | Array | float) -> Tensor:
    """Copy ``src``'s values into this tensor (broadcast to its shape, cast to its dtype)."""
    y = _value("copy_", a, src)
    if hasattr(y, "dtype") and numpy_dtype(y.dtype) != numpy_dtype(a.dtype):
        y = checked_cast(y, numpy_dtype(a.dtype), backend_of(y), "copy_")

    def update(x: Array) -> None:
        x[...] = y

    return _apply("copy_", a, update)


def clamp_(
    a: Tensor,
    min: Tensor | Array | float | None = None,  # noqa: A002 - PyTorch's argument names
    max: Tensor | Array | float | None = None,  # noqa: A002
) -> Tensor:
    """Clamp every element to ``[min, max]`` in place (either bound may be None)."""
    if min is None and max is None:
        raise ValueError("clamp_: needs min, max or both")
    lo = None if min is None else _value("clamp_", a, min)
    hi = None if max is None else _value("clamp_", a, max)
    for bound in (lo, hi):
        if bound is not None:
            _float_result_into_int("clamp_", a, bound)
    xp = backend_of(a._data).xp

    def update(x: Array) -> None:
        x[...] = xp.clip(x, lo, hi)

    return _apply("clamp_", a, update)


def masked_fill_(a: Tensor, mask: Tensor | Array, value: Tensor | float) -> Tensor:
    """Set the elements where the bool ``mask`` is true to ``value`` (a number or a 0-d tensor).

    The mask broadcasts to the tensor's shape; unlike PyTorch, a float value for an integer tensor
    is an error, not truncated."""
    m, fill = mask_and_value("masked_fill_", a, mask, value, in_place=True)
    if isinstance(fill, Tensor):  # a value that requires grad, while gradients are recorded
        raise RuntimeError(
            "masked_fill_: a value that requires grad cannot be written in place while gradients are "
            "recorded; use masked_fill, or wrap the change in tinytensor.no_grad()"
        )
    xp = backend_of(a._data).xp

    def update(x: Array) -> None:
        x[...] = xp.where(m, fill, x)

    return _apply("masked_fill_", a, update)
