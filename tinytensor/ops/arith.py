"""Arithmetic operators and matmul, with broadcasting-aware gradients.

These are the hottest functions in the library (every ``a + b`` goes through ``binary``), so
they avoid allocations and attribute lookups that the common path does not need.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..autograd import GRAD_ENABLED
from ..backend import backend_of
from ..errors import DeviceError, ShapeError
from ..tensor import Tensor, wrap

_ndarray = np.ndarray
_SCALARS = (int, float, bool)


def unbroadcast(g, shape):
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


def combine_error(op: str, a, b) -> Exception:
    """The error for two arrays an op could not combine: different devices, else shapes."""
    ba, bb = backend_of(a), backend_of(b)
    da, db = ba.device(a), bb.device(b)
    if da != db:
        return DeviceError(f"{op}: tensors are on different devices ({da} and {db}); move one with .to()")
    return ShapeError(f"{op}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be broadcast together")


def coerce(value, like: Tensor):
    """A Python scalar stays a scalar (no upcast); arrays and numpy scalars become tensors."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.generic):
        return value.item()  # a float64 numpy scalar must not upcast a float32 tensor
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return wrap(value)
    return wrap(backend_of(like.data).asarray(value, like.data.dtype, like.data))


def _scalar_operand(a: Tensor, b, fwd, bwd, apply):
    """``a <op> b`` where ``b`` is not a Tensor: a Python scalar stays a scalar, arrays are wrapped."""
    b = coerce(b, a)
    if isinstance(b, Tensor):
        return apply(a, b)
    x = a.data
    out = fwd(x, b)
    if a.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (lambda g: (bwd(g, x, b, out, True, False)[0],), (a,)))
    return wrap(out)


def _binary_backward(g, bwd, x, y, out, need_x, need_y):
    gx, gy = bwd(g, x, y, out, need_x, need_y)
    return (unbroadcast(gx, x.shape) if need_x else None, unbroadcast(gy, y.shape) if need_y else None)


def _make_binary(op: str, fwd, bwd):
    """The operator function for ``op``: ``fwd(x, y)`` forward, ``bwd(g, x, y, out, need_x, need_y)``
    gradients before unbroadcasting. Everything the common case needs is local and no closure is
    made (see autograd's ctx forms): this is the per-op overhead every elementwise expression pays.
    """

    def apply(a, b):
        if type(b) is not Tensor:
            return _scalar_operand(a, b, fwd, bwd, apply)
        x = a.data
        y = b.data
        if type(x) is not type(y):
            raise combine_error(op, x, y)
        try:
            out = fwd(x, y)
        except ValueError:
            raise combine_error(op, x, y) from None
        need_x = a.requires_grad
        need_y = b.requires_grad
        if (need_x or need_y) and GRAD_ENABLED[0]:
            ctx = (_binary_backward, (a, b), (bwd, x, y, out, need_x, need_y))
        else:
            ctx = None
        if type(out) is not _ndarray and isinstance(out, np.generic):
            out = np.asarray(out)
        t = _new(Tensor)
        t.data = out
        t.grad = None
        t._retain_grad = False
        t._ctx = ctx
        t.requires_grad = ctx is not None
        return t

    apply.__name__ = op
    return apply


def _make_reflected(op: str, fwd, bwd):
    """``b <op> a`` for a non-tensor ``b`` on the left."""

    def apply(a, b):
        b = coerce(b, a)
        if isinstance(b, Tensor):
            return _BINARY[op](b, a)
        x = a.data
        out = fwd(b, x)
        if a.requires_grad and GRAD_ENABLED[0]:
            return wrap(out, (lambda g: (bwd(g, b, x, out, False, True)[1],), (a,)))
        return wrap(out)

    apply.__name__ = "r" + op
    return apply


# Each backward gets (g, x, y, out, need_x, need_y) and returns (gx, gy).
def _add_bwd(g, x, y, out, nx=True, ny=True):
    return g, g


