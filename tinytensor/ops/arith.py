"""Arithmetic operators and matmul, with broadcasting-aware gradients.

These are the hottest functions in the library (every ``a + b`` goes through ``binary``), so
they avoid allocations and attribute lookups that the common path does not need.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np

from ..array_types import Array, DType, Shape, TensorLike
from ..autograd import CLOCK, GRAD_ENABLED, saves_nothing
from ..devices import backend_of
from ..dtypes import DEFAULT_FLOAT, numpy_dtype, result_dtype
from ..errors import DeviceError, ShapeError
from ..tensor import Tensor, plain_array, tensor_arg, wrap

_ndarray = np.ndarray

# What an operator takes as its other operand: a tensor, a Python or numpy number, an array of
# numbers. Anything else makes it return NotImplemented (Python then raises its TypeError).
Operand: TypeAlias = Tensor | Array | float
# The operators made by the factories below: (tensor, other) -> tensor. Declared, since no type
# checker can infer what exec() defines.
BinaryOp: TypeAlias = Callable[[Tensor, Operand], Tensor]
# An operator's forward on arrays (or an array and a number, either side) and its backward:
# (g, x, y, out, need_x, need_y) -> (gx, gy), a gradient only where it is needed.
Forward: TypeAlias = Callable[[Array, Array], Array]
Grads: TypeAlias = tuple[Array | None, Array | None]
Backward: TypeAlias = Callable[[Array, Array, Array, Array, bool, bool], Grads]


def unbroadcast(g: Array, shape: Shape) -> Array:
    """Sum ``g`` down to ``shape``: undo numpy broadcasting (leading axes and size-1 axes)."""
    if g.shape == shape:
        return g
    xp = backend_of(g).xp
    extra = g.ndim - len(shape)
    if extra:
        g = xp.sum(g, axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if axes:
        g = xp.sum(g, axis=axes, keepdims=True)
    return g


def combine_error(op: str, a: Array, b: Array, cause: Exception | None = None) -> Exception:
    """The error for two arrays an op could not combine: different devices, else shapes, else
    ``cause`` (numpy's own complaint) prefixed with the op's name."""
    ba, bb = backend_of(a), backend_of(b)
    da, db = ba.device(a), bb.device(b)
    if da != db:
        return DeviceError(f"{op}: tensors are on different devices ({da} and {db}); move one with .to()")
    try:
        np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        return ShapeError(f"{op}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be broadcast together")
    return ValueError(f"{op}: {cause}")


def coerce(value: object, like: Tensor) -> Tensor | float | None:
    """An operand as the ops take it: a Python number stays a number (no upcast), a Tensor stays,
    arrays and numpy scalars of numbers become tensors and numbers; None for anything else (the
    operator then returns NotImplemented, so Python raises its usual TypeError)."""
    if type(value) is float or type(value) is int or type(value) is bool:
        return value
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.generic):
        # a float64 numpy scalar must not upcast a float32 tensor
        number: float = value.item()
        return number if value.dtype.kind in "biuf" else None
    if isinstance(value, (int, float)):  # a subclass (an IntEnum, ``x.size``): its plain number
        return int(value) if isinstance(value, int) else float(value)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        array = plain_array(value)
        try:
            backend_of(array)
        except TypeError:
            return None
        return wrap(array) if numpy_dtype(array.dtype).kind in "biuf" else None
    return None


def operand(value: object, like: Tensor, fn: str, name: str = "other") -> Tensor | float:
    """``coerce`` for functions (not operators): an unsupported operand is a TypeError naming it."""
    out = coerce(value, like)
    if out is None:
        raise TypeError(f"{fn}(): argument '{name}' must be a Tensor or a number, got {type(value).__name__}")
    return out


# Float dtypes as numpy and CuPy arrays carry them (array_api_strict's take the slow path).
_FLOATS = frozenset({np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)})
_PROMOTED: dict[tuple[DType, DType, bool, bool, bool], np.dtype[Any]] = {}  # (dtype, dtype, 0-d, 0-d, div) -> result


def promote(op: str, x: Array, y: Array) -> tuple[Array, Array]:
    """``x`` and ``y`` cast to their common dtype by PyTorch's rule (``dtypes.result_dtype``);
    true division of integers gives the default float, as in PyTorch."""
    key = (x.dtype, y.dtype, x.ndim == 0, y.ndim == 0, op == "div")
    target = _PROMOTED.get(key)
    if target is None:
        dx, dy = numpy_dtype(x.dtype), numpy_dtype(y.dtype)
        target = result_dtype(dx, dy, key[2], key[3])
        if op == "div" and target.kind != "f":
            target = DEFAULT_FLOAT
        _PROMOTED[key] = target
    backend = backend_of(x)
    return backend.astype(x, target), backend.astype(y, target)


def _float_for_scalar(op: str, x: Array, scalar: float) -> Array:
    """PyTorch's result dtype for an integer or bool tensor with a Python number: a float scalar,
    or true division, gives the default float (numpy would give float64)."""
    if numpy_dtype(x.dtype).kind in "biu" and (type(scalar) is float or op == "div"):
        return backend_of(x).astype(x, DEFAULT_FLOAT)
    return x


def _scalar_operand(op: str, a: Tensor, b: object, fwd: Forward, bwd: Backward, apply: BinaryOp) -> Tensor:
    """``a <op> b`` where ``b`` is not a Tensor: a Python scalar stays a scalar, arrays are wrapped."""
    b = coerce(b, a)
    if b is None:
        return NotImplemented  # type: ignore[no-any-return]  # the operator protocol (mypy exempts only dunder names)
    if isinstance(b, Tensor):
        return apply(a, b)
    x = _float_for_scalar(op, a._data, b)
    out = fwd(x, b)
    if a.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (_scalar_backward, (a,), bwd, x, b, out, True, False, 0))
    return wrap(out)


def _scalar_backward(
    g: Array, bwd: Backward, x: Array, y: Array, out: Array, need_x: bool, need_y: bool, which: int
) -> tuple[Array | None]:
    """The gradient of the one tensor operand (``which``: 0 left, 1 right) of a binary op with a number."""
    return (bwd(g, x, y, out, need_x, need_y)[which],)


def _binary_backward(
    g: Array, bwd: Backward, x: Array, y: Array, out: Array, need_x: bool, need_y: bool
) -> tuple[Array | None, Array | None]:
    gx, gy = bwd(g, x, y, out, need_x, need_y)
    return (unbroadcast(gx, x.shape) if need_x else None, unbroadcast(gy, y.shape) if need_y else None)


# The body every binary operator runs. It is generated per op (as namedtuple and dataclasses
# generate code) so that the forward expression, e.g. ``x + y``, is inline: a call through
# operator.add costs more than numpy's own add on small tensors. Everything the common case needs
# is local and no closure is made (see autograd's ctx forms).
_BINARY_SOURCE = """
def {name}(a: Tensor, b: Operand) -> Tensor:
    if type(b) is not Tensor and not isinstance(b, Tensor):
        return _scalar_operand(op, a, b, fwd, bwd, {name})
    x = a._data
    y = b._data
    if type(x) is not type(y):
        raise combine_error(op, x, y)
    if {promote_when}:
        x, y = promote(op, x, y)
    try:
        out = {expr}
    except ValueError as exc:
        raise combine_error(op, x, y, exc) from None
    if type(out) is not _ndarray and isinstance(out, _generic):
        out = _asarray(out)  # numpy returns scalars from 0-d ops; ._data stays an array
    t = _new(Tensor)
    t._data = out
    need_x = a.requires_grad
    need_y = b.requires_grad
    if (need_x or need_y) and GRAD_ENABLED[0]:
        t._ctx = (_binary_backward, (a, b), bwd, x, y, out, need_x, need_y)
        t._stamp = CLOCK[0]
        t.requires_grad = True
    else:
        t._ctx = None
        t.requires_grad = False
    return t
"""


def _make_binary(op: str, fwd: Forward, bwd: Backward, expr: str = "fwd(x, y)") -> BinaryOp:
    """The operator function for ``op``: ``expr`` (or ``fwd(x, y)``) forward, and
    ``bwd(g, x, y, out, need_x, need_y)`` the gradients before unbroadcasting."""
    # the common case (one dtype) costs one identity test; true division also needs floats
    promote_when = "x.dtype is not y.dtype"
    if op == "div":
        promote_when += " or x.dtype not in _FLOATS"
    namespace: dict[str, Any] = {
        "__name__": __name__,  # the op's __module__: where its annotations' names resolve
        "promote": promote,
        "_FLOATS": _FLOATS,
        "Tensor": Tensor,
        "_scalar_operand": _scalar_operand,
        "combine_error": combine_error,
        "_ndarray": _ndarray,
        "_generic": np.generic,
        "_asarray": np.asarray,
        "_new": object.__new__,
        "_binary_backward": _binary_backward,
        "GRAD_ENABLED": GRAD_ENABLED,
        "CLOCK": CLOCK,
        "op": op,
        "fwd": fwd,
        "bwd": bwd,
    }
    exec(_BINARY_SOURCE.format(name=op, expr=expr, promote_when=promote_when), namespace)  # noqa: S102 - our own template
    made: BinaryOp = namespace[op]
    return made


def _make_reflected(op: str, fwd: Forward, bwd: Backward) -> BinaryOp:
    """``b <op> a`` for a non-tensor ``b`` on the left."""

    def apply(a: Tensor, b: Operand) -> Tensor:
        b = coerce(b, a)
        if b is None:
            return NotImplemented  # type: ignore[no-any-return]  # the operator protocol (mypy exempts only dunder names)
        if isinstance(b, Tensor):
            return _BINARY[op](b, a)
        x = _float_for_scalar(op, a._data, b)
        out = fwd(b, x)
        if a.requires_grad and GRAD_ENABLED[0]:
            return wrap(out, (_scalar_backward, (a,), bwd, b, x, out, False, True, 1))
        return wrap(out)

    apply.__name__ = "r" + op
    return apply


# Each backward gets (g, x, y, out, need_x, need_y) and returns (gx, gy).
@saves_nothing
def _add_bwd(g: Array, x: Array, y: Array, out: Array, nx: bool = True, ny: bool = True) -> Grads:
    return g, g


@saves_nothing
def _sub_bwd(g: Array, x: Array, y: Array, out: Array, nx: bool = True, ny: bool = True) -> Grads:
    return g, (-g if ny else None)


def _mul_bwd(g: Array, x: Array, y: Array, out: Array, nx: bool = True, ny: bool = True) -> Grads:
    return (g * y if nx else None), (g * x if ny else None)


def _div_bwd(g: Array, x: Array, y: Array, out: Array, nx: bool = True, ny: bool = True) -> Grads:
    gx = g / y if nx else None
    gy = -g * out / y if ny else None
    return gx, gy


def _pow_bwd(g: Array, x: Array, y: Array, out: Array, nx: bool = True, ny: bool = True) -> Grads:
    gx = g * y * x ** (y - 1) if nx else None
    gy = None
    if ny:
        # d(x^y)/dy = x^y log x, taken as 0 where x == 0 (as PyTorch does)
        if hasattr(x, "shape"):
            xp = backend_of(out).xp
            gy = g * out * xp.log(xp.where(x > 0, x, 1))
        else:
            gy = g * out * (math.log(x) if x > 0 else 0.0)
    return gx, gy


add: BinaryOp = _make_binary("add", operator.add, _add_bwd, "x + y")
sub: BinaryOp = _make_binary("sub", operator.sub, _sub_bwd, "x - y")
mul: BinaryOp = _make_binary("mul", operator.mul, _mul_bwd, "x * y")
div: BinaryOp = _make_binary("div", operator.truediv, _div_bwd, "x / y")
pow: BinaryOp = _make_binary("pow", operator.pow, _pow_bwd, "x ** y")  # noqa: A001 - the operator's name
_BINARY = {"add": add, "sub": sub, "mul": mul, "div": div, "pow": pow}
radd: BinaryOp = _make_reflected("add", operator.add, _add_bwd)
rsub: BinaryOp = _make_reflected("sub", operator.sub, _sub_bwd)
rmul: BinaryOp = _make_reflected("mul", operator.mul, _mul_bwd)
rdiv: BinaryOp = _make_reflected("div", operator.truediv, _div_bwd)
rpow: BinaryOp = _make_reflected("pow", operator.pow, _pow_bwd)


@saves_nothing
def _neg_backward(g: Array) -> tuple[Array]:
    return (-g,)


def neg(a: Tensor) -> Tensor:
    out = -a._data
    if a.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (_neg_backward, (a,)))
    return wrap(out)


def _no_grad_binary(name: str, fwd: Forward) -> BinaryOp:
    """Comparisons and logical operators: results are bool (or int) and carry no gradient."""

    def op(a: Tensor, b: Operand) -> Tensor:
        b = coerce(b, a)
        if b is None:
            return NotImplemented  # type: ignore[no-any-return]  # the operator protocol (mypy exempts only dunder names)
        x = a._data
        y: Array | float = b
        if isinstance(b, Tensor):
            y = b._data
            if type(y) is not type(x):
                raise combine_error(name, x, y)
            if x.dtype is not y.dtype:
                x, y = promote(name, x, y)
        try:
            return wrap(fwd(x, y))
        except ValueError as exc:
            raise combine_error(name, x, y, exc) from None
        except TypeError:  # e.g. & on floats: numpy's message would name ufuncs, not the tensors
            raise TypeError(
                f"{name} is not defined for dtypes {x.dtype} and {getattr(y, 'dtype', type(y).__name__)}"
            ) from None

    op.__name__ = name
    return op


eq: BinaryOp = _no_grad_binary("eq", operator.eq)
ne: BinaryOp = _no_grad_binary("ne", operator.ne)
lt: BinaryOp = _no_grad_binary("lt", operator.lt)
le: BinaryOp = _no_grad_binary("le", operator.le)
gt: BinaryOp = _no_grad_binary("gt", operator.gt)
ge: BinaryOp = _no_grad_binary("ge", operator.ge)
floordiv: BinaryOp = _no_grad_binary("floordiv", operator.floordiv)  # no gradient, as torch.floor_divide
mod: BinaryOp = _no_grad_binary("mod", operator.mod)
and_: BinaryOp = _no_grad_binary("and", operator.and_)
or_: BinaryOp = _no_grad_binary("or", operator.or_)
xor: BinaryOp = _no_grad_binary("xor", operator.xor)


def invert(a: Tensor) -> Tensor:
    if numpy_dtype(a.dtype).kind not in "biu":
        raise TypeError(f"~ (invert) is defined for bool and integer tensors, got dtype {a.dtype}")
    return wrap(~a._data)


# ---------------------------------------------------------------------------- matmul
def matmul_arrays(x: Array, y: Array) -> Array:
    """``x @ y`` on arrays; the backend picks the path (numpy's own call needs no dispatch)."""
    if type(x) is _ndarray:
        return x @ y
    return backend_of(x).matmul(x, y)


def _matmul_shape_error(a: Array, b: Array) -> Exception:
    sa, sb = tuple(a.shape), tuple(b.shape)
    if sa == () or sb == ():
        return ShapeError(f"matmul: both operands need at least one axis, got shapes {sa} and {sb}")
    inner_a = sa[-1]
    inner_b = sb[0] if len(sb) == 1 else sb[-2]
    if inner_a != inner_b:
        return ShapeError(
            f"matmul: shapes {sa} and {sb} do not match: the last axis of the first ({inner_a}) must "
            f"equal the {'only' if len(sb) == 1 else 'second-to-last'} axis of the second ({inner_b})"
        )
    return ShapeError(f"matmul: the batch axes of shapes {sa} and {sb} cannot be broadcast together")


def matmul(input: TensorLike, other: Tensor | Array) -> Tensor:  # noqa: A002 - PyTorch's argument name
    """``input @ other`` for tensors of any rank (numpy's rules), with gradients.

    1-D operands are vectors (a 1-D by 1-D product is a 0-d dot product); leading batch axes
    broadcast.

    Raises
    ------
    TypeError
        ``other`` is not a tensor or array.
    RuntimeError
        The dtypes differ (PyTorch does not promote here either).
    ShapeError
        An operand is 0-d or the inner axes do not match.
    """
    a = tensor_arg(input, "matmul", "input")
    b = coerce(other, a)
    if not isinstance(b, Tensor):
        raise TypeError(f"matmul(): argument 'other' must be a Tensor, got {type(b).__name__}")
    return _matmul(a, b)


def check_same_dtype(op: str, *arrays_and_names: Array | str) -> None:
    """PyTorch's rule for matmul and linear: operands of one dtype, never a silent promotion.
    Arguments: the arrays, then their names (``x, w, "input", "weight"``)."""
    half = len(arrays_and_names) // 2
    arrays: tuple[Array, ...] = arrays_and_names[:half]
    names: tuple[str, ...] = arrays_and_names[half:]
    first = numpy_dtype(arrays[0].dtype)
    for array, name in zip(arrays[1:], names[1:], strict=True):
        if numpy_dtype(array.dtype) != first:
            raise RuntimeError(
                f"{op}: {names[0]} has dtype {first} but {name} has dtype {numpy_dtype(array.dtype)}; they must "
                f"match (PyTorch does not promote here either): convert one, e.g. with .float() or .to({name}.dtype)"
            )


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    x, y = a._data, b._data
    if type(x) is not type(y):
        raise combine_error("matmul", x, y)
    if x.dtype is not y.dtype:
        check_same_dtype("matmul", x, y, "input", "other")
    if x.ndim == 0 or y.ndim == 0:
        raise _matmul_shape_error(x, y)
    try:
        out = matmul_arrays(x, y)
    except ValueError:
        if backend_of(x).device(x) != backend_of(y).device(y):
            raise combine_error("matmul", x, y) from None
        raise _matmul_shape_error(x, y) from None
    if (a.requires_grad or b.requires_grad) and GRAD_ENABLED[0]:
        return wrap(out, (matmul_backward, (a, b), x, y, a.requires_grad, b.requires_grad))
    return wrap(out)


def matmul_backward(g: Array, x: Array, y: Array, need_x: bool = True, need_y: bool = True) -> Grads:
    """Gradients of ``x @ y`` for any ranks (1-D operands promoted as numpy does)."""
    if x.ndim == 1 and y.ndim == 1:  # a dot product: g is 0-d
        return (g * y if need_x else None), (g * x if need_y else None)
    xp = backend_of(g).xp
    x2 = xp.reshape(x, (1, -1)) if x.ndim == 1 else x
    y2 = xp.reshape(y, (-1, 1)) if y.ndim == 1 else y
    g2 = g
    if x.ndim == 1:
        g2 = xp.expand_dims(g2, axis=-2)
    if y.ndim == 1:
        g2 = xp.expand_dims(g2, axis=-1)
    gx = gy = None
    if need_x:
        gx = matmul_arrays(g2, xp.matrix_transpose(y2))
        gx = unbroadcast(gx, x2.shape)
        if x.ndim == 1:
            gx = xp.reshape(gx, x.shape)
    if need_y:
        gy = matmul_arrays(xp.matrix_transpose(x2), g2)
        gy = unbroadcast(gy, y2.shape)
        if y.ndim == 1:
            gy = xp.reshape(gy, y.shape)
    return gx, gy


def dunder_matmul(a: Tensor, b: Operand) -> Tensor:
    b = coerce(b, a)
    if not isinstance(b, Tensor):  # a number or an unsupported type: Python raises its TypeError
        return NotImplemented  # type: ignore[no-any-return]  # the operator protocol (mypy exempts only dunder names)
    return _matmul(a, b)


def rmatmul(a: Tensor, b: Operand) -> Tensor:
    b = coerce(b, a)
    if not isinstance(b, Tensor):
        return NotImplemented  # type: ignore[no-any-return]  # the operator protocol (mypy exempts only dunder names)
    return _matmul(b, a)


# One-line summaries (help(), docs/operations.md) of the operators above that have no docstring of
# their own: the generated ones cannot carry one in their template.
_DOCS: dict[Callable[..., Any], str] = {
    div: "``a / b`` (true division: integer tensors give the default float), broadcasting.",
    neg: "``-a``.",
    dunder_matmul: "``a @ b``: ``matmul`` as an operator.",
    rmatmul: "``b @ a`` for an array ``b`` on the left.",
    floordiv: "``a // b`` elementwise, no gradient (as ``torch.floor_divide``).",
    mod: "``a % b`` elementwise (the sign of ``b``, as Python), no gradient.",
    invert: "``~a``: logical not of a bool tensor, bitwise not of an integer one.",
}
for _op, _symbol in ((add, "+"), (sub, "-"), (mul, "*"), (pow, "**")):
    _DOCS[_op] = f"``a {_symbol} b``, broadcasting; ``b`` may be a number."
for _op, _symbol in ((radd, "+"), (rsub, "-"), (rmul, "*"), (rdiv, "/"), (rpow, "**")):
    _DOCS[_op] = f"``b {_symbol} a`` for a number or array ``b`` on the left."
for _op, _symbol in ((eq, "=="), (ne, "!="), (lt, "<"), (le, "<="), (gt, ">"), (ge, ">=")):
    _DOCS[_op] = f"``a {_symbol} b`` elementwise: a bool tensor, no gradient."
for _op, _name, _symbol in ((and_, "and", "&"), (or_, "or", "|"), (xor, "xor", "^")):
    _DOCS[_op] = f"``a {_symbol} b``: logical {_name} of bool tensors, bitwise {_name} of integer ones."
for _fn, _doc in _DOCS.items():
    if not _fn.__doc__:
        _fn.__doc__ = _doc
