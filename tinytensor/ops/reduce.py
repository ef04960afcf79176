"""Reductions over axes: sum mean max min amax amin var std logsumexp argmax argmin all any.

Every reduction takes PyTorch's ``dim``/``keepdim`` or numpy's ``axis``/``keepdims``. ``max`` and
``min`` follow PyTorch: with ``dim`` they return ``(values, indices)``; with ``axis`` (numpy's
spelling) or no axis they return the values only; given a tensor they are ``maximum``/``minimum``.
"""

from __future__ import annotations

import builtins  # this module defines sum/max/min
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, TypeAlias, overload

import numpy as np
import numpy.typing as npt

from .. import dtypes
from ..argcheck import dim_arg, keepdim_arg
from ..array_types import Array, Namespace, Shape
from ..autograd import GRAD_ENABLED, saves_nothing
from ..backend import Backend
from ..devices import backend_of
from ..errors import ShapeError
from ..tensor import Tensor, wrap
from .elementwise import maximum, minimum, sqrt


class ValuesIndices(NamedTuple):
    """What ``max(dim)``, ``min(dim)``, ``sort`` and ``topk`` return, as PyTorch's ``torch.return_types``."""

    values: Tensor
    indices: Tensor


# a reduction's forward ``fwd(xp, x, axes)`` (keepdims=True) and its input's gradient
# ``bwd(backend, g_kept, x, out_kept, axes)``
ReduceForward: TypeAlias = Callable[[Namespace, Array, tuple[int, ...]], Array]
ReduceBackward: TypeAlias = Callable[[Backend, Array, Array, Array, tuple[int, ...]], Array]


def normalize_axes(axis: object, ndim: int) -> tuple[int, ...]:
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


def _kept_shape(shape: Shape, axes: tuple[int, ...]) -> Shape:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _count(shape: Shape, axes: Iterable[int]) -> int:
    n = 1
    for ax in axes:
        n *= shape[ax]
    return n


def _reduce(a: Tensor, axis: object, keepdims: bool, fwd: ReduceForward, bwd: ReduceBackward) -> Tensor:
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


def _reduce_backward(
    g: Array, bwd: ReduceBackward, backend: Backend, x: Array, out_kept: Array, axes: tuple[int, ...]
) -> tuple[Array]:
    return (bwd(backend, backend.xp.reshape(g, _kept_shape(x.shape, axes)), x, out_kept, axes),)


def _sum_fwd(xp: Namespace, x: Array, axes: tuple[int, ...]) -> Array:
    return xp.sum(x, axis=axes, keepdims=True)


@saves_nothing
def _sum_bwd(bk: Backend, g: Array, x: Array, out: Array, axes: tuple[int, ...]) -> Array:
    return bk.copy(bk.xp.broadcast_to(g, x.shape))


def _accumulate_as(fn: str, a: Tensor, dtype: npt.DTypeLike | None, out: None, float_only: bool) -> Tensor:
    """``a`` cast to ``dtype`` (PyTorch's ``sum(dtype=)``/``mean(dtype=)``: the cast comes first, and
    the gradient flows back through it). ``out`` is accepted as None only: numpy's ``np.sum(x)``
    and ``np.mean(x)`` pass ``dtype=None, out=None`` to the tensor's method."""
    if out is not None:
        raise TypeError(f"{fn}(): out= is not supported; use the returned tensor")
    if dtype is None:
        return a
    resolved = dtypes.resolve(dtype, f"{fn}()")
    assert resolved is not None
    if float_only and resolved.kind != "f":
        raise TypeError(f"{fn}(): dtype must be a floating-point dtype, got {resolved}")
    return a.to(resolved)


