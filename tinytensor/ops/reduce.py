"""Reductions over axes: sum mean max min var logsumexp (``axis``, ``keepdims``)."""

from __future__ import annotations

import builtins  # this module defines sum/max/min

from ..autograd import GRAD_ENABLED
from ..backend import backend_of
from ..errors import ShapeError
from ..tensor import Tensor, wrap


def normalize_axes(axis, ndim: int) -> tuple:
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes, checked."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for ax in axes:
        if not -ndim <= ax < builtins.max(ndim, 1):
            raise ShapeError(f"axis {ax} is out of range for a tensor with {ndim} axes")
        out.append(ax % ndim if ndim else 0)
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
    x = a.data
    backend = backend_of(x)
    xp = backend.xp
    axes = normalize_axes(axis, x.ndim)
    out_kept = fwd(xp, x, axes)
    out = out_kept if keepdims else xp.reshape(out_kept, tuple(n for i, n in enumerate(x.shape) if i not in axes))
    if a.requires_grad and GRAD_ENABLED[0]:
        kept = _kept_shape(x.shape, axes)

        def backward(g):
            return (bwd(backend, xp.reshape(g, kept), x, out_kept, axes),)

        return wrap(out, (backward, (a,)))
    return wrap(out)


def sum(a, axis=None, keepdims=False):  # noqa: A001
    return _reduce(
        a,
        axis,
        keepdims,
        lambda xp, x, axes: xp.sum(x, axis=axes, keepdims=True),
        lambda bk, g, x, out, axes: bk.copy(bk.xp.broadcast_to(g, x.shape)),
    )


def mean(a, axis=None, keepdims=False):
    def fwd(xp, x, axes):
        return xp.mean(x, axis=axes, keepdims=True)

    def bwd(bk, g, x, out, axes):
        return bk.copy(bk.xp.broadcast_to(g / _count(x.shape, axes), x.shape))

    return _reduce(a, axis, keepdims, fwd, bwd)


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


def max(a, axis=None, keepdims=False):  # noqa: A001
    return _reduce(a, axis, keepdims, *_MAX)


def min(a, axis=None, keepdims=False):  # noqa: A001
    return _reduce(a, axis, keepdims, *_MIN)


def var(a, axis=None, keepdims=False, correction=1):
    """Variance with ``correction`` subtracted from the count (1: unbiased, as PyTorch's default)."""

    def fwd(xp, x, axes):
        n = _count(x.shape, axes)
        if n - correction <= 0:
            raise ShapeError(f"var over {n} element(s) with correction={correction} is undefined")
        return xp.var(x, axis=axes, keepdims=True, correction=correction)

    def bwd(bk, g, x, out, axes):
        xp = bk.xp
        n = _count(x.shape, axes)
        centered = x - xp.mean(x, axis=axes, keepdims=True)
        return g * centered * (2.0 / (n - correction))

    return _reduce(a, axis, keepdims, fwd, bwd)


def logsumexp_array(xp, x, axes):
    """log(sum(exp(x))) over ``axes`` with keepdims, stable for large inputs."""
    m = xp.max(x, axis=axes, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)  # all -inf rows: avoid inf - inf
    return xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m


def logsumexp(a, axis=None, keepdims=False):
    def bwd(bk, g, x, out, axes):
        return g * bk.xp.exp(x - out)

    return _reduce(a, axis, keepdims, logsumexp_array, bwd)
