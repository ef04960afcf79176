"""What runs inside a ``DataLoader`` worker process, and what crosses the process boundary.

A worker is seeded as PyTorch seeds its workers (``seed_worker``), runs ``worker_init_fn``, then
answers index lists from the main process with collated batches until told to stop (or until its
parent is gone). Tensors travel as host numpy arrays and are wrapped again on arrival, so batches
from workers are CPU Tensors; an exception travels as its traceback text (``WorkerError``).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import pickle
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import numpy as np

from .. import random as _random
from ..tensor import Tensor, wrap

if TYPE_CHECKING:
    import numpy.typing as npt

    from .collate import CollateFn
    from .dataset import MapDataset

    Indices: TypeAlias = npt.NDArray[np.int64]  # the samples of one batch, as positions in the dataset
    # A message to a worker: (epoch, batch number, the batch's indices); None tells it to stop.
    Task: TypeAlias = tuple[int, int, Indices] | None
    # What makes a batch in a worker: fetch(dataset, collate_fn, indices) (dataloader.fetch).
    Fetch: TypeAlias = Callable[[MapDataset, CollateFn, Indices], object]

_K = TypeVar("_K")

# How often a worker checks that the process that started it is still alive (seconds).
CHECK_INTERVAL = 1.0
_MASK32 = 0xFFFFFFFF


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: its ``id`` (0 to ``num_workers - 1``),
    ``num_workers``, the ``seed`` it was given, and ``dataset``, this process's copy of the dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: MapDataset


_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a ``DataLoader`` worker process, its ``WorkerInfo``; in the main process, None.

    As ``torch.utils.data.get_worker_info``: a ``worker_init_fn`` or the dataset can use ``id`` to
    read its own shard, or ``seed`` to seed another library.

    Returns
    -------
    WorkerInfo or None
        In a worker: its ``id`` (0 to ``num_workers - 1``), ``num_workers``, the ``seed`` it was
        given (``base_seed + id``) and ``dataset``, the worker's own copy of the dataset.
    """
    return _info


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed this process's random streams as PyTorch's ``_worker_loop`` does; returns the seed.

    Python's ``random`` and tinytensor's global generator get ``base_seed + worker_id``. numpy's
    legacy global state gets four words mixed from both (PyTorch's ``_generate_state``, which is
    numpy's ``SeedSequence``): it is also a Mersenne Twister, so the same seed would repeat
    ``random``'s stream.
    """
    seed = base_seed + worker_id
    random.seed(seed)
    _random.manual_seed(seed)
    entropy = [worker_id, base_seed & _MASK32, base_seed >> 32, 0]
    np.random.seed(np.random.SeedSequence(entropy).generate_state(4))
    return seed


def worker_loop(
    worker_id: int,
    num_workers: int,
    base_seed: int,
    fetch: Fetch,
    dataset: MapDataset,
    collate_fn: CollateFn,
    init_fn: Callable[[int], object] | None,
    tasks: Connection,
    results: Connection,
) -> None:
    """A worker process's body: ``tasks`` brings ``(epoch, batch, indices)`` or None (stop);
    ``results`` takes ``(epoch, batch, batch_or_WorkerError)``."""
    global _info
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    try:
        _info = WorkerInfo(worker_id, num_workers, seed_worker(base_seed, worker_id), dataset)
        init_error: WorkerError | None = None
        if init_fn is not None:
            try:
                init_fn(worker_id)
            except Exception:
                init_error = WorkerError.capture(worker_id, " in worker_init_fn")
        pending: collections.deque[Task] = collections.deque()
        while True:
            if not pending:
                pending.append(tasks.recv())
            while tasks.poll():  # read ahead: a stop message skips the batches queued before it
                pending.append(tasks.recv())
            if any(message is None for message in pending):
                return
            task = pending.popleft()
            assert task is not None  # stop messages returned above
            epoch, batch, indices = task
            reply: object
            if init_error is not None:
                reply = init_error
            else:
                try:
                    reply = to_host(fetch(dataset, collate_fn, indices))
                except Exception:
                    reply = WorkerError.capture(worker_id)
            _send(results, epoch, batch, reply, worker_id)
    except (KeyboardInterrupt, EOFError, ConnectionError):
        pass  # Ctrl-C reaches the main process too, or it closed the pipes: exit quietly


def _exit_when_orphaned(parent: int) -> None:
    # A thread, so that a worker whose parent died (without stopping it) exits even while it is
    # blocked: sending a batch nobody reads, or inside the dataset's code.
    while True:
        time.sleep(CHECK_INTERVAL)
        if os.getppid() != parent:
            os._exit(0)


def _send(results: Connection, epoch: int, batch: int, reply: object, worker_id: int) -> None:
    # Pickled here rather than inside send(), so an unpicklable batch becomes an error the main
    # process raises instead of a batch that never arrives.
    try:
        data = ForkingPickler.dumps((epoch, batch, reply))
    except Exception:
        error = WorkerError.capture(worker_id, " sending its batch (a batch must be picklable)")
        data = ForkingPickler.dumps((epoch, batch, error))
    results.send_bytes(data)


class WorkerError:
    """An exception raised in a worker, sent as text (a traceback's frames cannot be pickled)."""

    # exc_type: the exception's class where pickle can send it, else None. In the main process it
    # is whatever pickle finds under that name, so exception() checks what calling it makes.
    def __init__(
        self, worker_id: int, pid: int, exc_type: Callable[[str], object] | None, type_name: str, where: str, text: str
    ):
        self.worker_id, self.pid, self.exc_type = worker_id, pid, exc_type
        self.type_name, self.where, self.text = type_name, where, text

    @classmethod
    def capture(cls, worker_id: int, where: str = "") -> WorkerError:
        """The exception being handled, with its traceback."""
        exc_type, exc, _ = sys.exc_info()
        assert exc_type is not None and exc is not None
        text = "".join(traceback.format_exception(exc))
        try:
            pickle.dumps(exc_type)
            sendable: type[BaseException] | None = exc_type
        except Exception:  # e.g. a class defined inside a function: re-raised as RuntimeError
            sendable = None
        return cls(worker_id, os.getpid(), sendable, exc_type.__qualname__, where, text)

    def exception(self) -> BaseException:
        """The exception to raise in the main process: the original type where it can be rebuilt
        from a message, else RuntimeError, with the worker's traceback in the message."""
        message = (
            f"Caught {self.type_name} in DataLoader worker {self.worker_id} (pid {self.pid}){self.where}.\n"
            f"Original {self.text}"
        )
        if self.exc_type is KeyError:  # KeyError's str() is the repr of its argument
            message = _KeyErrorMessage(message)
        try:
            error = (self.exc_type or RuntimeError)(message)
        except Exception:  # an exception type whose constructor needs other arguments
            error = RuntimeError(message)
        return error if isinstance(error, BaseException) else RuntimeError(message)


class _KeyErrorMessage(str):
    def __repr__(self) -> str:
        return str(self)


class HostTensor:
    """A Tensor crossing the process boundary: its values as a numpy array."""

    __slots__ = ("array", "requires_grad")

    def __init__(self, array: np.ndarray, requires_grad: bool):
        self.array, self.requires_grad = array, requires_grad


def to_host(batch: object) -> object:
    """``batch`` with each Tensor (in dicts, lists and tuples) replaced by a ``HostTensor``."""
    return _map_tensors(batch, Tensor, lambda t: HostTensor(t.numpy(), t.requires_grad))


def from_host(batch: object) -> Any:
    """The inverse of ``to_host``: CPU Tensors again (Any: the batch is whatever ``collate_fn`` made)."""
    return _map_tensors(batch, HostTensor, _tensor_of)


def _tensor_of(host: HostTensor) -> Tensor:
    tensor = wrap(host.array)
    return tensor.requires_grad_() if host.requires_grad else tensor


def _map_tensors(value: object, kind: type[_K], convert: Callable[[_K], object]) -> object:
    if isinstance(value, kind):
        return convert(value)
    if isinstance(value, dict):
        items = {key: _map_tensors(item, kind, convert) for key, item in value.items()}
        return items if type(value) is dict else _same_type(value, items)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        make: Callable[..., object] = type(value)  # a namedtuple class takes its fields as arguments
        return make(*(_map_tensors(item, kind, convert) for item in value))
    if type(value) is list:
        return [_map_tensors(item, kind, convert) for item in value]
    if type(value) is tuple:
        return tuple(_map_tensors(item, kind, convert) for item in value)
    return value


def _same_type(example: dict[Any, object], items: dict[Any, object]) -> dict[Any, object]:
    try:
        return type(example)(items)
    except TypeError:  # a dict subclass that cannot be built from a dict
        return items