def sum(  # noqa: A001
    a: Tensor,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: npt.DTypeLike | None = None,
    axis: int | Sequence[int] | None = None,
    keepdims: bool | None = None,
    out: None = None,
) -> Tensor:
    """The sum over the axes (all by default).

    Parameters
    ----------
    dim : int or sequence of ints, optional
        The axes to reduce; all of them when None. ``axis`` is numpy's spelling (pass one).
    keepdim : bool
        Keep the reduced axes with size 1. ``keepdims`` is numpy's spelling.
    dtype : dtype, optional
        Cast the input to this dtype first (``x.sum(dtype=tt.float64)`` sums float16 values in
        float64); the gradient is cast back.

    Raises
    ------
    TypeError
        ``dim`` is not an int or a sequence of ints, both spellings are given, or ``dtype`` is
        not a supported dtype.
    ShapeError
        An axis is out of range or repeated.

    Examples
    --------
    >>> tt.Tensor([[1.0, 2.0], [3.0, 4.0]]).sum(dim=0)
    Tensor([4., 6.])
    """
    a = _accumulate_as("sum", a, dtype, out, float_only=False)
    return _reduce(a, dim_arg("sum", dim, axis), keepdim_arg("sum", keepdim, keepdims), _sum_fwd, _sum_bwd)


def _mean_fwd(xp: Namespace, x: Array, axes: tuple[int, ...]) -> Array:
    return xp.mean(x, axis=axes, keepdims=True)


@saves_nothing
def _mean_bwd(bk: Backend, g: Array, x: Array, out: Array, axes: tuple[int, ...]) -> Array:
    return bk.copy(bk.xp.broadcast_to(g / _count(x.shape, axes), x.shape))


def mean(
    a: Tensor,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: npt.DTypeLike | None = None,
    axis: int | Sequence[int] | None = None,
    keepdims: bool | None = None,
    out: None = None,
) -> Tensor:
    """The mean over the axes (all by default), as ``sum``; floating-point tensors only, or any
    tensor with a floating-point ``dtype=`` to compute in (``x.mean(dtype=tt.float64)``)."""
    a = _accumulate_as("mean", a, dtype, out, float_only=True)
    if not backend_of(a._data).is_float(a._data):
        raise TypeError(
            f"mean() needs a floating-point tensor, got dtype {a.dtype}; convert with .float() or pass dtype="
        )
    return _reduce(a, dim_arg("mean", dim, axis), keepdim_arg("mean", keepdim, keepdims), _mean_fwd, _mean_bwd)


def _extremum(name: str) -> tuple[ReduceForward, ReduceBackward]:
    def fwd(xp: Namespace, x: Array, axes: tuple[int, ...]) -> Array:
        if x.size == 0:
            raise ShapeError(f"{name}() of an empty tensor of shape {tuple(x.shape)}")
        return getattr(xp, name)(x, axis=axes, keepdims=True)

    def bwd(bk: Backend, g: Array, x: Array, out: Array, axes: tuple[int, ...]) -> Array:
        # Ties share the gradient evenly (PyTorch's amax/amin rule).
        xp = bk.xp
        mask = xp.astype(x == out, g.dtype)
        return mask * (g / xp.sum(mask, axis=axes, keepdims=True))

    return fwd, bwd


_MAX = _extremum("max")
_MIN = _extremum("min")


def amax(
    a: Tensor,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    axis: int | Sequence[int] | None = None,
    keepdims: bool | None = None,
) -> Tensor:
    """The largest values over the axes (ties share the gradient)."""
    return _reduce(a, dim_arg("amax", dim, axis), keepdim_arg("amax", keepdim, keepdims), *_MAX)


def amin(
    a: Tensor,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    axis: int | Sequence[int] | None = None,
    keepdims: bool | None = None,
) -> Tensor:
    """The smallest values over the axes (ties share the gradient)."""
    return _reduce(a, dim_arg("amin", dim, axis), keepdim_arg("amin", keepdim, keepdims), *_MIN)


def _with_indices(name: str, a: Tensor, dim: object, keepdim: bool) -> ValuesIndices:
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

    def squeeze(arr: Array) -> Array:
        return arr if keepdim or ax is None else xp.squeeze(arr, axis=ax)

    values, indices = squeeze(values_kept), squeeze(idx_kept)
    if a.requires_grad and GRAD_ENABLED[0]:
        shape = x.shape

        def backward(g: Array) -> tuple[Array]:
            g = xp.reshape(g, values_kept.shape)
            if ax is None:
                return (g,)
            positions = xp.reshape(backend.arange(shape[ax], x), tuple(-1 if i == ax else 1 for i in range(len(shape))))
            return (backend.masked(xp.broadcast_to(g, shape), positions == idx_kept),)

        return ValuesIndices(wrap(values, (backward, (a,))), wrap(indices))
    return ValuesIndices(wrap(values), wrap(indices))


