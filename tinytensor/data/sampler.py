"""Samplers, as ``torch.utils.data``'s: the order of a map-style dataset's samples
(``SequentialSampler``, ``RandomSampler``, ``SubsetRandomSampler``) and its batches
(``BatchSampler``), and ``Sampler``, their base class.

They are lazy: an epoch holds at most one permutation of the indices (int32 where that holds
them) and hands indices out a block at a time, so a ``DataLoader`` over 10**8 samples makes its
first batch without a Python object per sample. A random order is drawn when the iteration
starts (``iter(sampler)``), from the sampler's ``generator`` or tinytensor's global stream.
"""

from __future__ import annotations

import itertools
import numbers
import operator
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from .. import random as _random

if TYPE_CHECKING:
    import numpy.typing as npt

    from .workers import Indices

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler"]

_T_co = TypeVar("_T_co", covariant=True)

# Indices per block: enough to amortise numpy's per-call cost, few enough that a block as Python
# ints (what iterating a sampler yields) stays a few MB.
_BLOCK = 2**16


class Sampler(Generic[_T_co]):
    """Base class of samplers, as ``torch.utils.data.Sampler``.

    A subclass defines ``__iter__``, the indices of a dataset in the order to read them (or lists
    of indices, for a batch sampler), and may define ``__len__``, how many it yields; a
    ``DataLoader`` needs ``__len__`` only for ``len(loader)``.

    Examples
    --------
    >>> class EvensFirst(Sampler[int]):
    ...     def __init__(self, n):
    ...         self.n = n
    ...
    ...     def __iter__(self):
    ...         return iter([*range(0, self.n, 2), *range(1, self.n, 2)])
    ...
    ...     def __len__(self):
    ...         return self.n
    >>> list(EvensFirst(5))
    [0, 2, 4, 1, 3]
    """

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError(f"{type(self).__name__} does not define __iter__()")

    def _index_blocks(self) -> Iterator[Indices] | None:
        # The epoch's indices as int arrays, its random order drawn now; None: iterate the sampler.
        return None