def _sub_bwd(g, x, y, out, nx=True, ny=True):
    return g, (-g if ny else None)


def _mul_bwd(g, x, y, out, nx=True, ny=True):
    return (g * y if nx else None), (g * x if ny else None)


def _div_bwd(g, x, y, out, nx=True, ny=True):
    gx = g / y if nx else None
    gy = -g * out / y if ny else None
    return gx, gy


def _pow_bwd(g, x, y, out, nx=True, ny=True):
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


_new = object.__new__
add = _make_binary("add", operator.add, _add_bwd)
sub = _make_binary("sub", operator.sub, _sub_bwd)
mul = _make_binary("mul", operator.mul, _mul_bwd)
div = _make_binary("div", operator.truediv, _div_bwd)
pow = _make_binary("pow", operator.pow, _pow_bwd)  # noqa: A001 - the operator's name
_BINARY = {"add": add, "sub": sub, "mul": mul, "div": div, "pow": pow}
radd = _make_reflected("add", operator.add, _add_bwd)
rsub = _make_reflected("sub", operator.sub, _sub_bwd)
rmul = _make_reflected("mul", operator.mul, _mul_bwd)
rdiv = _make_reflected("div", operator.truediv, _div_bwd)
rpow = _make_reflected("pow", operator.pow, _pow_bwd)


def neg(a: Tensor) -> Tensor:
    out = -a.data
    if a.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (lambda g: (-g,), (a,)))
    return wrap(out)


def _compare(fwd):
    def op(a, b):
        b = coerce(b, a)
        y = b.data if isinstance(b, Tensor) else b
        return wrap(fwd(a.data, y))

    return op


eq = _compare(lambda x, y: x == y)
ne = _compare(lambda x, y: x != y)
lt = _compare(lambda x, y: x < y)
le = _compare(lambda x, y: x <= y)
gt = _compare(lambda x, y: x > y)
ge = _compare(lambda x, y: x >= y)


# ---------------------------------------------------------------------------- matmul
def matmul_arrays(x, y):
    """``x @ y`` on arrays; GPU arrays go through the extension's cuBLAS when it is built."""
    if type(x) is not _ndarray and backend_of(x).kind == "cuda":
        from ..backends import cuda_ext

        out = cuda_ext.try_matmul(x, y)
        if out is not None:
            return out
        try:
            return x @ y
        except ImportError as exc:  # CuPy's cuBLAS is not installed (the cu12 wheel brings its own, for floats)
            raise TypeError(
                f"matmul of {x.dtype} and {y.dtype} on the GPU needs CuPy's own cuBLAS, which is not installed "
                f"({exc}); use float32/float64, which run on the extension's cuBLAS, or pip install nvidia-cublas-cu12"
            ) from None
    return x @ y


def _matmul_shape_error(a, b) -> Exception:
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


def matmul(a: Tensor, b) -> Tensor:
    b = coerce(b, a)
    if not isinstance(b, Tensor):
        raise TypeError("matmul needs two tensors, not a scalar")
    x, y = a.data, b.data
    if type(x) is not type(y):
        raise combine_error("matmul", x, y)
    if x.ndim == 0 or y.ndim == 0:
        raise _matmul_shape_error(x, y)
    try:
        out = matmul_arrays(x, y)
    except ValueError:
        if backend_of(x).device(x) != backend_of(y).device(y):
            raise combine_error("matmul", x, y) from None
        raise _matmul_shape_error(x, y) from None
    if (a.requires_grad or b.requires_grad) and GRAD_ENABLED[0]:
        return wrap(out, (matmul_backward, (a, b), (x, y, a.requires_grad, b.requires_grad)))
    return wrap(out)


def matmul_backward(g, x, y, need_x=True, need_y=True):
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


def rmatmul(a: Tensor, b) -> Tensor:
    b = coerce(b, a)
    return matmul(b, a)
