"""DataLoader(num_workers=n): real worker processes, batches in the in-process order, PyTorch's
per-worker seeding, worker_init_fn, persistent workers, errors raised in the main process (an
exception, a killed worker, a timeout, something unpicklable) and no process left behind.

The datasets are module-level classes, so 'spawn' and 'forkserver' (Python 3.14's default on
Linux) can pickle them.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import random
import signal
import time

import numpy as np
import pytest
from index_data import Counted

import tinytensor as tt
from tinytensor.data import DataLoader, Dataset, TensorDataset, get_worker_info
from tinytensor.dtypes import numpy_dtype

pytestmark = [
    # Python 3.12+ warns when it forks a process that has threads (here: the test runner's, e.g.
    # PyTorch's thread pool); the workers only read the dataset, as PyTorch's forked workers do.
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"),
]


@pytest.fixture(scope="module", autouse=True)
def _preloaded_forkserver():
    # Under 'forkserver' (Python 3.14's default on Linux) each worker forks from a server process;
    # with tinytensor and this module loaded there, a worker starts without importing them.
    if multiprocessing.get_context().get_start_method() == "forkserver":
        multiprocessing.set_forkserver_preload(["tinytensor", __name__])


class Probe(Dataset[dict]):
    """Sample i: its index, the process and worker that read it, and one draw from each stream
    a worker seeds (Python's random, numpy's legacy global state, tinytensor's generator)."""

    def __init__(self, n=8):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        return {
            "index": i,
            "pid": os.getpid(),
            "worker": -1 if info is None else info.id,
            "seed": -1 if info is None else info.seed,
            "inits": ",".join(map(str, _INITS)),
            "random": random.random(),
            "numpy": float(np.random.random_sample()),
            "tt": float(tt.rand(1).item()),
        }


_INITS: list = []  # worker_init_fn's calls, in the worker process that made them


def _record_init(worker_id):
    info = get_worker_info()
    assert info is not None and info.id == worker_id and info.num_workers == 2
    assert isinstance(info.dataset, Probe)
    _INITS.append(worker_id)


class NeedsTwoArgs(Exception):
    def __init__(self, code, detail):
        super().__init__(f"{code}: {detail}")


_ERRORS = {"ValueError": lambda: ValueError("bad sample"), "KeyError": lambda: KeyError("missing"),
           "NeedsTwoArgs": lambda: NeedsTwoArgs(7, "custom")}  # fmt: skip


class Failing(Dataset):
    """Raises the error named ``error`` at index 5; sample i is i otherwise."""

    def __init__(self, error):
        self.error = error

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise _ERRORS[self.error]()
        return i


class Dies(Dataset):
    """The process reading index 3 kills itself."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


class Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(0.5)
        return i


class Stalls(Dataset):
    """Every read hangs (far longer than any test waits)."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(60)
        return i


class HoldsALambda(Dataset):
    def __init__(self):
        self.transform = lambda x: x

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.transform(i)


def _unpicklable_batch(samples):
    return {"fn": lambda: samples}


def _no_children():
    deadline = time.monotonic() + 15.0  # generous: an emulated machine ends processes slowly
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.01)
    return multiprocessing.active_children() == []


def _values(batch):
    """A batch of Probe samples without what depends on the process (for comparisons)."""
    return batch["index"].tolist()


# ---------------------------------------------------------------------------- processes and order
def test_workers_are_other_processes_and_yield_the_in_process_batches():
    loader = DataLoader(Probe(), batch_size=2, num_workers=2)
    batches = list(loader)
    assert [_values(b) for b in batches] == [_values(b) for b in DataLoader(Probe(), batch_size=2)]
    # Batch k comes from worker k % 2, a process other than this one.
    assert [set(b["worker"].tolist()) for b in batches] == [{0}, {1}, {0}, {1}]
    pids = {pid for b in batches for pid in b["pid"].tolist()}
    assert len(pids) == 2 and os.getpid() not in pids
    assert all(isinstance(b["index"], tt.Tensor) and b["index"].device == "cpu" for b in batches)
    assert get_worker_info() is None  # in the main process
    assert _no_children()


def test_a_tensor_dataset_gives_the_same_shuffled_batches_and_stream_with_workers():
    x = tt.tensor(np.arange(40.0, dtype=np.float32).reshape(20, 2))
    y = tt.tensor(np.arange(20))

    def epoch(num_workers):
        tt.manual_seed(3)
        loader = DataLoader(TensorDataset(x, y), batch_size=6, shuffle=True, num_workers=num_workers)
        batches = [(xb.numpy(), yb.numpy(), xb.dtype, xb.device) for xb, yb in loader]
        return batches, tt.rand(1).item()  # the global stream after the epoch

    (alone, after_alone), (workers, after_workers) = epoch(0), epoch(3)
    assert [b[1].tolist() for b in alone] == [b[1].tolist() for b in workers] != [list(range(6))]
    for (xa, _, da, _), (xw, _, dw, device) in zip(alone, workers, strict=True):
        np.testing.assert_array_equal(xa, xw)
        assert da == dw and device == "cpu"
    assert after_alone == after_workers


