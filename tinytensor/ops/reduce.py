"""Reductions over axes: sum mean max min amax amin var std logsumexp argmax argmin all any.

Every reduction takes PyTorch's ``dim``/``keepdim`` or numpy's ``axis``/``keepdims``. ``max`` and
``min`` follow PyTorch: with ``dim`` they return ``(values, indices)``; with ``axis`` (numpy's
spelling) or no axis they return the values only; given a tensor they are ``maximum``/``minimum``.
"""

from __future__ import annotations

import builtins  # this module defines sum/max/min
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..argcheck import dim_arg, keepdim_arg
from ..autograd import GRAD_ENABLED, saves_nothing
from ..devices import backend_of
from ..errors import ShapeError
from ..tensor import Tensor, wrap
from .elementwise import maximum, minimum, sqrt


class ValuesIndices(NamedTuple):
    """What ``max(dim)``, ``min(dim)``, ``sort`` and ``topk`` return, as PyTorch's ``torch.return_types``."""

    values: Tensor
    indices: Tensor


def normalize_axes(axis, ndim: int) -> tuple:
    """``axis`` (None, int or a sequence of ints) as a sorted tuple of non-negative axes, checked."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        axes = (axis,)
    elif isinstance(axis, (tuple, list)) and builtins.all(
        isinstance(ax, (int, np.integer)) and not isinstance(ax, bool) for ax in axis
    ):
        axes = tuple(axis)
    else:
        raise TypeError(f"an axis (dim) must be an int or a tuple of ints, got {axis!r}")
    out = []
    for ax in axes:
        if not -ndim <= ax < builtins.max(ndim, 1):
            raise ShapeError(f"axis {ax} is out of range for a tensor with {ndim} axes")
        out.append(int(ax) % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ShapeError(f"repeated axis in {axis!r}")
    return tuple(sorted(out))


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _count(shape, axes) -> int:
    n = 1
    for ax in axes:
        n *= shape[ax]
    return n


def _reduce(a: Tensor, axis, keepdims, fwd, bwd):
    """``fwd(xp, x, axes)`` with keepdims=True; ``bwd(backend, g_kept, x, out_kept, axes)``."""
    x = a._data
    backend = backend_of(x)
    xp = backend.xp
    axes = normalize_axes(axis, x.ndim)
    out_kept = fwd(xp, x, axes)
    out = out_kept if keepdims else xp.reshape(out_kept, tuple(n for i, n in enumerate(x.shape) if i not in axes))
    if a.requires_grad and GRAD_ENABLED[0]:
        # the (fn, parents, saved) form: autograd sees the rule ``bwd`` (names, in-place checks)
        return wrap(out, (_reduce_backward, (a,), bwd, backend, x, out_kept, axes))
    return wrap(out)


def _reduce_backward(g, bwd, backend, x, out_kept, axes):
    return (bwd(backend, backend.xp.reshape(g, _kept_shape(x.shape, axes)), x, out_kept, axes),)


def _sum_fwd(xp, x, axes):
    return xp.sum(x, axis=axes, keepdims=True)


@saves_nothing
def _sum_bwd(bk, g, x, out, axes):
    return bk.copy(bk.xp.broadcast_to(g, x.shape))


def sum(a, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    """The sum over the axes (all by default)."""
    return _reduce(a, dim_arg("sum", dim, axis), keepdim_arg("sum", keepdim, keepdims), _sum_fwd, _sum_bwd)


def _mean_fwd(xp, x, axes):
    return xp.mean(x, axis=axes, keepdims=True)


@saves_nothing
def _mean_bwd(bk, g, x, out, axes):
    return bk.copy(bk.xp.broadcast_to(g / _count(x.shape, axes), x.shape))


def mean(a, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """The mean over the axes (all by default); floating-point tensors only."""
    if not backend_of(a._data).is_float(a._data):
        raise TypeError(f"mean() needs a floating-point tensor, got dtype {a.dtype}; convert with .float()")
    return _reduce(a, dim_arg("mean", dim, axis), keepdim_arg("mean", keepdim, keepdims), _mean_fwd, _mean_bwd)


def _extremum(name):
    def fwd(xp, x, axes):
        if x.size == 0:
            raise ShapeError(f"{name}() of an empty tensor of shape {tuple(x.shape)}")
        return getattr(xp, name)(x, axis=axes, keepdims=True)

    def bwd(bk, g, x, out, axes):
        # Ties share the gradient evenly (PyTorch's amax/amin rule).
        xp = bk.xp
        mask = xp.astype(x == out, g.dtype)
        return mask * (g / xp.sum(mask, axis=axes, keepdims=True))

    return fwd, bwd


_MAX = _extremum("max")
_MIN = _extremum("min")


def amax(a, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """The largest values over the axes (ties share the gradient)."""
    return _reduce(a, dim_arg("amax", dim, axis), keepdim_arg("amax", keepdim, keepdims), *_MAX)


def amin(a, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """The smallest values over the axes (ties share the gradient)."""
    return _reduce(a, dim_arg("amin", dim, axis), keepdim_arg("amin", keepdim, keepdims), *_MIN)


def _with_indices(name, a: Tensor, dim, keepdim) -> ValuesIndices:
    """PyTorch's ``max(dim)``/``min(dim)``: values and the index of the first extremum; the gradient
    goes to that index only."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{name}(): dim must be an int, got {dim!r} (amax/amin reduce several axes)")
    x = a._data
    backend = backend_of(x)
    xp = backend.xp
    ax = normalize_axes(dim, x.ndim)[0] if x.ndim else None
    if x.size == 0:
        raise ShapeError(f"{name}() of an empty tensor of shape {tuple(x.shape)}")
    if ax is None:  # a 0-d tensor: itself, index 0
        idx_kept = backend.zeros((), np.int64, x)
        values_kept = x
    else:
        pick = xp.argmax if name == "max" else xp.argmin
        idx_kept = xp.astype(pick(x, axis=ax, keepdims=True), backend.xp.int64)
        values_kept = xp.take_along_axis(x, idx_kept, axis=ax)
    squeeze = (lambda arr: arr) if keepdim or ax is None else (lambda arr: xp.squeeze(arr, axis=ax))
    values, indices = squeeze(values_kept), squeeze(idx_kept)
    if a.requires_grad and GRAD_ENABLED[0]:
        shape = x.shape

        def backward(g):
            g = xp.reshape(g, values_kept.shape)
            if ax is None:
                return (g,)
            positions = xp.reshape(backend.arange(shape[ax], x), tuple(-1 if i == ax else 1 for i in range(len(shape))))
            return (backend.masked(xp.broadcast_to(g, shape), positions == idx_kept),)

        return ValuesIndices(wrap(values, (backward, (a,))), wrap(indices))
    return ValuesIndices(wrap(values), wrap(indices))