def _max_or_min(
    name: str,
    elementwise: Callable[[Tensor, Tensor | Array], Tensor],
    a: Tensor,
    dim: int | Tensor | Array | None,
    keepdim: bool,
    axis: int | Sequence[int] | None,
    keepdims: bool | None,
) -> Tensor | ValuesIndices:
    if dim is not None and (isinstance(dim, Tensor) or hasattr(dim, "shape")):
        return elementwise(a, dim)  # torch.max(a, b): the elementwise maximum
    keep = keepdim_arg(name, keepdim, keepdims)
    if dim is not None:
        if axis is not None:
            dim_arg(name, dim, axis)  # raises: both spellings
        return _with_indices(name, a, dim, keep)
    return _reduce(a, axis, keep, *(_MAX if name == "max" else _MIN))


@overload
def max(  # noqa: A001
    a: Tensor,
    dim: None = None,
    keepdim: bool = False,
    *,
    axis: int | Sequence[int] | None = None,
    keepdims: bool | None = None,
) -> Tensor: ...
@overload
def max(  # noqa: A001
    a: Tensor, dim: int, keepdim: bool = False, *, axis: None = None, keepdims: bool | None = None
) -> ValuesIndices: ...
@overload
def max(  # noqa: A001
    a: Tensor, dim: Tensor | Array, keepdim: bool = False, *, axis: None = None, keepdims: None = None
) -> Tensor: ...
def max(  # noqa: A001
    a: Tensor,
    dim: int | Tensor | Array | None = None,
    keepdim: bool = False,
    *,
    axis: int | Sequence[int] | None = None,
    keepdims: bool | None = None,
) -> Tensor | ValuesIndices:
    """No axis: the largest value. ``dim``: ``(values, indices)``. ``axis``: values. A tensor: maximum.

    Parameters
    ----------
    dim : int or Tensor, optional
        An int: reduce that axis and return ``ValuesIndices(values, indices)``, the index of the
        first largest value, as ``torch.max(x, dim)``; the gradient goes to that element only.
        A tensor (or array): the elementwise ``maximum`` of the two.
    keepdim : bool
        Keep the reduced axis with size 1 (``keepdims`` is numpy's spelling).
    axis : int or sequence of ints, optional
        numpy's spelling: reduce these axes and return the values only (ties share the gradient,
        as ``amax``).

    Raises
    ------
    ShapeError
        The tensor is empty, or an axis is out of range.
    """
    return _max_or_min("max", maximum, a, dim, keepdim, axis, keepdims)


@overload
def min(  # noqa: A001
    a: Tensor,
    dim: None = None,
    keepdim: bool = False,
    *,
    axis: int | Sequence[int] | None = None,
    keepdims: bool | None = None,
) -> Tensor: ...
@overload
def min(  # noqa: A001
    a: Tensor, dim: int, keepdim: bool = False, *, axis: None = None, keepdims: bool | None = None
) -> ValuesIndices: ...
@overload
def min(  # noqa: A001
    a: Tensor, dim: Tensor | Array, keepdim: bool = False, *, axis: None = None, keepdims: None = None
) -> Tensor: ...
def min(  # noqa: A001
    a: Tensor,
    dim: int | Tensor | Array | None = None,
    keepdim: bool = False,
    *,
    axis: int | Sequence[int] | None = None,
    keepdims: bool | None = None,
) -> Tensor | ValuesIndices:
    """No axis: the smallest value. ``dim``: ``(values, indices)``. ``axis``: values. A tensor: minimum.

    The arguments are those of ``max``.
    """
    return _max_or_min("min", minimum, a, dim, keepdim, axis, keepdims)


