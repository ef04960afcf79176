"""Datasets: anything with ``__len__`` and ``__getitem__``; ``TensorDataset`` over arrays;
``Subset``, ``ConcatDataset`` and ``random_split`` to select and combine them."""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import warnings

from .. import random as _random
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor, is_array, wrap


class Dataset:
    """Base class of map-style datasets: ``dataset[i]`` is sample ``i`` for ``0 <= i < len(dataset)``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__()")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} does not define __len__()")

    def __add__(self, other) -> ConcatDataset:
        """``a + b``: the samples of ``a``, then those of ``b`` (a ``ConcatDataset``)."""
        return ConcatDataset([self, other])


class TensorDataset(Dataset):
    """Samples are rows of tensors of equal length: ``dataset[i] == (t[i] for t in tensors)``.

    Takes Tensors or numpy / CuPy / array_api_strict arrays; arrays are wrapped without a copy, so
    the dataset reads them where they are (on their device). A ``DataLoader`` gathers whole batches
    from ``.tensors`` with one indexed copy per tensor.
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor, got none")
        self.tensors = tuple(_as_tensor(t, k) for k, t in enumerate(tensors))
        lengths = [t.shape[0] for t in self.tensors]
        if len(set(lengths)) > 1:
            raise ShapeError(
                f"TensorDataset: every tensor needs the same length along axis 0, got lengths {lengths} "
                f"(shapes {[t.shape for t in self.tensors]})"
            )

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __repr__(self) -> str:
        parts = ", ".join(f"{t.shape} {t.dtype} on {t.device}" for t in self.tensors)
        return f"TensorDataset({len(self)} samples: {parts})"


def _as_tensor(value, position: int) -> Tensor:
    where = f"TensorDataset: argument {position}"
    if isinstance(value, Tensor):
        tensor = value
    elif is_array(value):
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


def _type_name(value) -> str:
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order: ``subset[i] is dataset[indices[i]]``."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):  # as PyTorch's Subset: a list of positions reads them at once
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """The samples of several datasets one after another, as ``torch.utils.data.ConcatDataset``.

    ``cumulative_sizes[k]`` is the number of samples in ``datasets[0..k]``; an index may be
    negative (from the end); out of range it is an IndexError.
    """

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        self.cumulative_sizes = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence) -> list[int]:
        return list(itertools.accumulate(len(d) for d in sequence))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
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


def random_split(dataset, lengths, generator=None) -> list[Subset]:
    """Split ``dataset`` at random into non-overlapping ``Subset`` objects of the given lengths.

    As ``torch.utils.data.random_split``: ``lengths`` are sample counts that sum to
    ``len(dataset)``, or fractions that sum to 1; each fraction gives ``floor(len * fraction)``
    samples and the remainder is dealt one by one to the splits in order (a split left empty
    warns). The permutation comes from ``generator`` (a ``tt.Generator``) or the global stream.
    """
    if generator is not None and not isinstance(generator, _random.Generator):
        raise TypeError(
            f"random_split: generator must be a tinytensor Generator or None, got {type(generator).__name__}"
        )
    lengths = list(lengths)
    total = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_of_fractions(lengths, total)
    for k, length in enumerate(lengths):
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise ValueError(
                f"random_split: lengths must be counts (ints >= 0) or fractions that sum to 1; length {k} is {length!r}"
            )
    if sum(lengths) != total:
        raise ValueError(f"random_split: the lengths sum to {sum(lengths)}, but the dataset has {total} samples")
    rng = generator.rng if generator is not None else _random.generator()
    indices = rng.permutation(total).tolist()
    return [
        Subset(dataset, indices[stop - length : stop])
        for stop, length in zip(itertools.accumulate(lengths), lengths, strict=True)
    ]


def _lengths_of_fractions(fractions, total: int) -> list[int]:
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
