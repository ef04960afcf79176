"""Selecting and combining datasets: Subset, ConcatDataset, random_split, and DataLoader's sampler
and batch_sampler, compared with PyTorch where it is installed."""

from __future__ import annotations

import typing

import numpy as np
import pytest
from index_data import Numbers

import tinytensor as tt
from tinytensor.data import ConcatDataset, DataLoader, Dataset, Subset, TensorDataset, random_split

# ---------------------------------------------------------------------------- random_split
SPLITS = [
    (10, [3, 7]),
    (10, [0.3, 0.3, 0.4]),
    (7, [0.5, 0.5]),
    (5, [1 / 3, 1 / 3, 1 / 3]),
    (100, [0.8, 0.1, 0.1]),
    (3, [0.1, 0.9]),
    (11, [0.25, 0.25, 0.25, 0.25]),
    (1, [1]),
]


@pytest.mark.parametrize("n,lengths", SPLITS)
def test_random_split_lengths_match_pytorch(torch, n, lengths):
    from torch.utils.data import random_split as torch_split

    ours = random_split(range(n), lengths, generator=tt.Generator().manual_seed(0))
    theirs = torch_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]


def test_an_empty_split_warns_as_in_pytorch(torch):
    from torch.utils.data import random_split as torch_split

    with pytest.warns(UserWarning, match="split 1 is empty"):
        ours = random_split(range(2), [0.2, 0.2, 0.6])
    with pytest.warns(UserWarning, match="index 1 is 0"):
        theirs = torch_split(range(2), [0.2, 0.2, 0.6])
    assert [len(s) for s in ours] == [len(s) for s in theirs] == [1, 0, 1]


def test_random_split_partitions_the_dataset_at_random_and_repeatably():
    def split(seed):
        return [
            list(s) for s in random_split(Numbers(20), [0.5, 0.25, 0.25], generator=tt.Generator().manual_seed(seed))
        ]

    parts = split(1)
    assert [len(p) for p in parts] == [10, 5, 5]
    assert sorted(sum(parts, [])) == list(range(20))
    assert parts == split(1) != split(2)
    assert parts[0] != sorted(parts[0])
    # Without a generator: tinytensor's global stream.
    tt.manual_seed(4)
    first = [s.indices for s in random_split(Numbers(20), [10, 10])]
    tt.manual_seed(4)
    assert [s.indices for s in random_split(Numbers(20), [10, 10])] == first


@pytest.mark.parametrize("lengths,pattern", [
    ([3, 3], r"random_split: the lengths sum to 6, but the dataset has 10 samples"),
    ([1.5, -0.5], r"random_split: fraction 0 is 1.5, not between 0 and 1"),
    ([0.5, 0.4], r"random_split: lengths must be counts .* length 0 is 0.5"),
])  # fmt: skip
def test_bad_lengths_are_named(torch, lengths, pattern):
    from torch.utils.data import random_split as torch_split

    with pytest.raises(ValueError, match=pattern):
        random_split(range(10), lengths)
    with pytest.raises(ValueError):  # PyTorch refuses them too
        torch_split(range(10), lengths)


def test_a_negative_length_is_refused():
    # PyTorch accepts [12, -2] (the sum matches) and returns overlapping subsets.
    with pytest.raises(ValueError, match=r"random_split: lengths must be counts .* length 1 is -2"):
        random_split(range(10), [12, -2])


def test_random_split_takes_only_a_tinytensor_generator():
    with pytest.raises(TypeError, match="random_split: generator must be a tinytensor Generator"):
        random_split(range(4), [2, 2], generator=np.random.default_rng(0))


# ---------------------------------------------------------------------------- Subset
def test_subset_reads_the_dataset_at_its_indices():
    x = tt.tensor(np.arange(10.0))
    sub = Subset(TensorDataset(x), [7, 2, 5])
    assert len(sub) == 3
    assert sub[0][0].item() == 7.0 and sub[-1][0].item() == 5.0
    assert [b[0].tolist() for b in DataLoader(sub, batch_size=2)] == [[7.0, 2.0], [5.0]]


