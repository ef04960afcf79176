"""Datasets: anything with ``__len__`` and ``__getitem__``; ``TensorDataset`` over arrays;
``Subset``, ``ConcatDataset`` and ``random_split`` to select and combine them."""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import warnings
from collections.abc import Iterable, Sequence, Sized
from typing import Any, Generic, Protocol, TypeVar

from .. import random as _random
from ..array_types import Array
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor, is_array, plain_array, wrap


class MapDataset(Protocol):
    """What a ``DataLoader``, ``Subset``, ``ConcatDataset`` and ``random_split`` read from a dataset:
    ``len(dataset)`` and ``dataset[i]``. A ``Dataset``, a list or a ``range`` all qualify."""

    def __len__(self) -> int: ...

    # Any: the index a dataset takes (an int, or more) and the sample it returns are its own.
    def __getitem__(self, index: Any, /) -> Any: ...


# the sample type, as torch.utils.data.Dataset's T_co: `class Digits(Dataset[tuple[Tensor, int]])`
_T_co = TypeVar("_T_co", covariant=True)


class Dataset(Generic[_T_co]):
    """Base class of map-style datasets: ``dataset[i]`` is sample ``i`` for ``0 <= i < len(dataset)``.

    As ``torch.utils.data.Dataset``: a subclass defines ``__getitem__`` (one sample, any Python
    object) and ``__len__`` (the number of samples); the base class defines neither and raises
    ``NotImplementedError`` when they are called. ``a + b`` is ``ConcatDataset([a, b])``.

    A ``DataLoader`` takes any object with ``__len__`` and ``__getitem__``; deriving from this
    class is optional, as in PyTorch. It is generic in the sample type, as PyTorch's is
    (``class Squares(Dataset[int])``). There are no iterable-style datasets.

    Examples
    --------
    >>> class Squares(Dataset[int]):
    ...     def __len__(self):
    ...         return 10
    ...
    ...     def __getitem__(self, index):
    ...         return index * index
    >>> Squares()[3]
    9
    """

    def __getitem__(self, index: Any) -> _T_co:
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__()")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} does not define __len__()")

    def __add__(self, other: MapDataset) -> ConcatDataset:
        """``a + b``: the samples of ``a``, then those of ``b`` (a ``ConcatDataset``)."""
        return ConcatDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Samples are rows of tensors of equal length: ``dataset[i]`` is ``tuple(t[i] for t in tensors)``.

    As ``torch.utils.data.TensorDataset``.

    Parameters
    ----------
    *tensors : Tensor or array
        One or more Tensors, or numpy, CuPy or array_api_strict arrays, of bool, integer or
        float dtype, with at least one axis and the same length along axis 0. Arrays are
        wrapped without a copy, so the dataset reads them where they are (on their device).
        They are kept in ``.tensors``, as Tensors.

    Raises
    ------
    ValueError
        No tensors are given.
    TypeError
        An argument is not a Tensor or array (a list, say: ``tt.tensor(...)`` converts it), or
        holds neither bools nor numbers.
    ShapeError
        An argument is 0-d, or the lengths along axis 0 differ.

    Notes
    -----
    Unlike PyTorch's, it also takes arrays, and a ``DataLoader`` with the default
    ``collate_fn`` and ``num_workers=0`` makes each batch with one indexed copy per tensor
    (``take`` along axis 0) instead of reading and stacking sample by sample; a subclass that
    overrides ``__getitem__`` is read sample by sample.

    Examples
    --------
    >>> x, y = tt.randn(100, 3), tt.arange(100)
    >>> dataset = TensorDataset(x, y)
    >>> len(dataset), dataset[0][1].item()
    (100, 0)
    """

    def __init__(self, *tensors: Tensor | Array):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor, got none")
        self.tensors = tuple(_as_tensor(t, k) for k, t in enumerate(tensors))
        lengths = [t.shape[0] for t in self.tensors]
        if len(set(lengths)) > 1:
            raise ShapeError(
                f"TensorDataset: every tensor needs the same length along axis 0, got lengths {lengths} "
                f"(shapes {[t.shape for t in self.tensors]})"
            )

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        # Any: whatever a Tensor's indexing takes (an int, a slice, a list or array of indices).
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __repr__(self) -> str:
        parts = ", ".join(f"{t.shape} {t.dtype} on {t.device}" for t in self.tensors)
        return f"TensorDataset({len(self)} samples: {parts})"


def _as_tensor(value: object, position: int) -> Tensor:
    where = f"TensorDataset: argument {position}"
    if isinstance(value, Tensor):
        tensor = value
    elif is_array(value):
        value = plain_array(value)
        try:
            backend_of(value)
        except TypeError as exc:
            raise TypeError(f"{where}: {exc}") from None
        tensor = wrap(value)
    else:
        hint = " (tt.tensor(...) converts Python lists)" if isinstance(value, (list, tuple)) else ""
        raise TypeError(
            f"{where} must be a Tensor or a numpy / CuPy / array_api_strict array, got {_type_name(value)}{hint}"
        )
    dtype = numpy_dtype(tensor.dtype)
    if dtype.kind not in "biuf":
        raise TypeError(f"{where} has dtype {dtype}: a TensorDataset holds numbers (bool, int or float)")
    if tensor.ndim == 0:
        raise ShapeError(f"{where} is 0-d: a dataset indexes its samples along axis 0, so it needs at least one axis")
    return tensor


def _type_name(value: object) -> str:
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


class Subset(Dataset[Any]):
    """The samples of ``dataset`` at ``indices``, in that order: ``subset[i]`` is ``dataset[indices[i]]``.

    As ``torch.utils.data.Subset``: nothing is copied or checked when it is made; ``dataset``
    and ``indices`` are kept as given (``.dataset``, ``.indices``), and an index out of range
    fails when it is read. ``subset[[i, j]]`` (a list) asks ``dataset`` for
    ``[indices[i], indices[j]]`` at once, as PyTorch's does.

    Parameters
    ----------
    dataset : Dataset
        Any object with ``__len__`` and ``__getitem__``.
    indices : sequence of int
        The positions in ``dataset`` of the subset's samples.
    """

    def __init__(self, dataset: MapDataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):  # as PyTorch's Subset: a list of positions reads them at once
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset[Any]):
    """The samples of several datasets one after another, as ``torch.utils.data.ConcatDataset``.

    Parameters
    ----------
    datasets : iterable of Dataset
        The datasets, each any object with ``__len__`` and ``__getitem__``; kept as the list
        ``.datasets``. Their lengths are read once, here: a dataset that grows later is not seen.

    Raises
    ------
    ValueError
        ``datasets`` is empty.

    Notes
    -----
    ``cumulative_sizes[k]`` is the number of samples in ``datasets[0]`` to ``datasets[k]``. An
    index is an integer, negative ones counting from the end; one out of range is an
    ``IndexError`` and any other index a ``TypeError`` (PyTorch's accepts no more). Unlike
    PyTorch's, it does not refuse iterable-style datasets, which tinytensor does not have.
    """

    def __init__(self, datasets: Iterable[MapDataset]):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        self.cumulative_sizes = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence: Iterable[Sized]) -> list[int]:
        """The running totals of the lengths of ``sequence``'s items: ``[3, 5]`` for lengths 3 and 2."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: Any) -> Any:
        try:
            position = operator.index(index)
        except TypeError:
            raise TypeError(f"ConcatDataset indices must be integers, got {type(index).__name__}") from None
        n = len(self)
        if position < 0:
            position += n
        if not 0 <= position < n:
            raise IndexError(f"ConcatDataset index {index} is out of range for {n} samples")
        k = bisect.bisect_right(self.cumulative_sizes, position)
        return self.datasets[k][position - (self.cumulative_sizes[k - 1] if k else 0)]


def random_split(
    dataset: MapDataset, lengths: Sequence[int | float], generator: _random.Generator | None = None
) -> list[Subset]:
    """Split ``dataset`` at random into non-overlapping ``Subset`` objects of the given lengths.

    As ``torch.utils.data.random_split``.

    Parameters
    ----------
    dataset : Dataset
        Any object with ``__len__`` and ``__getitem__``; each split reads it through a ``Subset``.
    lengths : sequence of int or float
        Sample counts (ints >= 0) that sum to ``len(dataset)``, or fractions (between 0 and 1)
        that sum to 1. A fraction gives ``floor(len(dataset) * fraction)`` samples and the
        remainder is dealt one by one to the splits in order, as PyTorch deals it.
    generator : tt.Generator, optional
        The source of the permutation; by default tinytensor's global stream, so that
        ``tt.manual_seed`` fixes the split.

    Returns
    -------
    list of Subset
        One ``Subset`` per length, in order, whose ``indices`` (a list of ints) partition
        ``range(len(dataset))``.

    Raises
    ------
    TypeError
        ``generator`` is not a ``tt.Generator`` (a ``torch.Generator`` or numpy generator, say).
    ValueError
        A length is neither a count nor a fraction, a fraction is out of [0, 1], or the lengths
        do not sum to the dataset's length (or to 1).

    Warns
    -----
    UserWarning
        A split of fractions comes out empty.

    Notes
    -----
    The same seed gives a different split than PyTorch's: the permutation comes from
    tinytensor's generator, not torch's.

    Examples
    --------
    >>> train, val = random_split(range(10), [0.8, 0.2], generator=tt.Generator().manual_seed(0))
    >>> len(train), len(val)
    (8, 2)
    """
    rng = _random.rng_of(_random.check_generator(generator, "random_split"))
    requested = list(lengths)
    total = len(dataset)
    if math.isclose(sum(requested), 1) and sum(requested) <= 1:
        requested = list(_lengths_of_fractions(requested, total))
    counts: list[int] = []
    for k, length in enumerate(requested):
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise ValueError(
                f"random_split: lengths must be counts (ints >= 0) or fractions that sum to 1; length {k} is {length!r}"
            )
        counts.append(length)
    if sum(counts) != total:
        raise ValueError(f"random_split: the lengths sum to {sum(counts)}, but the dataset has {total} samples")
    indices: list[int] = rng.permutation(total).tolist()
    return [
        Subset(dataset, indices[stop - length : stop])
        for stop, length in zip(itertools.accumulate(counts), counts, strict=True)
    ]


def _lengths_of_fractions(fractions: Sequence[float], total: int) -> list[int]:
    for k, fraction in enumerate(fractions):
        if not 0 <= fraction <= 1:
            raise ValueError(f"random_split: fraction {k} is {fraction}, not between 0 and 1")
    lengths = [math.floor(total * fraction) for fraction in fractions]
    for k in range(total - sum(lengths)):  # PyTorch's rounding: the remainder, round-robin
        lengths[k % len(lengths)] += 1
    for k, length in enumerate(lengths):
        if length == 0:
            warnings.warn(
                f"random_split: split {k} is empty (its fraction of {total} samples rounds to 0)", stacklevel=3
            )
    return lengths
