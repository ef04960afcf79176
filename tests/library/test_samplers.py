"""Samplers (SequentialSampler, RandomSampler, SubsetRandomSampler, BatchSampler) as PyTorch's:
what they yield, their errors, DataLoader's default samplers and its sampler option errors; and
that they are lazy: a DataLoader over 10**8 samples starts without a Python object per sample, and
reads its sampler as it makes batches (worker processes: test_data_workers.py)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from index_data import Counted, Numbers

import tinytensor as tt
from tinytensor.data import (
    BatchSampler,
    DataLoader,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    TensorDataset,
)


def _gen(seed):
    return tt.Generator().manual_seed(seed)


# ---------------------------------------------------------------------------- what they yield
@pytest.mark.parametrize("n", [0, 1, 7, 10])
@pytest.mark.parametrize("batch_size", [1, 3, 10, 11])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_batches_as_pytorchs(torch, n, batch_size, drop_last):
    from torch.utils.data import BatchSampler as TorchBatchSampler
    from torch.utils.data import SequentialSampler as TorchSequentialSampler

    theirs = TorchBatchSampler(TorchSequentialSampler(range(n)), batch_size, drop_last)
    for sampler in (SequentialSampler(range(n)), range(n), np.arange(n), list(range(n)), Counted(n)):
        ours = BatchSampler(sampler, batch_size, drop_last)
        assert list(ours) == list(theirs), type(sampler)
        assert len(ours) == len(theirs)
        assert all(type(i) is int for batch in ours for i in batch)
    assert list(SequentialSampler(range(n))) == list(TorchSequentialSampler(range(n)))


def test_batch_sampler_groups_any_items_as_they_are():
    assert list(BatchSampler(["a", "b", "c"], 2, False)) == [["a", "b"], ["c"]]


def test_random_sampler_gives_numpys_permutation_for_a_seed():
    # The order a seed gave before samplers existed (numpy's permutation) is kept.
    for n in (1, 5, 1000):
        assert list(RandomSampler(range(n), generator=_gen(3))) == np.random.default_rng(3).permutation(n).tolist()


def test_a_shuffled_loader_keeps_its_order_for_a_seed():
    # The loader draws the workers' base seed, then the permutation, from its generator.
    rng = np.random.default_rng(5)
    rng.integers(0, 2**63 - 1)
    expected = rng.permutation(20).tolist()
    loader = DataLoader(Numbers(20), batch_size=6, shuffle=True, generator=_gen(5))
    assert np.concatenate([b.numpy() for b in loader]).tolist() == expected
    tt.manual_seed(5)
    assert np.concatenate([b.numpy() for b in DataLoader(Numbers(20), batch_size=6, shuffle=True)]).tolist() == expected


def test_random_sampler_draws_a_new_order_each_iteration_and_repeats_with_the_seed():
    sampler = RandomSampler(range(50), generator=_gen(0))
    first, second = list(sampler), list(sampler)
    assert sorted(first) == sorted(second) == list(range(50))
    assert first != second
    assert list(RandomSampler(range(50), generator=_gen(0))) == first


def test_random_sampler_num_samples_beyond_the_data_is_whole_permutations():
    drawn = list(RandomSampler(range(4), num_samples=10, generator=_gen(1)))
    assert len(drawn) == 10
    assert sorted(drawn[:4]) == sorted(drawn[4:8]) == [0, 1, 2, 3]
    assert len(set(drawn[8:])) == 2
    assert len(list(RandomSampler(range(10), num_samples=3))) == 3


def test_random_sampler_with_replacement_draws_independently():
    sampler = RandomSampler(range(3), replacement=True, num_samples=200, generator=_gen(2))
    drawn = list(sampler)
    assert len(sampler) == len(drawn) == 200 and set(drawn) == {0, 1, 2}
    assert list(RandomSampler(range(3), replacement=True, num_samples=200, generator=_gen(2))) == drawn
    assert list(sampler) != drawn


def test_random_sampler_over_an_empty_dataset_yields_nothing():
    assert list(RandomSampler([])) == [] and len(RandomSampler([])) == 0
    assert list(DataLoader(Numbers(0), shuffle=True)) == []
    with pytest.raises(ValueError, match=r"RandomSampler: cannot draw 3 samples from an empty data_source"):
        list(RandomSampler([], num_samples=3))


def test_subset_random_sampler_permutes_its_indices():
    sampler = SubsetRandomSampler([10, 20, 30, 40], generator=_gen(0))
    drawn = [list(sampler) for _ in range(4)]
    assert all(sorted(d) == [10, 20, 30, 40] for d in drawn) and len(sampler) == 4
    assert len({tuple(d) for d in drawn}) > 1


def test_a_subclass_that_overrides_iter_is_iterated():
    class Reversed(SequentialSampler):
        def __iter__(self):
            return reversed(range(len(self.data_source)))

    class Sorted(RandomSampler):
        def __iter__(self):
            return iter(sorted(super().__iter__()))

    assert [b.tolist() for b in DataLoader(Numbers(5), sampler=Reversed(range(5)), batch_size=2)] == [
        [4, 3],
        [2, 1],
        [0],
    ]
    assert [b.tolist() for b in DataLoader(Numbers(5), sampler=Sorted(range(5)), batch_size=5)] == [[0, 1, 2, 3, 4]]


def test_sampler_base_class():
    with pytest.raises(NotImplementedError, match=r"Sampler does not define __iter__"):
        iter(Sampler())

    class Evens(Sampler[int]):
        def __iter__(self):
            return iter(range(0, 10, 2))

        def __len__(self):
            return 5

    loader = DataLoader(Numbers(10), sampler=Evens(), batch_size=2)
    assert len(loader) == 3 and [b.tolist() for b in loader] == [[0, 2], [4, 6], [8]]


def test_a_sampler_of_lists_is_refused_as_such():
    with pytest.raises(
        TypeError, match=r"a sampler must yield single indices, got items of shape \(2,\);.*batch_sampler"
    ):
        next(iter(DataLoader(Numbers(4), sampler=[[0, 1], [2, 3]])))


# ---------------------------------------------------------------------------- as DataLoader's samplers
def test_a_loader_has_pytorchs_samplers(torch):
    from torch.utils.data import DataLoader as TorchLoader

    data = list(range(10))
    for kwargs in ({}, {"shuffle": True, "batch_size": 3, "drop_last": True}, {"batch_sampler": [[0, 1]]}):
        ours, theirs = DataLoader(data, **kwargs), TorchLoader(data, **kwargs)
        assert type(ours.sampler).__name__ == type(theirs.sampler).__name__
        assert type(ours.batch_sampler).__name__ == type(theirs.batch_sampler).__name__
        assert (ours.batch_size, ours.drop_last) == (theirs.batch_size, theirs.drop_last)
        if isinstance(ours.batch_sampler, BatchSampler):
            assert ours.batch_sampler.sampler is ours.sampler
            assert (ours.batch_sampler.batch_size, ours.batch_sampler.drop_last) == (kwargs.get("batch_size", 1),
                                                                                       kwargs.get("drop_last", False))  # fmt: skip


def test_a_loader_reads_sampler_objects():
    x = tt.arange(10)
    loader = DataLoader(TensorDataset(x), sampler=SubsetRandomSampler([1, 3, 5, 7]), batch_size=3)
    batches = [b.tolist() for (b,) in loader]
    assert [len(b) for b in batches] == [3, 1] and sorted(sum(batches, [])) == [1, 3, 5, 7]
    by = BatchSampler(RandomSampler(range(10), generator=_gen(4)), 4, drop_last=True)
    expected = list(BatchSampler(RandomSampler(range(10), generator=_gen(4)), 4, drop_last=True))
    assert [b.tolist() for (b,) in DataLoader(TensorDataset(x), batch_sampler=by)] == expected
    replaced = DataLoader(Numbers(3), sampler=RandomSampler(range(3), replacement=True, num_samples=7), batch_size=2)
    assert [len(b) for b in replaced] == [2, 2, 2, 1]


# ---------------------------------------------------------------------------- errors, as PyTorch's
SAMPLER_ERRORS = [
    ("replacement-int", lambda s: s.RandomSampler(range(3), replacement=1)),
    ("num-samples-zero", lambda s: s.RandomSampler(range(3), num_samples=0)),
    ("num-samples-negative", lambda s: s.RandomSampler(range(3), num_samples=-2)),
    ("num-samples-float", lambda s: s.RandomSampler(range(3), num_samples=2.0)),
    ("batch-size-zero", lambda s: s.BatchSampler(range(3), 0, False)),
    ("batch-size-float", lambda s: s.BatchSampler(range(3), 2.5, False)),
    ("batch-size-bool", lambda s: s.BatchSampler(range(3), True, False)),
    ("drop-last-none", lambda s: s.BatchSampler(range(3), 2, None)),
    ("drop-last-int", lambda s: s.BatchSampler(range(3), 2, 1)),
]
LOADER_ERRORS = [
    ("sampler-and-shuffle", {"sampler": [0, 1], "shuffle": True}),
    ("batch-sampler-and-batch-size", {"batch_sampler": [[0]], "batch_size": 2}),
    ("batch-sampler-and-shuffle", {"batch_sampler": [[0]], "shuffle": True}),
    ("batch-sampler-and-sampler", {"batch_sampler": [[0]], "sampler": [0]}),
    ("batch-sampler-and-drop-last", {"batch_sampler": [[0]], "drop_last": True}),
]


def _error(call):
    with pytest.raises(Exception) as info:
        call()
    return info.value


@pytest.mark.parametrize("call", [c[1] for c in SAMPLER_ERRORS], ids=[c[0] for c in SAMPLER_ERRORS])
def test_sampler_errors_are_pytorchs(torch, call):
    import tinytensor.data

    ours, theirs = _error(lambda: call(tinytensor.data)), _error(lambda: call(torch.utils.data))
    assert type(ours) is type(theirs)
    assert str(theirs) in str(ours) and str(ours).split(":")[0] in ("RandomSampler", "BatchSampler")


@pytest.mark.parametrize("kwargs", [c[1] for c in LOADER_ERRORS], ids=[c[0] for c in LOADER_ERRORS])
def test_loader_sampler_option_errors_are_pytorchs(torch, kwargs):
    ours = _error(lambda: DataLoader(list(range(4)), **kwargs))
    theirs = _error(lambda: torch.utils.data.DataLoader(list(range(4)), **kwargs))
    assert type(ours) is type(theirs) is ValueError
    assert str(ours).startswith(f"DataLoader: {theirs}")


def test_a_sampler_generator_must_be_tinytensors():
    for make in (lambda g: RandomSampler(range(3), generator=g), lambda g: SubsetRandomSampler([1], generator=g)):
        with pytest.raises(TypeError, match=r"Sampler: generator must be a tinytensor Generator .* got numpy"):
            make(np.random.default_rng(0))


# ---------------------------------------------------------------------------- lazy
def _peak_bytes(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_first_batch_of_10_8_samples_holds_no_object_per_sample():
    loader = DataLoader(Numbers(10**8), batch_size=1)
    assert len(loader) == 10**8 and len(loader.sampler) == 10**8
    first = []
    # Before samplers: the order (800 MB) and a (start, stop) per batch (over 10 GB).
    assert _peak_bytes(lambda: first.append(next(iter(loader)))) < 16 * 2**20
    assert first[0].tolist() == [0]
    batches = iter(BatchSampler(SequentialSampler(range(10**8)), 10**6, drop_last=False))
    assert _peak_bytes(lambda: first.append(next(batches))) < 200 * 2**20  # one batch: a million ints
    assert first[1] == list(range(10**6))


def test_a_shuffled_epoch_holds_one_int32_permutation():
    n = 2 * 10**6
    loader = DataLoader(Numbers(n), batch_size=1, shuffle=True)
    first = []
    # int32: 8 MB; before, an int64 order (16 MB) and a (start, stop) per batch (about 250 MB)
    assert _peak_bytes(lambda: first.append(next(iter(loader)))) < 12 * 2**20
    assert 0 <= first[0].item() < n
    sampler = iter(RandomSampler(range(n)))
    assert _peak_bytes(lambda: [next(sampler) for _ in range(10)]) < 12 * 2**20  # not a list of n ints


def test_a_sampler_is_read_as_batches_are_made():
    sampler = Counted(1000)
    epoch = iter(DataLoader(Numbers(1000), sampler=sampler, batch_size=2))
    assert next(epoch).tolist() == [0, 1]
    assert sampler.read <= 4
    assert sum(len(b) for b in epoch) == 998 and sampler.read == 1000