def test_subset_with_a_list_of_positions_matches_pytorch(torch):
    from torch.utils.data import Subset as TorchSubset

    data = tt.tensor(np.arange(10.0) * 2)
    ours = Subset(data, [9, 1, 4])[[0, 2]]
    theirs = TorchSubset(torch.arange(10.0) * 2, [9, 1, 4])[[0, 2]]
    assert ours.tolist() == theirs.tolist() == [18.0, 8.0]


# ---------------------------------------------------------------------------- ConcatDataset
def test_concat_dataset_indexes_like_pytorch(torch):
    from torch.utils.data import ConcatDataset as TorchConcat

    parts = [range(3), range(10, 15), range(0), range(20, 22)]
    ours, theirs = ConcatDataset(parts), TorchConcat(parts)
    assert ours.cumulative_sizes == theirs.cumulative_sizes == [3, 8, 8, 10]
    assert len(ours) == len(theirs) == 10
    every = range(-len(ours), len(ours))
    assert [ours[i] for i in every] == [theirs[i] for i in every]
    assert ours[np.int64(4)] == 11


def test_concat_dataset_out_of_range_is_an_index_error():
    ds = ConcatDataset([Numbers(3), Numbers(2)])
    for index in (5, 6, -6, -100):
        with pytest.raises(IndexError, match=f"ConcatDataset index {index} is out of range for 5 samples"):
            ds[index]
    assert list(ds) == [0, 1, 2, 0, 1]  # iteration stops at the IndexError
    with pytest.raises(TypeError, match="ConcatDataset indices must be integers, got str"):
        ds["1"]
    with pytest.raises(ValueError, match="ConcatDataset: datasets should not be an empty iterable"):
        ConcatDataset([])


def test_datasets_add_up_and_load():
    x = TensorDataset(tt.tensor(np.arange(4.0)))
    y = TensorDataset(tt.tensor(np.arange(10.0, 13.0)))
    both = x + y
    assert isinstance(both, ConcatDataset) and len(both) == 7
    assert [b[0].tolist() for b in DataLoader(both, batch_size=4)] == [[0.0, 1.0, 2.0, 3.0], [10.0, 11.0, 12.0]]


def test_dataset_is_generic_in_its_sample_type():
    # `class Numbers(Dataset[int])`, as PyTorch's examples write it, defines a dataset like any other
    assert typing.get_origin(Dataset[int]) is Dataset and typing.get_args(Dataset[int]) == (int,)
    assert Numbers.__orig_bases__ == (Dataset[int],) and isinstance(Numbers(3), Dataset)
    assert [b.tolist() for b in DataLoader(Numbers(5), batch_size=2)] == [[0, 1], [2, 3], [4]]


def test_a_generic_dataset_loads_as_in_pytorch(torch):
    assert typing.get_origin(torch.utils.data.Dataset[int]) is torch.utils.data.Dataset
    ours = [b.tolist() for b in DataLoader(Numbers(5), batch_size=2)]
    assert ours == [b.tolist() for b in torch.utils.data.DataLoader(Numbers(5), batch_size=2)]


# ---------------------------------------------------------------------------- sampler, batch_sampler
def test_sampler_and_batch_sampler_match_pytorch(torch):
    from torch.utils.data import DataLoader as TorchLoader

    data = list(range(100, 110))
    cases = [
        {"sampler": [3, 1, 4, 1, 5, 9, 2], "batch_size": 3},
        {"sampler": [3, 1, 4, 1, 5, 9, 2], "batch_size": 3, "drop_last": True},
        {"batch_sampler": [[0, 1], [7], [2, 3, 4]]},
    ]
    for kwargs in cases:
        ours = [b.tolist() for b in DataLoader(data, **kwargs)]
        theirs = [b.tolist() for b in TorchLoader(data, **kwargs)]
        assert ours == theirs, kwargs
        assert len(DataLoader(data, **kwargs)) == len(TorchLoader(data, **kwargs))