@pytest.mark.parametrize("device", ["cpu", "strict:device1"])
def test_batches_from_workers_are_cpu_tensors_of_the_same_values(device):
    if device.startswith("strict"):
        pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    x = tt.tensor(np.arange(12.0, dtype=np.float32).reshape(6, 2), device=device)
    y = tt.tensor(np.arange(6), device=device)
    kwargs = {"batch_size": 4, "pin_memory": True}  # pin_memory: accepted, no effect
    for (xa, ya), (xw, yw) in zip(DataLoader(TensorDataset(x, y), **kwargs),
                                  DataLoader(TensorDataset(x, y), num_workers=2, **kwargs), strict=True):  # fmt: skip
        assert xa.device == device and xw.device == yw.device == "cpu"
        assert (xw.dtype, yw.dtype) == (numpy_dtype(xa.dtype), numpy_dtype(ya.dtype)) and not xw.requires_grad
        np.testing.assert_array_equal(xw.numpy(), xa.numpy())
        np.testing.assert_array_equal(yw.numpy(), ya.numpy())


def test_a_batch_sampler_drives_workers_too():
    x = tt.tensor(np.arange(10.0))
    loader = DataLoader(TensorDataset(x), batch_sampler=[[9, 0], [4], [1, 2, 3]], num_workers=2)
    assert [b[0].tolist() for b in loader] == [[9.0, 0.0], [4.0], [1.0, 2.0, 3.0]]


# ---------------------------------------------------------------------------- seeds and init
def test_workers_are_seeded_as_pytorch_seeds_them(torch):
    from torch.utils.data._utils.worker import _generate_state

    def first_draws(seed):
        loader = DataLoader(Probe(4), batch_size=1, num_workers=2, generator=tt.Generator().manual_seed(seed))
        return [{k: b[k].tolist()[0] for k in ("worker", "seed", "random", "numpy", "tt")} for b in loader][:2]

    draws = first_draws(5)
    base_seed = int(tt.Generator().manual_seed(5).rng.integers(0, 2**63 - 1))  # one draw per epoch
    for worker_id, d in enumerate(draws):  # samples 0 and 1: each worker's first draws
        assert d["worker"] == worker_id and d["seed"] == base_seed + worker_id
        assert d["random"] == random.Random(base_seed + worker_id).random()
        assert d["numpy"] == np.random.RandomState(_generate_state(base_seed, worker_id)).random_sample()
        tt.manual_seed(base_seed + worker_id)
        assert d["tt"] == tt.rand(1).item()
    assert draws[0]["random"] != draws[1]["random"] and draws[0]["tt"] != draws[1]["tt"]
    assert first_draws(5) == draws and first_draws(6) != draws


def test_the_global_seed_makes_worker_draws_repeatable():
    def draws():
        return [(b["worker"].item(), b["random"].item(), b["tt"].item()) for b in DataLoader(Probe(4), num_workers=2)]

    tt.manual_seed(11)
    first, second_epoch = draws(), draws()
    tt.manual_seed(11)
    assert draws() == first != second_epoch


def test_worker_init_fn_runs_once_in_each_worker():
    loader = DataLoader(Probe(), batch_size=2, num_workers=2, worker_init_fn=_record_init)
    inits = {b["worker"][0].item(): b["inits"] for b in loader}
    assert inits == {0: ["0", "0"], 1: ["1", "1"]}  # each worker: one call, its own
    assert _INITS == []  # never called in this process


def test_persistent_workers_keep_their_processes_across_epochs():
    def pids(loader):
        return {pid for b in loader for pid in b["pid"].tolist()}

    loader = DataLoader(Probe(), batch_size=2, num_workers=2, persistent_workers=True)
    first = pids(loader)
    assert pids(loader) == first and len(first) == 2
    assert len(multiprocessing.active_children()) == 2  # kept between epochs
    fresh = DataLoader(Probe(), batch_size=2, num_workers=2)
    assert pids(fresh).isdisjoint(pids(fresh))  # new workers each epoch
    del loader
    gc.collect()
    assert _no_children()


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize("error,raised,text", [
    ("ValueError", ValueError, "ValueError: bad sample"),
    ("KeyError", KeyError, "KeyError: 'missing'"),
    ("NeedsTwoArgs", RuntimeError, "NeedsTwoArgs: 7: custom"),  # cannot be rebuilt from a message
])  # fmt: skip
def test_an_exception_in_a_worker_is_raised_with_its_worker_and_traceback(error, raised, text):
    loader = DataLoader(Failing(error), batch_size=2, num_workers=2)  # index 5: batch 2, worker 0
    with pytest.raises(raised) as info:
        list(loader)
    message = str(info.value)
    assert message.startswith(f"Caught {error} in DataLoader worker 0 (pid ")
    assert "Original Traceback (most recent call last):" in message
    assert "in __getitem__\n    raise _ERRORS[self.error]()" in message and message.endswith(f"{text}\n")
    assert _no_children()


