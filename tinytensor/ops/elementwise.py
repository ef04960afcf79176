"""Elementwise functions and their derivatives."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import TypeAlias

from ..activation_math import ACTIVATIONS, Activation
from ..array_types import Array, Namespace, TensorLike
from ..autograd import GRAD_ENABLED
from ..backend import Backend
from ..devices import backend_of
from ..dtypes import DEFAULT_FLOAT, numpy_dtype
from ..tensor import Tensor, plain_array, tensor_arg, wrap
from .arith import Backward, Operand, _make_binary, combine_error, operand, promote, unbroadcast

# a unary op's forward ``fwd(xp, x)`` and backward ``bwd(xp, g, x, out)``, the input's gradient
UnaryForward: TypeAlias = Callable[[Namespace, Array], Array]
UnaryBackward: TypeAlias = Callable[[Namespace, Array, Array, Array], Array]


def _unary_backward(g: Array, bwd: UnaryBackward, xp: Namespace, x: Array, out: Array) -> tuple[Array]:
    return (bwd(xp, g, x, out),)


def unary(a: Tensor, fwd: UnaryForward, bwd: UnaryBackward) -> Tensor:
    """``fwd(xp, x)``; ``bwd(xp, g, x, out)`` is the input gradient."""
    x = a._data
    xp = backend_of(x).xp
    out = fwd(xp, x)
    if a.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (_unary_backward, (a,), bwd, xp, x, out))
    return wrap(out)


def floating_unary(a: Tensor, fwd: UnaryForward, bwd: UnaryBackward) -> Tensor:
    """``unary`` for a function with a fractional result: integer and bool tensors are computed in
    the default float, as in PyTorch (they carry no gradient)."""
    x = a._data
    backend = backend_of(x)
    if backend.is_float(x):
        return unary(a, fwd, bwd)
    return wrap(fwd(backend.xp, backend.astype(x, DEFAULT_FLOAT)))


def exp(a: Tensor) -> Tensor:
    """``e ** x`` of each element."""
    return floating_unary(a, lambda xp, x: xp.exp(x), lambda xp, g, x, out: g * out)


def log(a: Tensor) -> Tensor:
    """The natural logarithm of each element."""
    return floating_unary(a, lambda xp, x: xp.log(x), lambda xp, g, x, out: g / x)


def sqrt(a: Tensor) -> Tensor:
    """The square root of each element."""
    return floating_unary(a, lambda xp, x: xp.sqrt(x), lambda xp, g, x, out: g / (2 * out))


def abs(a: Tensor) -> Tensor:  # noqa: A001 - mirrors the builtin
    """The absolute value of each element (gradient ``sign(x)``: 0 at 0, as PyTorch)."""
    if numpy_dtype(a.dtype).kind == "b":
        raise TypeError("abs(): not defined for bool tensors (as in PyTorch); convert with .int() or .float()")
    return unary(a, lambda xp, x: xp.abs(x), lambda xp, g, x, out: g * xp.sign(x))


def _activation_op(name: str, act: Activation) -> Callable[[Tensor], Tensor]:
    forward, grad = act.forward, act.grad

    def backward(g: Array, backend: Backend, x: Array, out: Array) -> tuple[Array]:
        return (grad(backend, g, x, out),)

    def op(a: Tensor) -> Tensor:
        x = a._data
        backend = backend_of(x)
        out = forward(backend, x, False)
        if a.requires_grad and GRAD_ENABLED[0]:
            return wrap(out, (backward, (a,), backend, x, out))
        return wrap(out)

    op.__name__ = op.__qualname__ = name
    backward.__qualname__ = f"{name}_backward"  # error messages name the op by it (autograd.op_name)
    op.__doc__ = act.doc
    return op


# relu, gelu, sigmoid, tanh, ...: one op per entry of activation_math.ACTIVATIONS
ACTIVATION_OPS = {name: _activation_op(name, act) for name, act in ACTIVATIONS.items()}


def _extremum_bwd(pick_x_op: Callable[[Array, Array], Array]) -> Backward:
    # PyTorch's rule: the gradient goes to the chosen operand, split in half on ties.
    def bwd(
        g: Array, x: Array, y: Array, out: Array, nx: bool = True, ny: bool = True
    ) -> tuple[Array | None, Array | None]:
        xp = backend_of(g).xp
        half = g * 0.5
        tie = x == y
        gx = xp.where(tie, half, xp.where(pick_x_op(x, y), g, 0)) if nx else None
        gy = xp.where(tie, half, xp.where(pick_x_op(x, y), 0, g)) if ny else None
        return gx, gy

    return bwd


_maximum = _make_binary("maximum", lambda x, y: backend_of(x).xp.maximum(x, y), _extremum_bwd(lambda x, y: x > y))
_minimum = _make_binary("minimum", lambda x, y: backend_of(x).xp.minimum(x, y), _extremum_bwd(lambda x, y: x < y))


def maximum(a: TensorLike, b: Operand) -> Tensor:
    """The elementwise larger of ``a`` and ``b`` (tensors, arrays or numbers; one must be a tensor)."""
    a = _as_tensor(a, b, "maximum")
    return _maximum(a, operand(b, a, "maximum"))


def minimum(a: TensorLike, b: Operand) -> Tensor:
    """The elementwise smaller of ``a`` and ``b`` (tensors, arrays or numbers; one must be a tensor)."""
    a = _as_tensor(a, b, "minimum")
    return _minimum(a, operand(b, a, "minimum"))


def clip(a: Tensor, min: float | None = None, max: float | None = None) -> Tensor:  # noqa: A002 - PyTorch's argument names
    """Clamp to [min, max]; the gradient passes where min <= x <= max (inclusive, as PyTorch).

    ``min`` and ``max`` are numbers (PyTorch also takes tensors); either may be None, not both.

    Raises
    ------
    ValueError
        Neither ``min`` nor ``max`` is given.
    """
    if min is None and max is None:
        raise ValueError("clip needs min, max or both")

    def fwd(xp: Namespace, x: Array) -> Array:
        return xp.clip(x, min, max)

    def bwd(xp: Namespace, g: Array, x: Array, out: Array) -> Array:
        inside = None
        if min is not None:
            inside = x >= min
        if max is not None:
            upper = x <= max
            inside = upper if inside is None else xp.logical_and(inside, upper)
        return backend_of(g).masked(g, inside)

    return unary(a, fwd, bwd)


def where(condition: Tensor | Array, a: TensorLike, b: TensorLike) -> Tensor:
    """``a`` where ``condition`` holds, else ``b``; either may be a Python scalar.

    Parameters
    ----------
    condition : Tensor
        A bool tensor (or array), broadcast with ``a`` and ``b``.
    a, b : Tensor or number
        The values; at least one must be a tensor unless ``a`` converts to one. Their dtypes
        promote as in PyTorch. Each tensor operand receives the gradient where it was picked.

    Raises
    ------
    TypeError
        ``condition`` is not a tensor or array.
    ShapeError
        The three do not broadcast together.
    """
    cond = condition._data if isinstance(condition, Tensor) else plain_array(condition)
    if not hasattr(cond, "shape"):
        raise TypeError(f"where(): argument 'condition' must be a bool Tensor, got {type(condition).__name__}")
    ref = a if isinstance(a, Tensor) else b
    if not isinstance(ref, Tensor):
        a = ref = tensor_arg(a, "where", "input")
    a = operand(a, ref, "where", "input")
    b = operand(b, ref, "where", "other")
    xa: Array | float = a._data if isinstance(a, Tensor) else a
    xb: Array | float = b._data if isinstance(b, Tensor) else b
    xp = backend_of(ref._data).xp
    for arr in (cond, xa, xb):
        if hasattr(arr, "shape") and type(arr) is not type(ref._data):
            raise combine_error("where", arr, ref._data)
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a._data.dtype is not b._data.dtype:
        xa, xb = promote("where", a._data, b._data)
    try:
        out = xp.where(cond, xa, xb)
    except ValueError:
        arrays = [arr for arr in (cond, xa, xb) if hasattr(arr, "shape")]
        raise combine_error("where", arrays[0], arrays[-1]) from None
    parents = tuple(t for t in (a, b) if isinstance(t, Tensor))
    if any(t.requires_grad for t in parents) and GRAD_ENABLED[0]:

        def backward(g: Array) -> tuple[Array | None, ...]:
            grads: list[Array | None] = []  # one gradient array (or None) per tensor operand
            for t, pick in ((a, True), (b, False)):
                if not isinstance(t, Tensor):
                    continue
                if not t.requires_grad:
                    grads.append(None)
                    continue
                masked = xp.where(cond, g, 0) if pick else xp.where(cond, 0, g)
                grads.append(unbroadcast(masked, t._data.shape))
            return tuple(grads)

        return wrap(out, (backward, parents))
    return wrap(out)


def _as_tensor(a: TensorLike, other: object, fn: str) -> Tensor:
    if isinstance(a, Tensor):
        return a
    if isinstance(other, Tensor):
        result = operand(a, other, fn, "input")
        if isinstance(result, Tensor):
            return result
        return wrap(backend_of(other._data).full((), result, other._data.dtype, other._data))
    return tensor_arg(a, fn, "input")


def leaky_relu(a: Tensor, negative_slope: object = 0.01, *, alpha: object = None) -> Tensor:
    """``x`` where ``x > 0``, else ``negative_slope * x`` (PyTorch's ``leaky_relu``; also the
    method ``x.leaky_relu()``, as in 1.x, whose name for ``negative_slope`` was ``alpha``).

    The gradient at exactly 0 is ``negative_slope``, as in PyTorch.
    """
    if alpha is not None:
        if negative_slope != 0.01:
            raise TypeError("leaky_relu: pass negative_slope or alpha (1.x's name for it), not both")
        negative_slope = alpha
    if isinstance(negative_slope, bool) or not isinstance(negative_slope, numbers.Real):
        raise TypeError(f"leaky_relu: negative_slope must be a real number, got {type(negative_slope).__name__}")
    slope = float(negative_slope)

    def fwd(xp: Namespace, x: Array) -> Array:
        return xp.where(x > 0, x, x * slope)

    def bwd(xp: Namespace, g: Array, x: Array, out: Array) -> Array:
        return xp.where(x > 0, g, g * slope)

    return unary(a, fwd, bwd)