def _max_or_min(name, elementwise, a, dim, keepdim, axis, keepdims):
    if dim is not None and (isinstance(dim, Tensor) or hasattr(dim, "shape")):
        return elementwise(a, dim)  # torch.max(a, b): the elementwise maximum
    keep = keepdim_arg(name, keepdim, keepdims)
    if dim is not None:
        if axis is not None:
            dim_arg(name, dim, axis)  # raises: both spellings
        return _with_indices(name, a, dim, keep)
    return _reduce(a, axis, keep, *(_MAX if name == "max" else _MIN))


def max(a, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    """No axis: the largest value. ``dim``: ``(values, indices)``. ``axis``: values. A tensor: maximum."""
    return _max_or_min("max", maximum, a, dim, keepdim, axis, keepdims)


def min(a, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    """No axis: the smallest value. ``dim``: ``(values, indices)``. ``axis``: values. A tensor: minimum."""
    return _max_or_min("min", minimum, a, dim, keepdim, axis, keepdims)


def var(a, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """Variance with ``correction`` subtracted from the count (default 1, as PyTorch; ``unbiased=False``
    is correction 0)."""
    if unbiased is not None and correction is not None:
        raise TypeError("var(): pass unbiased or correction, not both")
    if correction is None:
        correction = 0 if unbiased is False else 1

    def fwd(xp, x, axes):
        n = _count(x.shape, axes)
        if n - correction <= 0:
            raise ShapeError(f"var over {n} element(s) with correction={correction} is undefined")
        # numpy's own two passes, spelled so that every backend takes it (CuPy's var has no correction=)
        centered = x - xp.mean(x, axis=axes, keepdims=True)
        return xp.sum(centered * centered, axis=axes, keepdims=True) / (n - correction)

    def bwd(bk, g, x, out, axes):
        xp = bk.xp
        n = _count(x.shape, axes)
        centered = x - xp.mean(x, axis=axes, keepdims=True)
        return g * centered * (2.0 / (n - correction))

    return _reduce(a, dim_arg("var", dim, axis), keepdim_arg("var", keepdim, keepdims), fwd, bwd)


def std(a, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """Standard deviation: the square root of ``var`` (same arguments)."""
    return sqrt(var(a, dim, unbiased, keepdim, correction=correction, axis=axis, keepdims=keepdims))


def logsumexp_array(xp, x, axes):
    """log(sum(exp(x))) over ``axes`` with keepdims, stable for large inputs."""
    m = xp.max(x, axis=axes, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)  # all -inf rows: avoid inf - inf
    return xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m


def logsumexp(a, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """``log(sum(exp(a)))`` over the axes, computed without overflow."""

    def bwd(bk, g, x, out, axes):
        return g * bk.xp.exp(x - out)

    return _reduce(
        a, dim_arg("logsumexp", dim, axis), keepdim_arg("logsumexp", keepdim, keepdims), logsumexp_array, bwd
    )


def _index_of(name, a: Tensor, dim, keepdim, axis, keepdims) -> Tensor:
    x = a._data
    backend = backend_of(x)
    xp = backend.xp
    dim = dim_arg(name, dim, axis)
    keep = keepdim_arg(name, keepdim, keepdims)
    if x.size == 0:
        raise ShapeError(f"{name}() of an empty tensor of shape {tuple(x.shape)}")
    pick = xp.argmax if name == "argmax" else xp.argmin
    if dim is None:  # the index into the flattened tensor, as PyTorch
        out = pick(xp.reshape(x, (-1,)))
        if keep:
            out = xp.reshape(out, (1,) * x.ndim)
    else:
        out = pick(x, axis=normalize_axes(dim, x.ndim)[0] if x.ndim else None, keepdims=keep)
    return wrap(xp.astype(out, xp.int64))


def argmax(a, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    """Index (int64) of the first largest value along ``dim``, or in the flattened tensor."""
    return _index_of("argmax", a, dim, keepdim, axis, keepdims)


def argmin(a, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
    """Index (int64) of the first smallest value along ``dim``, or in the flattened tensor."""
    return _index_of("argmin", a, dim, keepdim, axis, keepdims)


def _logical(name):
    def reduce_(a, dim=None, keepdim=False, *, axis=None, keepdims=None) -> Tensor:
        x = a._data
        xp = backend_of(x).xp
        axes = normalize_axes(dim_arg(name, dim, axis), x.ndim)
        out = getattr(xp, name)(x, axis=axes, keepdims=keepdim_arg(name, keepdim, keepdims))
        return wrap(out)

    reduce_.__name__ = name
    reduce_.__doc__ = f"Whether {name} elements are true (nonzero) over the axes; a bool tensor."
    return reduce_


all: Callable[..., Tensor] = _logical("all")  # noqa: A001
any: Callable[..., Tensor] = _logical("any")  # noqa: A001
