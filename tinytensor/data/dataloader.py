"""``DataLoader``: batches from a dataset, reshuffled every epoch, on the data's own device."""

from __future__ import annotations

import numpy as np

from .. import random as _random
from ..argcheck import int_at_least
from ..devices import backend_of
from ..tensor import wrap
from .collate import default_collate
from .dataset import TensorDataset


class DataLoader:
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader`` does.

    ``len(loader)`` is the number of batches; each ``for batch in loader`` is a new epoch (a new
    order when ``shuffle=True``). The order comes from ``generator`` (a ``tt.Generator``) or else
    from tinytensor's global stream, so ``tt.manual_seed`` fixes it.

    A ``TensorDataset`` is batched by one gather per tensor, with the epoch's index array put on
    that tensor's device once; a batch is a list with one Tensor per dataset tensor. Other
    datasets are read sample by sample and merged by ``default_collate``. Batches are new arrays
    (copies), detached from any graph.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, generator=None):
        _check_dataset(dataset)
        self.dataset = dataset
        self.batch_size = int_at_least("DataLoader", "batch_size", batch_size, 1)
        self.shuffle = _check_flag(shuffle, "shuffle")
        self.drop_last = _check_flag(drop_last, "drop_last")
        if generator is not None and not isinstance(generator, _random.Generator):
            raise TypeError(
                "DataLoader: generator must be a tinytensor Generator (tt.Generator().manual_seed(seed)) "
                f"or None, got {type(generator).__module__}.{type(generator).__qualname__}"
            )
        self.generator = generator

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        # The order is drawn here, when the epoch starts, not at the first next().
        n = len(self.dataset)
        order = self._order(n)
        stops = range(self.batch_size, n + 1, self.batch_size)
        bounds = [(stop - self.batch_size, stop) for stop in stops]
        if n % self.batch_size and not self.drop_last:
            bounds.append((n - n % self.batch_size, n))
        if _gathers(self.dataset):
            return _gathered_batches(self.dataset.tensors, order, bounds)
        return _collated_batches(self.dataset, order, bounds)

    def _order(self, n: int) -> np.ndarray:
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        rng = self.generator.rng if self.generator is not None else _random.generator()
        return rng.permutation(n).astype(np.int64, copy=False)

    def __repr__(self) -> str:
        return (
            f"DataLoader({type(self.dataset).__name__} of {len(self.dataset)}, batch_size={self.batch_size}, "
            f"shuffle={self.shuffle}, drop_last={self.drop_last})"
        )


def _gathers(dataset) -> bool:
    # A subclass that overrides __getitem__ (e.g. to transform samples) must be read item by item.
    return isinstance(dataset, TensorDataset) and type(dataset).__getitem__ is TensorDataset.__getitem__


def _gathered_batches(tensors, order, bounds):
    arrays = [t._data for t in tensors]
    # The epoch's order, uploaded once per device that holds a dataset tensor.
    on_device = {}
    indices = []
    for data in arrays:
        backend = backend_of(data)
        key = backend.device(data)
        if key not in on_device:
            on_device[key] = backend.asarray(order, np.int64, data)
        indices.append(on_device[key])
    takes = [backend_of(data).xp.take for data in arrays]
    for start, stop in bounds:
        # take() copies, so editing a batch in place never changes the dataset or another batch.
        yield [
            wrap(take(data, idx[start:stop], axis=0)) for take, data, idx in zip(takes, arrays, indices, strict=True)
        ]


def _collated_batches(dataset, order, bounds):
    for start, stop in bounds:
        yield default_collate([dataset[i] for i in order[start:stop].tolist()])


def _check_dataset(dataset) -> None:
    if dataset is None or isinstance(dataset, (str, bytes)):
        raise TypeError(f"DataLoader: dataset must be a dataset (e.g. a TensorDataset), got {type(dataset).__name__}")
    missing = [name for name in ("__len__", "__getitem__") if not hasattr(type(dataset), name)]
    if missing:
        raise TypeError(
            f"DataLoader: dataset must define __len__ and __getitem__ (a map-style dataset such as "
            f"TensorDataset); {type(dataset).__name__} has no {' or '.join(missing)}"
        )
    try:
        len(dataset)
    except NotImplementedError:
        raise TypeError(f"DataLoader: dataset {type(dataset).__name__} does not implement __len__") from None


def _check_flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"DataLoader: {name} must be True or False, got {type(value).__name__}")
    return bool(value)
