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
from multiprocessing.reduction import ForkingPickler

import numpy as np

from .. import random as _random
from ..tensor import Tensor, wrap

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
    dataset: object


_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a ``DataLoader`` worker process, its ``WorkerInfo``; in the main process, None.

    As ``torch.utils.data.get_worker_info``: a ``worker_init_fn`` or the dataset can use ``id`` to
    read its own shard, or ``seed`` to seed another library.
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


def worker_loop(worker_id, num_workers, base_seed, fetch, dataset, collate_fn, init_fn, tasks, results):
    """A worker process's body: ``tasks`` brings ``(epoch, batch, indices)`` or None (stop);
    ``results`` takes ``(epoch, batch, batch_or_WorkerError)``."""
    global _info
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    try:
        _info = WorkerInfo(worker_id, num_workers, seed_worker(base_seed, worker_id), dataset)
        init_error = None
        if init_fn is not None:
            try:
                init_fn(worker_id)
            except Exception:
                init_error = WorkerError.capture(worker_id, " in worker_init_fn")
        pending: collections.deque = collections.deque()
        while True:
            if not pending:
                pending.append(tasks.recv())
            while tasks.poll():  # read ahead: a stop message skips the batches queued before it
                pending.append(tasks.recv())
            if any(message is None for message in pending):
                return
            epoch, batch, indices = pending.popleft()
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


def _send(results, epoch, batch, reply, worker_id) -> None:
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

    def __init__(self, worker_id: int, pid: int, exc_type, type_name: str, where: str, text: str):
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
            sendable = exc_type
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


def to_host(batch):
    """``batch`` with each Tensor (in dicts, lists and tuples) replaced by a ``HostTensor``."""
    return _map_tensors(batch, Tensor, lambda t: HostTensor(t.numpy(), t.requires_grad))


def from_host(batch):
    """The inverse of ``to_host``: CPU Tensors again."""
    return _map_tensors(batch, HostTensor, _tensor_of)


def _tensor_of(host: HostTensor) -> Tensor:
    tensor = wrap(host.array)
    return tensor.requires_grad_() if host.requires_grad else tensor


def _map_tensors(value, kind, convert):
    if isinstance(value, kind):
        return convert(value)
    if isinstance(value, dict):
        items = {key: _map_tensors(item, kind, convert) for key, item in value.items()}
        return items if type(value) is dict else _same_type(value, items)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(_map_tensors(item, kind, convert) for item in value))
    if type(value) in (list, tuple):
        return type(value)(_map_tensors(item, kind, convert) for item in value)
    return value


def _same_type(example, items):
    try:
        return type(example)(items)
    except TypeError:  # a dict subclass that cannot be built from a dict
        return items
