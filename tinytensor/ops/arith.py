"""Arithmetic operators and matmul, with broadcasting-aware gradients.

These are the hottest functions in the library (every ``a + b`` goes through ``binary``), so
they avoid allocations and attribute lookups that the common path does not need.
"""

from __future__ import annotations

import math

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


def binary(a: Tensor, b, op: str, fwd, bwd):
    """Apply ``fwd(x, y)``; ``bwd(g, x, y, out)`` returns (gx, gy) before unbroadcasting."""
    if type(b) is not Tensor:
        b = coerce(b, a)
        if not isinstance(b, Tensor):  # a Python scalar
            x = a.data
            out = fwd(x, b)
            if a.requires_grad and GRAD_ENABLED[0]:
                return wrap(out, (lambda g: (bwd(g, x, b, out, True, False)[0],), (a,)))
            return wrap(out)
    x, y = a.data, b.data
    if type(x) is not type(y):
        raise combine_error(op, x, y)
    try:
        out = fwd(x, y)
    except ValueError:
        raise combine_error(op, x, y) from None
    if (a.requires_grad or b.requires_grad) and GRAD_ENABLED[0]:
        sx, sy = x.shape, y.shape
        need_x, need_y = a.requires_grad, b.requires_grad

        def backward(g):
            gx, gy = bwd(g, x, y, out, need_x, need_y)
            return (
                unbroadcast(gx, sx) if need_x else None,
                unbroadcast(gy, sy) if need_y else None,
            )

        return wrap(out, (backward, (a, b)))
    return wrap(out)


def rbinary(a: Tensor, b, op: str, fwd, bwd):
    """``b <op> a`` for a non-tensor ``b`` on the left."""
    b = coerce(b, a)
    if isinstance(b, Tensor):
        return binary(b, a, op, fwd, bwd)
    x = a.data
    out = fwd(b, x)
    if a.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (lambda g: (bwd(g, b, x, out, False, True)[1],), (a,)))
    return wrap(out)


# Each backward gets (g, x, y, out, need_x=True, need_y=True) and returns (gx, gy).
def _add_fwd(x, y):
    return x + y


def _add_bwd(g, x, y, out, nx=True, ny=True):
    return g, g


def _sub_fwd(x, y):
    return x - y


def _sub_bwd(g, x, y, out, nx=True, ny=True):
    return g, (-g if ny else None)


def _mul_fwd(x, y):
    return x * y


def _mul_bwd(g, x, y, out, nx=True, ny=True):
    return (g * y if nx else None), (g * x if ny else None)


def _div_fwd(x, y):
    return x / y


def _div_bwd(g, x, y, out, nx=True, ny=True):
    gx = g / y if nx else None
    gy = -g * out / y if ny else None
    return gx, gy


def _pow_fwd(x, y):
    return x**y


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


def add(a, b):
    return binary(a, b, "add", _add_fwd, _add_bwd)


def radd(a, b):
    return rbinary(a, b, "add", _add_fwd, _add_bwd)


def sub(a, b):
    return binary(a, b, "sub", _sub_fwd, _sub_bwd)


def rsub(a, b):
    return rbinary(a, b, "sub", _sub_fwd, _sub_bwd)


def mul(a, b):
    return binary(a, b, "mul", _mul_fwd, _mul_bwd)


def rmul(a, b):
    return rbinary(a, b, "mul", _mul_fwd, _mul_bwd)


def div(a, b):
    return binary(a, b, "div", _div_fwd, _div_bwd)


def rdiv(a, b):
    return rbinary(a, b, "div", _div_fwd, _div_bwd)


def pow(a, b):  # noqa: A001 - the operator's name
    return binary(a, b, "pow", _pow_fwd, _pow_bwd)


def rpow(a, b):
    return rbinary(a, b, "pow", _pow_fwd, _pow_bwd)


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
        need_x, need_y = a.requires_grad, b.requires_grad

        def backward(g):
            return matmul_backward(g, x, y, need_x, need_y)

        return wrap(out, (backward, (a, b)))
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
