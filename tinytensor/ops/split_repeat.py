"""Cutting a tensor into pieces along an axis (``chunk``, ``split``) and tiling it (``repeat``).

The pieces are views of the input (basic slices), each with its gradient, as in PyTorch.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence

import numpy as np

from ..argcheck import int_at_least
from ..array_types import Array, Namespace
from ..autograd import GRAD_ENABLED, saves_nothing
from ..devices import backend_of
from ..errors import ShapeError
from ..tensor import Tensor, tensor_arg, wrap
from .indexing import dim_index
from .shape import getitem


def _pieces(a: Tensor, axis: int, sizes: Iterable[int]) -> tuple[Tensor, ...]:
    """Consecutive slices of ``a`` along ``axis`` with the given lengths."""
    out, start = [], 0
    lead = (slice(None),) * axis
    for n in sizes:
        out.append(getitem(a, (*lead, slice(start, start + n))))
        start += n
    return tuple(out)


def _axis(fn: str, a: Tensor, dim: int) -> int:
    if a.ndim == 0:
        raise ShapeError(f"{fn}(): needs a tensor with at least one axis, got a 0-d tensor")
    return dim_index(fn, dim, a.ndim)


def chunk(a: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """The input cut along ``dim`` into at most ``chunks`` views of equal length.

    Parameters
    ----------
    chunks : int
        How many pieces at most (>= 1). Each has ``ceil(length / chunks)`` elements along
        ``dim``, the last one fewer; fewer pieces come back when the length does not need them
        all, as in PyTorch.
    dim : int, default 0
        The axis to cut.

    Returns
    -------
    tuple of Tensor
        Views of the input (changes to one show in it), each with its gradient.
    """
    n_chunks = int_at_least("chunk", "chunks", chunks, 1)
    axis = _axis("chunk", a, dim)
    n = a.shape[axis]
    if n == 0:
        return _pieces(a, axis, [0] * n_chunks)
    step = -(-n // n_chunks)
    return _pieces(a, axis, [min(step, n - start) for start in range(0, n, step)])


def _split_sizes(fn: str, n: int, split_size_or_sections: object) -> list[int]:
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int_at_least(fn, "split_size_or_sections", s, 0) for s in split_size_or_sections]
        if sum(sizes) != n:
            raise ValueError(
                f"{fn}(): split sizes {sizes} must sum exactly to {n}, the length of the dimension being split"
            )
        return sizes
    if isinstance(split_size_or_sections, (bool, np.bool_)) or not isinstance(
        split_size_or_sections, (numbers.Integral, np.integer)
    ):
        raise TypeError(
            f"{fn}(): split_size_or_sections must be an int or a list of ints, got "
            f"{type(split_size_or_sections).__name__}"
        )
    size = int_at_least(fn, "split_size_or_sections", split_size_or_sections, 0)
    if n == 0:
        return [0]
    if size == 0:
        raise ValueError(f"{fn}(): split size 0 is only valid for a dimension of length 0, got length {n}")
    return [min(size, n - start) for start in range(0, n, size)]


def split(tensor: Tensor | Array, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """``tensor`` cut along ``dim`` into views of ``split_size_or_sections`` elements (or a list of lengths).

    Parameters
    ----------
    tensor : Tensor
        The tensor to cut (an array or Python data is converted).
    split_size_or_sections : int or sequence of ints
        The length of each piece (the last may be shorter), or the lengths of all pieces, which
        must add up to the length of ``dim``.
    dim : int, default 0
        The axis to cut.

    Returns
    -------
    tuple of Tensor
        Views of the input, each with its gradient.
    """
    a = tensor_arg(tensor, "split", "tensor")
    axis = _axis("split", a, dim)
    return _pieces(a, axis, _split_sizes("split", a.shape[axis], split_size_or_sections))


def split_method(self: Tensor, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """``Tensor.split(split_size, dim=0)``: ``tt.split`` with PyTorch's parameter name for the method."""
    return split(self, split_size, dim)


split_method.__name__ = split_method.__qualname__ = "split"


def repeat(a: Tensor, *repeats: int | Sequence[int]) -> Tensor:
    """The tensor tiled ``repeats[i]`` times along axis ``i``; the gradient sums the copies.

    The counts are ints or one sequence, at least one per axis; extra ones add leading axes."""
    if len(repeats) == 1 and isinstance(repeats[0], (tuple, list)):
        repeats = tuple(repeats[0])
    reps = tuple(int_at_least("repeat", "repeats", r, 0) for r in repeats)
    x = a._data
    if len(reps) < x.ndim:
        raise ShapeError(
            f"repeat(): {len(reps)} repeat counts for a tensor with {x.ndim} axes: give at least one per axis"
        )
    xp = backend_of(x).xp
    shape = (1,) * (len(reps) - x.ndim) + tuple(x.shape)
    out = xp.tile(xp.reshape(x, shape), reps) if reps else xp.reshape(x, ())
    if a.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (_repeat_backward, (a,), xp, reps, shape, tuple(x.shape)))
    return wrap(out)


@saves_nothing
def _repeat_backward(
    g: Array, xp: Namespace, reps: tuple[int, ...], shape: tuple[int, ...], in_shape: tuple[int, ...]
) -> tuple[Array]:
    # (r0 * s0, r1 * s1, ...) -> (r0, s0, r1, s1, ...): the copies are the even axes
    split_shape = tuple(n for pair in zip(reps, shape) for n in pair)
    summed = xp.sum(xp.reshape(g, split_shape), axis=tuple(range(0, 2 * len(reps), 2)))
    return (xp.reshape(summed, in_shape),)
