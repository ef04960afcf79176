"""The main process's side of ``DataLoader(num_workers=n)``: worker processes, batches in order.

``WorkerPool`` starts n processes (``multiprocessing``, with the loader's start method) and talks
to each over two pipes: index lists out, pickled batches back. ``WorkerEpoch`` hands batch k to
worker k % n, keeps ``prefetch_factor`` batches per worker in flight and yields them in order, so
an epoch's batches are those of ``num_workers=0``. Waiting for a batch also watches each
process's sentinel: a worker that dies raises an error instead of a hang. ``close()``, the end of
an epoch, an error or garbage collection stops the processes and reaps them.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import pickle
import signal
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from multiprocessing.reduction import ForkingPickler
from typing import TYPE_CHECKING, Any, NoReturn

from .workers import WorkerError, from_host, worker_loop

if TYPE_CHECKING:
    from .collate import CollateFn
    from .dataset import MapDataset
    from .workers import Fetch, Indices, Task

# How long workers get to exit after the stop message before they are terminated (seconds).
_GRACE = 5.0


class WorkerPool:
    """``num_workers`` started worker processes and the pipes to them."""

    def __init__(
        self,
        num_workers: int,
        context: BaseContext | None,
        base_seed: int,
        fetch: Fetch,
        dataset: MapDataset,
        collate_fn: CollateFn,
        init_fn: Callable[[int], object] | None,
    ):
        context = context or multiprocessing.get_context()
        self.size, self.epoch = num_workers, 0
        self._procs: list[BaseProcess] = []
        self._tasks: list[Connection] = []
        self._results: list[Connection] = []
        # A finalizer, not __del__: the processes are stopped even when the pool is never closed
        # (or at interpreter exit), and it reads the lists as they are filled below.
        self._finalizer = weakref.finalize(self, _stop, self._procs, self._tasks, self._results)
        for worker_id in range(num_workers):
            task_reader, task_writer = multiprocessing.Pipe(duplex=False)
            result_reader, result_writer = multiprocessing.Pipe(duplex=False)
            args = (worker_id, num_workers, base_seed, fetch, dataset, collate_fn, init_fn)
            # Each start method's context class defines Process; typeshed's BaseContext does not.
            process = context.Process(  # type: ignore[attr-defined]
                target=worker_loop,
                args=(*args, task_reader, result_writer),
                name=f"DataLoader worker {worker_id}",
                daemon=True,
            )
            try:
                process.start()
            except Exception as exc:
                for conn in (task_reader, task_writer, result_reader, result_writer):
                    conn.close()
                self.close()
                method = context.get_start_method()
                error = _pickling_error(method, dataset=dataset, collate_fn=collate_fn, worker_init_fn=init_fn)
                if error is None:
                    raise
                raise error from exc
            # The child holds its own ends now; closing ours lets a pipe report EOF when it exits.
            task_reader.close()
            result_writer.close()
            self._procs.append(process)
            self._tasks.append(task_writer)
            self._results.append(result_reader)

    @property
    def closed(self) -> bool:
        """Whether the workers have been stopped (by ``close()``, an error or garbage collection)."""
        return not self._finalizer.alive

    def submit(self, worker_id: int, message: Task) -> None:
        """Send ``message`` to worker ``worker_id``; a worker that has died is noticed by ``receive()``."""
        try:
            self._tasks[worker_id].send(message)
        except OSError:  # that worker died: receive() reports it when its batch is awaited
            pass

    def receive(self, timeout: float) -> tuple[int, int, object]:
        """The next ``(epoch, batch, reply)`` from any worker. Raises RuntimeError, and closes the
        pool, when a worker has died or nothing came within ``timeout`` seconds (0: no limit)."""
        deadline = time.monotonic() + timeout if timeout else None
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            waits = self._results + [p.sentinel for p in self._procs]
            ready = {id(r) for r in multiprocessing.connection.wait(waits, left)}
            for worker_id, conn in enumerate(self._results):
                if id(conn) in ready:
                    try:
                        reply: tuple[int, int, object] = conn.recv()  # a worker_loop's (epoch, batch, reply)
                        return reply
                    except (EOFError, OSError):  # the worker exited, closing its end
                        self._died(worker_id)
            for worker_id, process in enumerate(self._procs):
                if not process.is_alive() and not self._results[worker_id].poll():
                    self._died(worker_id)
            if not ready:
                # Raise at the timeout: the grace the workers get to stop (a stalled one uses all of it)
                # runs after, in the background, as PyTorch stops its workers after raising.
                self._close_in_background()
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds waiting for a batch from its workers")

    def _died(self, worker_id: int) -> NoReturn:
        process = self._procs[worker_id]
        process.join(_GRACE)
        self.close()
        raise RuntimeError(_death_message(worker_id, process))

    def close(self) -> None:
        """Stop the workers (each finishes the batch in hand) and reap them; idempotent."""
        self._finalizer()

    def _close_in_background(self) -> None:
        # Detached first, so the pool reads as closed and a close() now returns at once. Not a
        # daemon thread: the interpreter waits for it at exit, so the workers are still reaped.
        detached = self._finalizer.detach()
        if detached is not None:
            _, stop, args, _ = detached
            threading.Thread(target=stop, args=args, name="DataLoader worker shutdown").start()


def _stop(procs: list[BaseProcess], tasks: list[Connection], results: list[Connection]) -> None:
    for conn in tasks:
        try:
            conn.send(None)
        except OSError:  # that worker is gone already
            pass
    # Read (and drop) what the workers still send: one blocked on a full pipe could not stop.
    deadline = time.monotonic() + _GRACE
    pipes = dict(enumerate(results))  # worker -> its result pipe, until it reports EOF
    while time.monotonic() < deadline:
        alive = [k for k, process in enumerate(procs) if process.is_alive()]
        if not alive:
            break
        waits: list[Connection | int] = [procs[k].sentinel for k in alive]
        waits += [pipes[k] for k in alive if k in pipes]
        ready = {id(r) for r in multiprocessing.connection.wait(waits, max(0.0, deadline - time.monotonic()))}
        for k in alive:
            if k in pipes and id(pipes[k]) in ready:
                try:
                    pipes[k].recv_bytes()
                except (EOFError, OSError):
                    del pipes[k]
    for process in procs:
        if process.is_alive():
            process.terminate()
        process.join(_GRACE)
        if process.is_alive():
            process.kill()
            process.join()
    for conn in tasks + results:
        conn.close()


class WorkerEpoch:
    """An epoch's batches from a pool: batch k from worker k % n, yielded in order.

    ``owns_pool``: the pool is this epoch's (closed when it ends, fails or is collected), not a
    loader's persistent one.
    """

    def __init__(
        self,
        pool: WorkerPool,
        batches: Iterator[Indices],
        prefetch_factor: int,
        timeout: float,
        owns_pool: bool,
        length: Callable[[], int],
    ):
        pool.epoch += 1
        self._pool: WorkerPool | None = pool
        self._epoch, self._batches, self._timeout, self._owns = pool.epoch, batches, timeout, owns_pool
        self._length = length
        self._next = self._sent = 0
        self._ready: dict[int, object] = {}  # batch number -> reply (a batch or a WorkerError)
        try:
            for _ in range(prefetch_factor * pool.size):
                self._submit()
        except BaseException:  # the sampler failed
            self.close()
            raise

    def _submit(self) -> None:
        # Batches are read from the sampler as they are handed out, not all when the epoch starts.
        assert self._pool is not None
        batch = next(self._batches, None)
        if batch is not None:
            self._pool.submit(self._sent % self._pool.size, (self._epoch, self._sent, batch))
            self._sent += 1

    def __iter__(self) -> WorkerEpoch:
        return self

    def __len__(self) -> int:
        return self._length()

    def __next__(self) -> Any:
        pool = self._pool
        if pool is None:
            raise StopIteration
        if self._next == self._sent:  # each batch handed out has been yielded: _submit found no more
            self.close()
            raise StopIteration
        if pool.epoch != self._epoch or pool.closed:
            self._pool = None
            raise RuntimeError(
                "DataLoader: this epoch ended when a new one started (persistent_workers serve one epoch at a time)"
            )
        try:
            while self._next not in self._ready:
                epoch, batch, reply = pool.receive(self._timeout)
                if epoch == self._epoch:  # else a batch of an abandoned epoch
                    self._ready[batch] = reply
            reply = self._ready.pop(self._next)
            self._next += 1
            if isinstance(reply, WorkerError):
                raise reply.exception()
            self._submit()
        except BaseException:
            self.close()
            raise
        return from_host(reply)

    def close(self) -> None:
        """End the epoch early; stops the workers unless they are a loader's persistent ones."""
        pool = getattr(self, "_pool", None)  # None too when __init__ failed
        if pool is not None and self._owns:
            pool.close()
        self._pool = None

    def __del__(self) -> None:
        self.close()


