"""Sorting along an axis: ``sort``, ``argsort`` and ``topk``, with their gradients.

Every sort here is stable, so ``stable=False`` gives the same (valid) order as ``stable=True``.
NaN sorts as the largest value (last ascending, first descending), as in PyTorch. ``sort`` and
``topk`` return ``(values, indices)`` with ``.values`` and ``.indices``; the gradient goes to the
elements each value came from.
"""

from __future__ import annotations

import numbers
from typing import SupportsIndex

import numpy as np

from ..array_types import Array
from ..autograd import GRAD_ENABLED
from ..backend import Backend
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..tensor import Tensor, wrap
from .indexing import dim_index, scatter_along
from .reduce import ValuesIndices


def _ascending(backend: Backend, x: Array, axis: int) -> Array:
    if backend.kind == "cpu":
        return np.argsort(x, axis=axis, kind="stable")
    return backend.xp.argsort(x, axis=axis)  # CuPy's and array_api_strict's sorts are stable


def sort_order(backend: Backend, x: Array, axis: int, descending: bool) -> Array:
    """The int64 indices that sort ``x`` along ``axis`` (an axis of ``x``), ties in their order."""
    xp = backend.xp
    if numpy_dtype(x.dtype).kind == "b":
        x = backend.astype(x, np.int8)  # the array API sorts numbers only
    if descending:
        # the ascending order of the reversed array, reversed and counted from the end: descending
        # with ties still in their original order, and NaN first
        order = xp.flip(_ascending(backend, xp.flip(x, axis=axis), axis), axis=axis)
        order = (x.shape[axis] - 1) - order
    else:
        order = _ascending(backend, x, axis)
    return xp.astype(order, xp.int64)


def _check_flags(fn: str, **flags: object) -> None:
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{fn}(): {name} must be a bool, got {type(value).__name__}")


def _take(a: Tensor, axis: int, order: Array) -> ValuesIndices:
    """``a``'s values at ``order`` along ``axis``, and ``order``; the gradient scatters back."""
    x = a._data
    backend = backend_of(x)
    values = backend.xp.take_along_axis(x, order, axis=axis)
    if a.requires_grad and GRAD_ENABLED[0]:
        return ValuesIndices(wrap(values, (_take_backward, (a,), backend, tuple(x.shape), axis, order)), wrap(order))
    return ValuesIndices(wrap(values), wrap(order))


def _take_backward(g: Array, backend: Backend, shape: tuple[int, ...], axis: int, order: Array) -> tuple[Array]:
    return (scatter_along(backend, shape, axis, order, g),)


def _zero_dim(a: Tensor) -> ValuesIndices:
    """What sorting a 0-d tensor gives: itself and index 0."""
    x = a._data
    backend = backend_of(x)
    index = wrap(backend.zeros((), np.int64, x))
    return ValuesIndices(a.clone(), index)


def sort(a: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> ValuesIndices:
    """``(values, indices)``: the input sorted along ``dim``, and where each value came from.

    Parameters
    ----------
    dim : int, default -1
        The axis to sort along.
    descending : bool, default False
        Largest first.
    stable : bool, default False
        Accepted for PyTorch's signature: the sort is always stable (equal values keep their
        order).

    Returns
    -------
    ValuesIndices
        A named tuple ``(values, indices)``: the sorted tensor, and the int64 positions along
        ``dim`` its values came from. NaN sorts as the largest value, as in PyTorch. The gradient
        flows back to the elements each value came from.
    """
    _check_flags("sort", descending=descending, stable=stable)
    x = a._data
    axis = dim_index("sort", dim, x.ndim)
    if x.ndim == 0:
        return _zero_dim(a)
    return _take(a, axis, sort_order(backend_of(x), x, axis, bool(descending)))


def argsort(a: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    """The int64 indices that sort the input along ``dim`` (``sort(...).indices``); always stable."""
    _check_flags("argsort", descending=descending, stable=stable)
    x = a._data
    axis = dim_index("argsort", dim, x.ndim)
    backend = backend_of(x)
    if x.ndim == 0:
        return wrap(backend.zeros((), np.int64, x))
    return wrap(sort_order(backend, x, axis, bool(descending)))


def topk(
    a: Tensor,
    k: SupportsIndex,  # an int (checked below: numbers.Integral, not bool)
    dim: int = -1,
    largest: bool = True,
    sorted: bool = True,  # noqa: A002 - PyTorch's argument name
) -> ValuesIndices:
    """``(values, indices)`` of the ``k`` largest (or, ``largest=False``, smallest) elements along ``dim``.

    Parameters
    ----------
    k : int
        How many, from 0 to the length of ``dim``.
    dim : int, default -1
        The axis to take them along.
    largest : bool, default True
        The largest (True) or the smallest (False).
    sorted : bool, default True
        Accepted for PyTorch's signature: the values always come sorted (PyTorch leaves their
        order unspecified when ``sorted=False``).

    Returns
    -------
    ValuesIndices
        A named tuple ``(values, indices)``, of the input's shape with ``k`` along ``dim``; among
        equal values the first ones are taken. The gradient flows back to the elements taken.
    """
    _check_flags("topk", largest=largest, sorted=sorted)
    x = a._data
    axis = dim_index("topk", dim, x.ndim)
    size = x.shape[axis] if x.ndim else 1
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (numbers.Integral, np.integer)):
        raise TypeError(f"topk(): k must be an int, got {type(k).__name__}")
    k = int(k)
    if not 0 <= k <= size:
        raise IndexError(f"topk(): k={k} is out of range for dim {dim} of size {size} (expected 0..{size})")
    if x.ndim == 0:
        return _zero_dim(a)  # PyTorch returns the element itself for k=0 and k=1 alike
    order = sort_order(backend_of(x), x, axis, bool(largest))
    first = tuple(slice(0, k) if i == axis else slice(None) for i in range(x.ndim))
    return _take(a, axis, order[first])
