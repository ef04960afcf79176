"""Cumulative sums along an axis (``cumsum``), with the gradient."""

from __future__ import annotations

import numpy as np

from ..array_types import Array, DType, Namespace
from ..autograd import GRAD_ENABLED, saves_nothing
from ..backend import Backend
from ..devices import backend_of
from ..dtypes import checked_cast, numpy_dtype, resolve
from ..tensor import Tensor, wrap
from .indexing import dim_index


def _cumulative_sum(xp: Namespace, x: Array, axis: int) -> Array:
    # the array API's name; CuPy (and numpy before 2.1) spell it cumsum
    fn = getattr(xp, "cumulative_sum", None) or xp.cumsum
    return fn(x, axis=axis)


def cumsum(a: Tensor, dim: int, *, dtype: str | DType | None = None) -> Tensor:
    """The running sum along ``dim``: element ``i`` is the sum of elements ``0 .. i``.

    Parameters
    ----------
    dim : int
        The axis to sum along (negative counts from the end).
    dtype : str or numpy dtype, optional
        Cast the input to it first. By default integer and bool tensors sum in int64 (PyTorch's
        rule) and floating-point ones in their own dtype.

    Returns
    -------
    Tensor
        Of the input's shape. The gradient is the reversed running sum of the incoming one.
    """
    x = a._data
    backend = backend_of(x)
    xp = backend.xp
    axis = dim_index("cumsum", dim, x.ndim)
    target = resolve(dtype, "cumsum()")
    if target is None:
        target = np.dtype(np.int64) if numpy_dtype(x.dtype).kind in "biu" else numpy_dtype(x.dtype)
    xs = checked_cast(x, target, backend, "cumsum()")
    out = backend.copy(xs) if x.ndim == 0 else _cumulative_sum(xp, xs, axis)
    if a.requires_grad and GRAD_ENABLED[0] and target.kind == "f":
        return wrap(out, (_cumsum_backward, (a,), backend, axis, x.dtype))
    return wrap(out)


@saves_nothing
def _cumsum_backward(g: Array, backend: Backend, axis: int, dtype: DType) -> tuple[Array]:
    xp = backend.xp
    if g.ndim:
        g = xp.flip(_cumulative_sum(xp, xp.flip(g, axis=axis), axis), axis=axis)
    return (backend.astype(g, dtype),)