def _death_message(worker_id: int, process: BaseProcess) -> str:
    code = process.exitcode
    if code is None:
        how = "closed its pipe"
    elif code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        how = f"was killed by signal {name} (e.g. for using too much memory, or a crash in native code)"
    else:
        how = f"exited with code {code} (e.g. it failed to start: its error output says why)"
    return (
        f"DataLoader worker {worker_id} (pid {process.pid}) {how} while the main process waited for a batch; "
        "with num_workers=0 the dataset runs in this process, where failures are easier to see"
    )


def _pickling_error(method: str, **parts: object) -> Exception | None:
    """Why a worker could not start, when the start method could not pickle one of ``parts``
    (dataset, collate_fn, worker_init_fn): names it, and the attribute or item inside it."""
    for name, value in parts.items():
        if value is None:
            continue
        try:
            ForkingPickler.dumps(value)
        except Exception as error:
            path, culprit = _unpicklable_part(value, name)
            what = f"{path} ({type(culprit).__module__}.{type(culprit).__qualname__})"
            return pickle.PicklingError(
                f"DataLoader: cannot send the {name} to the worker processes: {what} cannot be pickled ({error}). "
                f"With the {method!r} start method each worker receives the dataset, collate_fn and "
                "worker_init_fn pickled: define their classes and functions at module level (not lambdas or "
                "functions defined inside functions), or use num_workers=0 to load in this process "
                "(or multiprocessing_context='fork', on Linux)."
            )
    return None


def _unpicklable_part(value: object, path: str, depth: int = 0) -> tuple[str, object]:
    """The deepest attribute or item of ``value`` that cannot be pickled, and its path."""
    if depth < 5 and not isinstance(value, (type, types.FunctionType, types.MethodType, types.ModuleType)):
        if isinstance(value, dict):
            children = [(f"{path}[{key!r}]", item) for key, item in value.items()]
        elif isinstance(value, (list, tuple)):
            children = [(f"{path}[{k}]", item) for k, item in enumerate(value)]
        else:
            children = [(f"{path}.{key}", item) for key, item in getattr(value, "__dict__", {}).items()]
        for child_path, child in children:
            try:
                ForkingPickler.dumps(child)
            except Exception:
                return _unpicklable_part(child, child_path, depth + 1)
    return path, value