def var(
    a: Tensor,
    dim: int | Sequence[int] | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
    axis: int | Sequence[int] | None = None,
    keepdims: bool | None = None,
) -> Tensor:
    """Variance with ``correction`` subtracted from the count (default 1, as PyTorch; ``unbiased=False``
    is correction 0).

    Parameters
    ----------
    dim : int or sequence of ints, optional
        The axes to reduce; all of them when None (``axis`` is numpy's spelling).
    unbiased : bool, optional
        PyTorch's older spelling: True is ``correction=1``, False ``correction=0``.
    keepdim : bool
        Keep the reduced axes with size 1 (``keepdims`` is numpy's spelling).
    correction : int or float, optional
        What is subtracted from the number of elements in the denominator.

    Raises
    ------
    TypeError
        Both ``unbiased`` and ``correction`` are given.
    ShapeError
        The count minus ``correction`` is not positive (PyTorch returns NaN with a warning instead).
    """
    if unbiased is not None and correction is not None:
        raise TypeError("var(): pass unbiased or correction, not both")
    if correction is None:
        correction = 0 if unbiased is False else 1

    def fwd(xp: Namespace, x: Array, axes: tuple[int, ...]) -> Array:
        n = _count(x.shape, axes)
        if n - correction <= 0:
            raise ShapeError(f"var over {n} element(s) with correction={correction} is undefined")
        # numpy's own two passes, spelled so that every backend takes it (CuPy's var has no correction=)
        centered = x - xp.mean(x, axis=axes, keepdims=True)
        return xp.sum(centered * centered, axis=axes, keepdims=True) / (n - correction)

    def bwd(bk: Backend, g: Array, x: Array, out: Array, axes: tuple[int, ...]) -> Array:
        xp = bk.xp
        n = _count(x.shape, axes)
        centered = x - xp.mean(x, axis=axes, keepdims=True)
        return g * centered * (2.0 / (n - correction))

    return _reduce(a, dim_arg("var", dim, axis), keepdim_arg("var", keepdim, keepdims), fwd, bwd)


def std(
    a: Tensor,
    dim: int | Sequence[int] | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
    axis: int | Sequence[int] | None = None,
    keepdims: bool | None = None,
) -> Tensor:
    """Standard deviation: the square root of ``var`` (same arguments)."""
    return sqrt(var(a, dim, unbiased, keepdim, correction=correction, axis=axis, keepdims=keepdims))


def logsumexp_array(xp: Namespace, x: Array, axes: tuple[int, ...]) -> Array:
    """log(sum(exp(x))) over ``axes`` with keepdims, stable for large inputs."""
    m = xp.max(x, axis=axes, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)  # all -inf rows: avoid inf - inf
    return xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m


def logsumexp(
    a: Tensor,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    axis: int | Sequence[int] | None = None,
    keepdims: bool | None = None,
) -> Tensor:
    """``log(sum(exp(a)))`` over the axes, computed without overflow."""

    def bwd(bk: Backend, g: Array, x: Array, out: Array, axes: tuple[int, ...]) -> Array:
        return g * bk.xp.exp(x - out)

    return _reduce(
        a, dim_arg("logsumexp", dim, axis), keepdim_arg("logsumexp", keepdim, keepdims), logsumexp_array, bwd
    )


def _index_of(name: str, a: Tensor, dim: int | None, keepdim: bool, axis: int | None, keepdims: bool | None) -> Tensor:
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


def argmax(
    a: Tensor, dim: int | None = None, keepdim: bool = False, *, axis: int | None = None, keepdims: bool | None = None
) -> Tensor:
    """Index (int64) of the first largest value along ``dim``, or in the flattened tensor."""
    return _index_of("argmax", a, dim, keepdim, axis, keepdims)


def argmin(
    a: Tensor, dim: int | None = None, keepdim: bool = False, *, axis: int | None = None, keepdims: bool | None = None
) -> Tensor:
    """Index (int64) of the first smallest value along ``dim``, or in the flattened tensor."""
    return _index_of("argmin", a, dim, keepdim, axis, keepdims)


def _logical(name: str) -> Callable[..., Tensor]:
    def reduce_(
        a: Tensor,
        dim: int | Sequence[int] | None = None,
        keepdim: bool = False,
        *,
        axis: int | Sequence[int] | None = None,
        keepdims: bool | None = None,
    ) -> Tensor:
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