class SequentialSampler(Sampler[int]):
    """The indices ``0, 1, ..., len(data_source) - 1``, in order, as
    ``torch.utils.data.SequentialSampler``: what ``DataLoader(shuffle=False)`` reads by.

    Parameters
    ----------
    data_source : sized
        The dataset (anything with ``__len__``); its length is read at each iteration.

    Examples
    --------
    >>> list(SequentialSampler(range(4)))
    [0, 1, 2, 3]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)

    def _index_blocks(self) -> Iterator[Indices] | None:
        if type(self).__iter__ is not SequentialSampler.__iter__:
            return None  # a subclass's own order
        n = len(self.data_source)
        return (np.arange(start, min(start + _BLOCK, n), dtype=np.int64) for start in range(0, n, _BLOCK))


class RandomSampler(Sampler[int]):
    """The indices of ``data_source`` in a random order, as ``torch.utils.data.RandomSampler``:
    what ``DataLoader(shuffle=True)`` reads by.

    Without replacement each iteration is a new permutation (several, concatenated, when
    ``num_samples > len(data_source)``); with replacement it is ``num_samples`` independent draws.

    Parameters
    ----------
    data_source : sized
        The dataset (anything with ``__len__``).
    replacement : bool, default False
        Draw each index independently (repeats allowed) instead of permuting.
    num_samples : int, optional
        How many indices an iteration yields; ``len(data_source)`` by default.
    generator : tt.Generator, optional
        The source of the order; by default tinytensor's global stream, so that
        ``tt.manual_seed`` fixes it.

    Raises
    ------
    TypeError
        ``replacement`` is not a bool, or ``generator`` is not a ``tt.Generator``.
    ValueError
        ``num_samples`` is not a positive int.

    Notes
    -----
    Unlike PyTorch's, it takes an empty ``data_source`` (and yields nothing), as a shuffled
    ``DataLoader`` over an empty dataset does. The order is drawn when the iteration starts, not
    at the first index: one permutation, int32
    where the length allows (400 MB for 10**8 samples), which is then read a block at a time.
    The same seed gives ``numpy.random.Generator.permutation``'s order, not PyTorch's. Draws
    beyond the first permutation (with replacement, or ``num_samples > len(data_source)``) come
    from a stream seeded at that start, so they are lazy and do not depend on what else reads the
    generator meanwhile.

    Examples
    --------
    >>> sampler = RandomSampler(range(5), generator=tt.Generator().manual_seed(0))
    >>> sorted(sampler)
    [0, 1, 2, 3, 4]
    >>> len(RandomSampler(range(5), replacement=True, num_samples=8))
    8
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: _random.Generator | None = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = _random.check_generator(generator, "RandomSampler")
        if not isinstance(replacement, (bool, np.bool_)):
            raise TypeError(f"RandomSampler: replacement should be a boolean value, but got replacement={replacement}")
        self.replacement = bool(replacement)
        # An empty data_source yields nothing (PyTorch refuses it, and with it a shuffled loader
        # over an empty dataset); a num_samples given must be positive, as in PyTorch.
        if num_samples is not None:
            self._num_samples = _positive_int(num_samples, "RandomSampler", "num_samples")

    @property
    def num_samples(self) -> int:
        """The number of indices an iteration yields (``num_samples``, else ``len(data_source)``)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        return _as_ints(self._draw())

    def __len__(self) -> int:
        return self.num_samples

    def _index_blocks(self) -> Iterator[Indices] | None:
        return self._draw() if type(self).__iter__ is RandomSampler.__iter__ else None

    def _draw(self) -> Iterator[npt.NDArray[Any]]:
        n, total = len(self.data_source), self.num_samples
        if not total:
            return iter([])
        if not n:
            raise ValueError(f"RandomSampler: cannot draw {total} samples from an empty data_source")
        rng = _random.rng_of(self.generator)
        if self.replacement:
            return _draws(_spawn(rng), n, total)
        first = _permutation(rng, n)
        return _permutations(first, _spawn(rng) if total > n else None, n, total)


class SubsetRandomSampler(Sampler[int]):
    """The items of ``indices`` in a random order, as ``torch.utils.data.SubsetRandomSampler``: a
    new permutation at each iteration, e.g. to read a validation split of a dataset.

    Parameters
    ----------
    indices : sequence
        The indices to yield (of the dataset the loader reads).
    generator : tt.Generator, optional
        The source of the order; by default tinytensor's global stream.

    Examples
    --------
    >>> sampler = SubsetRandomSampler([10, 20, 30], generator=tt.Generator().manual_seed(0))
    >>> sorted(sampler), len(sampler)
    ([10, 20, 30], 3)
    """

    def __init__(self, indices: Sequence[int], generator: _random.Generator | None = None) -> None:
        self.indices = indices
        self.generator = _random.check_generator(generator, "SubsetRandomSampler")

    def __iter__(self) -> Iterator[int]:
        indices = self.indices
        order = _permutation(_random.rng_of(self.generator), len(indices))  # drawn now, at the start
        return (indices[k] for block in _pieces(order) for k in block.tolist())

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler[list[int]]):
    """The indices of ``sampler`` in lists of ``batch_size``, as ``torch.utils.data.BatchSampler``:
    what a ``DataLoader`` batches by (``loader.batch_sampler``).

    Parameters
    ----------
    sampler : Sampler or iterable
        The indices, in order.
    batch_size : int
        Indices per batch.
    drop_last : bool
        Leave out the last batch when it would have fewer than ``batch_size`` indices.

    Raises
    ------
    ValueError
        ``batch_size`` is not a positive int, or ``drop_last`` is not a bool (both ValueError, as
        in PyTorch).

    Examples
    --------
    >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    >>> list(BatchSampler(range(10), batch_size=3, drop_last=True))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        self.batch_size = _positive_int(batch_size, "BatchSampler", "batch_size")
        if not isinstance(drop_last, (bool, np.bool_)):
            raise ValueError(f"BatchSampler: drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.drop_last = bool(drop_last)

    def __iter__(self) -> Iterator[list[int]]:
        reader = _Reader(self.sampler)
        if reader.items is not None:  # any iterable: its items as they are, grouped as PyTorch does
            return _grouped(reader.items, self.batch_size, self.drop_last)
        chunks = _chunks(reader, self.batch_size, self.drop_last)
        return (order[start:stop].tolist() for order, bounds in chunks for start, stop in bounds)

    def __len__(self) -> int:
        # A sampler without a length makes this a TypeError, as in PyTorch.
        n = len(self.sampler)  # type: ignore[arg-type]  # see above
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def epoch_chunks(batch_sampler: Iterable[Sequence[int]]) -> Iterator[tuple[Indices, list[tuple[int, int]]]]:
    """An epoch of ``batch_sampler`` as ``(indices, bounds)`` chunks: each ``(start, stop)`` in
    ``bounds`` is a batch, ``indices[start:stop]``. What the sampler draws, it draws now; the chunks
    come as they are read: one batch first, then twice as many each time up to a block."""
    if isinstance(batch_sampler, BatchSampler) and type(batch_sampler).__iter__ is BatchSampler.__iter__:
        return _chunks(_Reader(batch_sampler.sampler), batch_sampler.batch_size, batch_sampler.drop_last)
    return ((order, [(0, len(order))]) for order in map(_batch_indices, iter(batch_sampler)))


class _Reader:
    """A sampler's epoch (its random order drawn on creation), handed out ``k`` indices at a time
    as int64 arrays (fewer at the end). ``items``: the sampler's own iterator, where it has no blocks."""

    def __init__(self, sampler: object):
        self._blocks = _index_blocks(sampler)
        self.items: Iterator[Any] | None = iter(sampler) if self._blocks is None else None  # type: ignore[call-overload]  # any iterable: checked by iter()
        self._block: npt.NDArray[Any] = np.zeros(0, dtype=np.int64)
        self._at = 0

    def take(self, k: int) -> Indices:
        if self.items is not None:  # Python objects, read as the sampler yields them
            return _sample_indices(list(itertools.islice(self.items, k)))
        assert self._blocks is not None
        parts = []
        while k:
            if self._at == len(self._block):
                block = next(self._blocks, None)
                if block is None:
                    break
                self._block, self._at = block, 0
                continue
            part = self._block[self._at : self._at + k]
            self._at += len(part)
            k -= len(part)
            parts.append(part)
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return (parts[0] if len(parts) == 1 else np.concatenate(parts)).astype(np.int64, copy=False)


def _chunks(reader: _Reader, size: int, drop_last: bool) -> Iterator[tuple[Indices, list[tuple[int, int]]]]:
    # One batch first (the first batch waits for no more), then doubling: few numpy calls per batch.
    most, count = max(1, _BLOCK // size), 1
    while True:
        want = count * size
        order = reader.take(want)
        full = len(order) // size
        bounds = [(k * size, (k + 1) * size) for k in range(full)]
        if len(order) % size and not drop_last:
            bounds.append((full * size, len(order)))
        if bounds:
            yield order, bounds
        if len(order) < want:
            return
        count = min(2 * count, most)


def _grouped(items: Iterator[Any], size: int, drop_last: bool) -> Iterator[list[Any]]:
    while batch := list(itertools.islice(items, size)):
        if drop_last and len(batch) < size:
            return
        yield batch


def _index_blocks(sampler: object) -> Iterator[npt.NDArray[Any]] | None:
    """``sampler``'s epoch as blocks of ints, drawn now, where it can give them without Python
    ints: this module's samplers, a ``range``, a 1-d integer array; else None."""
    if isinstance(sampler, Sampler):
        return sampler._index_blocks()
    if isinstance(sampler, range):
        pieces = (sampler[start : start + _BLOCK] for start in range(0, len(sampler), _BLOCK))
        return (np.arange(r.start, r.stop, r.step, dtype=np.int64) for r in pieces)
    if isinstance(sampler, np.ndarray) and sampler.ndim == 1 and sampler.dtype.kind in "iu":
        return iter([sampler])
    return None


def _sample_indices(items: list[object]) -> Indices:
    order = np.asarray(items, dtype=np.int64)
    if order.ndim != 1:
        if order.size != len(items):
            raise TypeError(
                f"DataLoader: a sampler must yield single indices, got items of shape {order.shape[1:]}; "
                "one that yields lists of indices is a batch_sampler"
            )
        order = order.reshape(-1)  # e.g. one-element arrays
    return order


def _batch_indices(batch: Iterable[int]) -> Indices:
    return np.asarray(list(batch), dtype=np.int64).reshape(-1)


def _as_ints(blocks: Iterator[npt.NDArray[Any]]) -> Iterator[int]:
    # Python ints a block at a time: never a list of the whole epoch (PyTorch's randperm().tolist()).
    return itertools.chain.from_iterable(piece.tolist() for block in blocks for piece in _pieces(block))


def _pieces(block: npt.NDArray[Any]) -> Iterator[npt.NDArray[Any]]:
    return (block[start : start + _BLOCK] for start in range(0, len(block), _BLOCK))


def _permutation(rng: np.random.Generator, n: int) -> npt.NDArray[Any]:
    # rng.permutation(n) shuffles an int64 arange; an int32 one is shuffled by the same draws into
    # the same order (so seeds give the orders they gave before), in half the memory.
    if n >= 2**31:
        return rng.permutation(n)
    order = np.arange(n, dtype=np.int32)
    rng.shuffle(order)
    return order


def _permutations(
    first: npt.NDArray[Any], rng: np.random.Generator | None, n: int, total: int
) -> Iterator[npt.NDArray[Any]]:
    order = first
    while True:
        yield order[:total]
        total -= n
        if total <= 0:
            return
        assert rng is not None  # given when total > n
        order = _permutation(rng, n)


def _draws(rng: np.random.Generator, n: int, total: int) -> Iterator[npt.NDArray[Any]]:
    for start in range(0, total, _BLOCK):
        yield rng.integers(0, n, size=min(_BLOCK, total - start), dtype=np.int64)


def _spawn(rng: np.random.Generator) -> np.random.Generator:
    # A stream of the epoch's own, seeded from the source at the start: later lazy draws do not
    # interleave with other readers of the source (dropout reading the global stream, say).
    return np.random.default_rng(int(rng.integers(0, 2**63 - 1)))


def _positive_int(value: object, owner: str, name: str) -> int:
    # ValueError for a wrong type too, as PyTorch raises; numpy ints are ints here.
    integral = isinstance(value, numbers.Integral)  # bools are Integral: refused below
    if integral and not isinstance(value, (bool, np.bool_)):
        number = operator.index(value)  # type: ignore[arg-type]  # an Integral: index() takes it
        if number > 0:
            return number
    raise ValueError(f"{owner}: {name} should be a positive integer value, but got {name}={value}")