def test_an_exception_in_worker_init_fn_is_raised():
    loader = DataLoader(Probe(), num_workers=2, worker_init_fn=_record_init_fails)
    with pytest.raises(
        ZeroDivisionError, match=r"Caught ZeroDivisionError in DataLoader worker 0 .* in worker_init_fn"
    ):
        next(iter(loader))
    assert _no_children()


def _record_init_fails(worker_id):
    return 1 // 0


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_worker_raises_instead_of_hanging():
    loader = DataLoader(Dies(), batch_size=2, num_workers=2)  # index 3: batch 1, worker 1
    with pytest.raises(RuntimeError, match=r"DataLoader worker 1 \(pid \d+\) was killed by signal SIGKILL"):
        list(loader)
    assert _no_children()


def test_timeout_bounds_the_wait_for_a_batch():
    loader = DataLoader(Slow(), num_workers=1, timeout=0.05)
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.05 seconds"):
        next(iter(loader))
    assert _no_children()


def test_timeout_raises_at_the_timeout_and_the_workers_stop_after():
    loader = DataLoader(Stalls(), num_workers=2, timeout=1.0)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 1.0 seconds"):
        next(iter(loader))
    # Before: the workers' 5 s grace to stop came first, and the error after 6 s.
    assert time.monotonic() - start < 3.0
    assert _no_children()  # the stalled workers are terminated once their grace is over


def test_workers_get_batches_as_they_need_them():
    # The sampler is read as batches are handed out, not all at the start of the epoch.
    sampler = Counted(1000)
    epoch = iter(DataLoader(Probe(1000), sampler=sampler, batch_size=2, num_workers=1, prefetch_factor=2))
    assert _values(next(epoch)) == [0, 1]
    assert sampler.read <= 8
    assert len(epoch) == 500
    assert sum(len(_values(b)) for b in epoch) == 998 and sampler.read == 1000
    assert _no_children()


def test_an_unpicklable_batch_is_an_error_not_a_hang():
    loader = DataLoader(Probe(), num_workers=1, collate_fn=_unpicklable_batch)
    with pytest.raises(
        (pickle.PicklingError, AttributeError), match=r"Caught .* in DataLoader worker 0 .* sending its batch"
    ):
        next(iter(loader))
    assert _no_children()


@pytest.mark.parametrize("part", ["dataset", "collate_fn", "worker_init_fn"])
def test_what_spawn_cannot_pickle_is_named(part):
    kwargs = {
        "dataset": {"dataset": HoldsALambda()},
        "collate_fn": {"dataset": Probe(), "collate_fn": lambda samples: samples},
        "worker_init_fn": {"dataset": Probe(), "worker_init_fn": lambda worker_id: None},
    }[part]
    loader = DataLoader(**kwargs, num_workers=2, multiprocessing_context="spawn")
    where = "dataset.transform (builtins.function)" if part == "dataset" else f"{part} (builtins.function)"
    with pytest.raises(pickle.PicklingError) as info:
        iter(loader)
    message = str(info.value)
    assert f"DataLoader: cannot send the {part} to the worker processes: {where} cannot be pickled" in message
    assert "With the 'spawn' start method" in message and "at module level" in message and "num_workers=0" in message
    assert _no_children()


# ---------------------------------------------------------------------------- start methods, cleanup
def test_spawned_workers_give_the_same_batches():
    loader = DataLoader(Probe(6), batch_size=2, num_workers=1, multiprocessing_context="spawn")  # one: spawn is slow
    assert [_values(b) for b in loader] == [[0, 1], [2, 3], [4, 5]]
    assert _no_children()


def test_no_worker_outlives_an_abandoned_or_collected_epoch():
    loader = DataLoader(Probe(), batch_size=1, num_workers=2)
    epoch = iter(loader)
    assert next(epoch)["index"].tolist() == [0]
    assert len(multiprocessing.active_children()) == 2
    del epoch
    gc.collect()
    assert _no_children()
    never_started = iter(loader)  # workers start with the epoch, before the first batch
    del never_started
    assert _no_children()
