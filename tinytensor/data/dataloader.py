"""``DataLoader``: batches from a dataset, reshuffled every epoch, in this process or in workers."""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard, TypeVar

import numpy as np

from .. import random as _random
from ..argcheck import int_at_least
from ..array_types import Array
from ..devices import backend_of
from ..tensor import Tensor, wrap
from .collate import default_collate
from .dataset import MapDataset, TensorDataset
from .pool import WorkerEpoch, WorkerPool
from .sampler import BatchSampler, RandomSampler, SequentialSampler, epoch_chunks

if TYPE_CHECKING:
    from .collate import CollateFn
    from .workers import Indices

    Chunk: TypeAlias = tuple[Indices, list[tuple[int, int]]]  # indices, and each batch's (start, stop) in them

_T = TypeVar("_T")


class DataLoader:
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader`` does.

    ``len(loader)`` is the number of batches; each ``for batch in loader`` is a new epoch, in a
    new order when ``shuffle=True``.

    Parameters
    ----------
    dataset : Dataset
        Any object with ``__len__`` and ``__getitem__`` (a map-style dataset): a
        ``TensorDataset``, a ``Dataset`` subclass, a list.
    batch_size : int, default 1
        Samples per batch.
    shuffle : bool, default False
        Draw a new order of the samples at the start of each epoch.
    sampler : Sampler or iterable of int, optional
        The order of the samples (indices into ``dataset``), instead of ``shuffle``'s: a
        ``SubsetRandomSampler``, a list, ...; iterated once per epoch, as batches are made.
        ``len(loader)`` needs it to have a length. By default ``loader.sampler`` is
        ``SequentialSampler(dataset)``, or ``RandomSampler(dataset, generator=generator)`` with
        ``shuffle=True``.
    batch_sampler : Sampler or iterable of lists of int, optional
        The batches themselves, as lists of indices; excludes ``batch_size``, ``shuffle``,
        ``sampler`` and ``drop_last``, and sets ``loader.batch_size`` to None. By default
        ``loader.batch_sampler`` is ``BatchSampler(loader.sampler, batch_size, drop_last)``.
    num_workers : int, default 0
        Worker processes that make the batches; 0 makes them in this process.
    collate_fn : callable, optional
        Merges a list of samples into a batch; ``default_collate`` by default.
    pin_memory : bool, default False
        Accepted for PyTorch compatibility; does nothing (see Notes).
    drop_last : bool, default False
        Leave out the last batch when it would have fewer than ``batch_size`` samples.
    timeout : float, default 0
        With workers, the most seconds to wait for one batch (0: no limit); then RuntimeError,
        at once, and the workers are stopped in the background (as at the end of an epoch).
    worker_init_fn : callable, optional
        Called in each worker process as ``worker_init_fn(worker_id)``, once it is seeded.
    multiprocessing_context : str or multiprocessing context, optional
        The start method of the workers: ``'fork'``, ``'spawn'``, ``'forkserver'`` or a context
        from ``multiprocessing.get_context``; by default the platform's. Needs ``num_workers > 0``.
    generator : tt.Generator, optional
        The source of the shuffled order and of the workers' seeds; by default tinytensor's
        global stream, so that ``tt.manual_seed`` fixes both.
    prefetch_factor : int, optional
        Batches each worker keeps in flight: 2 by default with workers; needs ``num_workers > 0``.
    persistent_workers : bool, default False
        Keep the worker processes (and their copy of the dataset, and their seeds) from one
        epoch to the next, for the loader's life; needs ``num_workers > 0``.

    Raises
    ------
    TypeError
        An argument of the wrong type: a dataset without ``__len__`` and ``__getitem__``, a flag
        that is not a bool, a non-callable ``collate_fn`` or ``worker_init_fn``, a generator that
        is not a ``tt.Generator``.
    ValueError
        A value out of range (``batch_size < 1``, ``num_workers < 0``, ``timeout < 0``), an
        unknown start method, or options that exclude each other (``sampler`` with
        ``shuffle``; ``batch_sampler`` with the batching options; worker options without
        workers).

    Notes
    -----
    The samplers are lazy, as PyTorch's: an epoch draws its order when it starts, at most one
    permutation (int32 below 2**31 samples: 400 MB for 10**8), and reads each batch's indices
    from the sampler as the batch is made or handed to a worker. Without ``shuffle`` the first
    batch of 10**8 samples comes at once; with it, after the permutation is drawn.

    With ``num_workers=0`` batches are made in this process, on the data's own device: a
    ``TensorDataset`` is batched by one gather per tensor, other datasets are read sample by
    sample and merged by ``collate_fn``. Batches are new arrays (copies), detached from any graph.

    ``num_workers=n`` loads batches in n processes (``multiprocessing``). Batch k is made by
    worker k % n and batches arrive in order, so an epoch is the same as with
    ``num_workers=0``, but its Tensors are on the CPU. Each epoch draws one ``base_seed`` from
    ``generator`` or the global stream (with or without workers, so the stream does not depend
    on ``num_workers``); worker i seeds Python's ``random`` and tinytensor's generator with
    ``base_seed + i`` and numpy's legacy global state from both, as PyTorch does, then calls
    ``worker_init_fn(i)``; ``get_worker_info()`` describes the worker. Workers stop when the
    epoch ends, fails or is garbage-collected, unless they are persistent. Under ``'spawn'``
    and ``'forkserver'`` the dataset, ``collate_fn`` and ``worker_init_fn`` are pickled: define
    them at module level. An exception in a worker is raised here with the worker's id and
    traceback; a worker that dies raises RuntimeError. As in PyTorch, keep a dataset that
    workers read on the CPU: a forked process cannot use the GPU its parent has initialised.

    Differences from PyTorch: the same seed gives other orders than PyTorch's (the order comes
    from tinytensor's generator); ``shuffle=True`` takes an empty dataset; ``batch_size=None`` (no batching) and iterable-style
    datasets are not supported; ``pin_memory`` does nothing, as tinytensor does not page-lock
    host memory, so batches are ordinary host (or device) arrays either way; and there is no
    ``in_order`` or ``pin_memory_device``.

    Examples
    --------
    >>> x, y = tt.randn(100, 3), tt.arange(100)
    >>> loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    >>> len(loader)
    4
    >>> [tuple(xb.shape) for xb, yb in loader]
    [(32, 3), (32, 3), (32, 3), (4, 3)]
    """

    def __init__(
        self,
        dataset: MapDataset,
        batch_size: int = 1,
        shuffle: bool = False,
        sampler: Iterable[int] | None = None,
        batch_sampler: Iterable[Sequence[int]] | None = None,
        num_workers: int = 0,
        collate_fn: CollateFn | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], object] | None = None,
        multiprocessing_context: str | multiprocessing.context.BaseContext | None = None,
        generator: _random.Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
    ):
        _check_dataset(dataset)
        self.dataset = dataset
        self.batch_size: int | None = int_at_least("DataLoader", "batch_size", batch_size, 1)
        self.shuffle = _check_flag(shuffle, "shuffle")
        self.drop_last = _check_flag(drop_last, "drop_last")
        _check_iterable(sampler, "sampler", "an iterable of sample indices")
        _check_iterable(batch_sampler, "batch_sampler", "an iterable of lists of sample indices")
        # PyTorch's messages, after the name
        if sampler is not None and self.shuffle:
            raise ValueError(
                "DataLoader: sampler option is mutually exclusive with shuffle (the sampler sets the order)"
            )
        if batch_sampler is not None:
            if self.batch_size != 1 or self.shuffle or sampler is not None or self.drop_last:
                raise ValueError(
                    "DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                    "drop_last (the batch sampler sets the batches)"
                )
            self.batch_size = None  # as in PyTorch: the batch sampler sets the batches
        self.generator = _random.check_generator(generator, "DataLoader")
        # As PyTorch's, a loader always has a sampler and a batch sampler; the default ones are lazy.
        if sampler is None:
            sampler = RandomSampler(dataset, generator=self.generator) if self.shuffle else SequentialSampler(dataset)
        self.sampler: Iterable[int] = sampler
        if batch_sampler is None:
            assert self.batch_size is not None  # None only with a batch_sampler
            batch_sampler = BatchSampler(sampler, self.batch_size, self.drop_last)
        self.batch_sampler: Iterable[Sequence[int]] = batch_sampler
        self.collate_fn: CollateFn = _check_callable(collate_fn, "collate_fn") or default_collate
        self.pin_memory = _check_flag(pin_memory, "pin_memory")
        self._check_workers(num_workers, timeout, worker_init_fn, multiprocessing_context)
        self.prefetch_factor = _check_prefetch(prefetch_factor, self.num_workers)
        self.persistent_workers = _check_flag(persistent_workers, "persistent_workers")
        if self.persistent_workers and not self.num_workers:
            raise ValueError("DataLoader: persistent_workers=True needs num_workers > 0 (there are no workers to keep)")
        self._pool: WorkerPool | None = None

    def _check_workers(
        self, num_workers: object, timeout: object, worker_init_fn: Callable[[int], object] | None, context: object
    ) -> None:
        try:
            self.num_workers = int_at_least("DataLoader", "num_workers", num_workers, 0)
        except ValueError as exc:
            raise ValueError(f"{exc} (num_workers=0 loads the data in the main process)") from None
        if isinstance(timeout, (bool, np.bool_)) or not isinstance(timeout, numbers.Real):
            raise TypeError(f"DataLoader: timeout must be a number of seconds, got {type(timeout).__name__}")
        self.timeout = float(timeout)
        if not self.timeout >= 0:
            raise ValueError(f"DataLoader: timeout must be >= 0 seconds (0: wait as long as it takes), got {timeout}")
        self.worker_init_fn = _check_callable(worker_init_fn, "worker_init_fn")
        self.multiprocessing_context = _check_context(context, self.num_workers)

    def __len__(self) -> int:
        # A sampler without a length (a generator, say) makes len() a TypeError, as in PyTorch.
        return len(self.batch_sampler)  # type: ignore[arg-type]  # see above

    def __iter__(self) -> Iterator[Any]:
        # The seed and the order are drawn here, when the epoch starts, not at the first next();
        # the batches' indices are then read from the order as the batches are made.
        base_seed = int(_random.rng_of(self.generator).integers(0, 2**63 - 1))
        chunks = epoch_chunks(self.batch_sampler)
        if not self.num_workers:
            if self.collate_fn is default_collate and _gathers(self.dataset):
                return _gathered_batches(self.dataset.tensors, chunks)
            return _collated_batches(self.dataset, self.collate_fn, chunks)
        batches = (order[start:stop] for order, bounds in chunks for start, stop in bounds)
        pool = self._pool
        if pool is None or pool.closed:
            pool = self._start_workers(base_seed)
            if self.persistent_workers:
                self._pool = pool
        assert self.prefetch_factor is not None
        return WorkerEpoch(
            pool,
            batches,
            self.prefetch_factor,
            self.timeout,
            owns_pool=not self.persistent_workers,
            length=self.__len__,
        )

    def _start_workers(self, base_seed: int) -> WorkerPool:
        return WorkerPool(
            self.num_workers,
            self.multiprocessing_context,
            base_seed,
            fetch,
            self.dataset,
            self.collate_fn,
            self.worker_init_fn,
        )

    def __repr__(self) -> str:
        workers = f", num_workers={self.num_workers}" if self.num_workers else ""
        return (
            f"DataLoader({type(self.dataset).__name__} of {len(self.dataset)}, batch_size={self.batch_size}, "
            f"shuffle={self.shuffle}, drop_last={self.drop_last}{workers})"
        )


def fetch(dataset: MapDataset, collate_fn: CollateFn, indices: Indices) -> Any:
    """One batch, as a worker makes it: the samples at ``indices`` merged by ``collate_fn``."""
    if collate_fn is default_collate and _gathers(dataset):
        return next(_gathered_batches(dataset.tensors, iter([(indices, [(0, len(indices))])])))
    return collate_fn([dataset[i] for i in indices.tolist()])


def _gathers(dataset: object) -> TypeGuard[TensorDataset]:
    # A subclass that overrides __getitem__ (e.g. to transform samples) must be read item by item.
    return isinstance(dataset, TensorDataset) and type(dataset).__getitem__ is TensorDataset.__getitem__


def _gathered_batches(tensors: Sequence[Tensor], chunks: Iterator[Chunk]) -> Iterator[list[Tensor]]:
    arrays = [t._data for t in tensors]
    takes = [backend_of(data).xp.take for data in arrays]
    for order, bounds in chunks:
        # A chunk of the order (up to 65536 indices), uploaded once per device that holds a dataset tensor.
        on_device: dict[str, Array] = {}
        indices: list[Array] = []
        for data in arrays:
            backend = backend_of(data)
            key = backend.device(data)
            if key not in on_device:
                on_device[key] = backend.asarray(order, np.int64, data)
            indices.append(on_device[key])
        for start, stop in bounds:
            # take() copies, so editing a batch in place never changes the dataset or another batch.
            yield [
                wrap(take(data, idx[start:stop], axis=0))
                for take, data, idx in zip(takes, arrays, indices, strict=True)
            ]


def _collated_batches(dataset: MapDataset, collate_fn: CollateFn, chunks: Iterator[Chunk]) -> Iterator[Any]:
    for order, bounds in chunks:
        for start, stop in bounds:
            yield collate_fn([dataset[i] for i in order[start:stop].tolist()])


def _check_dataset(dataset: object) -> None:
    if dataset is None or isinstance(dataset, (str, bytes)):
        raise TypeError(f"DataLoader: dataset must be a dataset (e.g. a TensorDataset), got {type(dataset).__name__}")
    missing = [name for name in ("__len__", "__getitem__") if not hasattr(type(dataset), name)]
    if missing:
        raise TypeError(
            f"DataLoader: dataset must define __len__ and __getitem__ (a map-style dataset such as "
            f"TensorDataset); {type(dataset).__name__} has no {' or '.join(missing)}"
        )
    try:
        len(dataset)  # type: ignore[arg-type]  # its type has __len__: checked above, which mypy cannot follow
    except NotImplementedError:
        raise TypeError(f"DataLoader: dataset {type(dataset).__name__} does not implement __len__") from None


def _check_flag(value: object, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"DataLoader: {name} must be True or False, got {type(value).__name__}")
    return bool(value)


def _check_callable(value: _T, name: str) -> _T:
    if value is not None and not callable(value):
        raise TypeError(f"DataLoader: {name} must be callable or None, got {type(value).__name__} {value!r:.40}")
    return value


def _check_iterable(value: _T, name: str, what: str) -> _T:
    if value is not None and not hasattr(type(value), "__iter__"):
        raise TypeError(f"DataLoader: {name} must be {what} or None, got {type(value).__name__}")
    return value


def _check_prefetch(prefetch_factor: object, num_workers: int) -> int | None:
    if prefetch_factor is None:
        return 2 if num_workers else None  # PyTorch's default, and None without workers
    if not num_workers:
        raise ValueError(
            "DataLoader: prefetch_factor needs num_workers > 0 (it is how many batches each worker loads "
            "ahead); leave it None with num_workers=0"
        )
    return int_at_least("DataLoader", "prefetch_factor", prefetch_factor, 1)


def _check_context(context: object, num_workers: int) -> multiprocessing.context.BaseContext | None:
    if context is None:
        return None
    if not num_workers:
        raise ValueError("DataLoader: multiprocessing_context needs num_workers > 0 (got num_workers=0)")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(f"DataLoader: multiprocessing_context must be one of {methods}, got {context!r}")
        return multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError(
            "DataLoader: multiprocessing_context must be a start method name ('spawn', ...) or a "
            f"multiprocessing context, got {type(context).__name__}"
        )
    return context
