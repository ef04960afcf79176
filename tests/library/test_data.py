"""tinytensor.data: TensorDataset, DataLoader batching and shuffling on every device, collation,
and tt.Generator; bad input in one table (worker processes: test_data_workers.py; Subset,
ConcatDataset, random_split and samplers: test_data_splits.py)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import tinytensor as tt
from tinytensor.data import DataLoader, Dataset, TensorDataset, default_collate
from tinytensor.devices import backend_of
from tinytensor.errors import DeviceError, ShapeError
from tinytensor.random import Generator, manual_seed


def _xy(device, n=10):
    """Features (n, 3) float32 whose row i is [i, i+0.5, -i], labels i (int64), on ``device``."""
    rows = np.arange(n, dtype=np.float32)
    x = np.stack([rows, rows + 0.5, -rows], axis=1)
    return tt.tensor(x, device=device), tt.tensor(np.arange(n, dtype=np.int64), device=device)


def _ids(loader):
    """The sample ids of one epoch, in order (labels of a TensorDataset built by _xy)."""
    return np.concatenate([batch[1].numpy() for batch in loader]).tolist()


# ---------------------------------------------------------------------------- TensorDataset
def test_tensor_dataset_indexes_rows(device):
    x, y = _xy(device)
    ds = TensorDataset(x, y)
    assert len(ds) == 10
    xi, yi = ds[3]
    assert xi.device == yi.device == x.device
    np.testing.assert_array_equal(xi.numpy(), [3.0, 3.5, -3.0])
    assert yi.item() == 3


def test_tensor_dataset_takes_arrays_without_copying(device):
    x, y = _xy(device)
    ds = TensorDataset(x._data, y._data)  # raw numpy / array_api_strict / CuPy arrays
    assert all(t.device == x.device for t in ds.tensors)
    assert ds.tensors[0]._data is x._data
    assert ds.tensors[0].dtype == x.dtype and ds.tensors[1].dtype == y.dtype


# ---------------------------------------------------------------------------- DataLoader: TensorDataset
def test_batches_are_on_the_data_device_with_shapes_and_dtypes_kept(device):
    x, y = _xy(device)
    mask = tt.tensor(np.arange(10) % 2 == 0, device=device)
    loader = DataLoader(TensorDataset(x, y, mask), batch_size=4)
    batches = list(loader)
    assert len(loader) == len(batches) == 3
    assert [b[0].shape for b in batches] == [(4, 3), (4, 3), (2, 3)]
    for xb, yb, mb in batches:
        assert isinstance(xb, tt.Tensor)
        assert {xb.device, yb.device, mb.device} == {x.device}
        assert (xb.dtype, yb.dtype, mb.dtype) == (x.dtype, y.dtype, mask.dtype)
        assert not xb.requires_grad
    # Without shuffling the order is the dataset's.
    np.testing.assert_array_equal(np.concatenate([b[0].numpy() for b in batches]), x.numpy())
    assert _ids(loader) == list(range(10))


def test_each_tensor_is_gathered_on_its_own_device(other_device):
    # Labels kept on the CPU next to features on another device: each gather needs an index array
    # on its own device (array_api_strict raises if the wrong one is used).
    x, _ = _xy(other_device)
    y = tt.tensor(np.arange(10, dtype=np.int64))
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=3, shuffle=True):
        assert xb.device == x.device and yb.device == "cpu"
        np.testing.assert_array_equal(xb.numpy()[:, 0], yb.numpy())  # rows stay paired


@pytest.mark.parametrize("n,batch_size,drop_last,expected", [
    (10, 4, False, [4, 4, 2]),
    (10, 4, True, [4, 4]),
    (12, 4, True, [4, 4, 4]),
    (3, 5, False, [3]),
    (3, 5, True, []),
    (0, 2, False, []),
    (7, 1, False, [1] * 7),
])  # fmt: skip
def test_len_and_drop_last(device, n, batch_size, drop_last, expected):
    x, y = _xy(device, n)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, drop_last=drop_last, shuffle=True)
    assert len(loader) == len(expected)
    assert [xb.shape[0] for xb, _ in loader] == expected


def test_every_sample_once_per_epoch_and_a_new_order_each_epoch(device):
    x, y = _xy(device, 50)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    epochs = [_ids(loader) for _ in range(3)]
    for ids in epochs:
        assert sorted(ids) == list(range(50))
    assert epochs[0] != epochs[1] != epochs[2]
    assert epochs[0] != list(range(50))
    for xb, yb in loader:  # features and labels are gathered with the same indices
        np.testing.assert_array_equal(xb.numpy()[:, 0], yb.numpy())


def test_manual_seed_fixes_the_order(device):
    x, y = _xy(device, 40)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    tt.manual_seed(7)
    first = [_ids(loader), _ids(loader)]
    tt.manual_seed(7)
    again = [_ids(loader), _ids(loader)]
    tt.manual_seed(8)
    other = _ids(loader)
    assert first == again
    assert other != first[0]


def test_a_generator_fixes_the_order_independently_of_the_global_stream(device):
    x, y = _xy(device, 40)
    ds = TensorDataset(x, y)

    def epochs(seed, global_seed):
        tt.manual_seed(global_seed)
        loader = DataLoader(ds, batch_size=16, shuffle=True, generator=Generator().manual_seed(seed))
        return [_ids(loader), _ids(loader)]

    assert epochs(3, global_seed=0) == epochs(3, global_seed=1)
    assert epochs(3, global_seed=0) != epochs(4, global_seed=0)
    # Like torch.Generator(), a fresh generator starts from a fixed seed.
    fresh = [_ids(DataLoader(ds, batch_size=40, shuffle=True, generator=Generator())) for _ in range(2)]
    assert fresh[0] == fresh[1]


def test_batches_are_copies(device):
    x, y = _xy(device, 6)
    snapshot = x.numpy().copy()
    for shuffle in (False, True):
        loader = DataLoader(TensorDataset(x, y), batch_size=6, shuffle=shuffle)  # one batch: every row
        first = next(iter(loader))[0]
        first[...] = 100.0
        assert (first.numpy() == 100.0).all()
        np.testing.assert_array_equal(x.numpy(), snapshot)
        assert (next(iter(loader))[0].numpy() != 100.0).all()


# ---------------------------------------------------------------------------- DataLoader: other datasets
Pair = namedtuple("Pair", ["image", "label"])


class Samples(Dataset):
    """A custom dataset mixing every kind of field default_collate handles."""

    def __init__(self, device, n=5):
        self.device, self.n = device, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        image = tt.tensor(np.full((2, 3), i, dtype=np.float32), device=self.device)
        return {
            "pair": Pair(image, i),
            "host": np.array([i, -i], dtype=np.int32),
            "score": i / 2,
            "flag": i % 2 == 1,
            "scalar": np.float32(i),
            "name": f"s{i}",
            "parts": (i, [float(i), 1.0]),
        }


def test_custom_dataset_items_are_collated(device):
    loader = DataLoader(Samples(device), batch_size=2)
    batches = list(loader)
    assert len(loader) == len(batches) == 3
    b = batches[0]
    assert isinstance(b, dict) and isinstance(b["pair"], Pair)
    assert b["pair"].image.shape == (2, 2, 3) and b["pair"].image.device == loader.dataset[0]["pair"].image.device
    np.testing.assert_array_equal(b["pair"].image.numpy()[:, 0, 0], [0, 1])
    assert b["pair"].label.tolist() == [0, 1] and b["pair"].label.dtype == np.int64
    assert b["host"].dtype == np.int32 and b["host"].tolist() == [[0, 0], [1, -1]]
    assert b["score"].dtype == np.float64 and b["score"].tolist() == [0.0, 0.5]
    assert b["flag"].dtype == np.bool_ and b["flag"].tolist() == [False, True]
    assert b["scalar"].dtype == np.float32
    assert b["name"] == ["s0", "s1"]
    count, pair = b["parts"]
    assert count.tolist() == [0, 1] and isinstance(b["parts"], list)
    assert [p.tolist() for p in pair] == [[0.0, 1.0], [1.0, 1.0]]
    assert batches[2]["pair"].image.shape == (1, 2, 3)


def test_collation_matches_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch (the reference) is not installed")
    from torch.utils.data import default_collate as torch_collate

    samples = [
        {"i": k, "f": k / 2, "b": k % 2 == 0, "s": str(k), "t": (k, [k, 1.5]), "mixed": [1, 2.5][k % 2],
         "p": Pair(np.float32(k), np.array([k, k], dtype=np.int16))}
        for k in range(3)
    ]  # fmt: skip

    def plain(x):
        """Structure, types, dtypes and values, comparable across the two libraries."""
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x).__name__, [plain(v) for v in x]
        if isinstance(x, (tt.Tensor, torch.Tensor)):
            return str(x.dtype).removeprefix("torch."), x.tolist()
        return x

    assert plain(default_collate(samples)) == plain(torch_collate(samples))


def test_collated_batches_are_copies(device):
    ds = Samples(device, n=2)
    ds_items = [ds[i]["pair"].image for i in range(2)]
    batch = default_collate(ds_items)
    batch[...] = -1.0
    assert all((t.numpy() != -1.0).all() for t in ds_items)


def test_a_tensor_dataset_subclass_with_its_own_getitem_is_read_item_by_item(device):
    class Doubled(TensorDataset):
        def __getitem__(self, i):
            x, y = super().__getitem__(i)
            return x * 2, y

    x, y = _xy(device, 5)
    xb, yb = next(iter(DataLoader(Doubled(x, y), batch_size=5)))
    assert xb.device == x.device
    np.testing.assert_array_equal(xb.numpy(), 2 * x.numpy())
    np.testing.assert_array_equal(yb.numpy(), y.numpy())


def test_lists_and_tensors_are_datasets():
    (batch,) = list(DataLoader([1, 2, 3], batch_size=3))
    assert batch.dtype == np.int64 and batch.tolist() == [1, 2, 3]
    rows = tt.tensor(np.arange(6.0).reshape(3, 2))
    assert [b.shape for b in DataLoader(rows, batch_size=2)] == [(2, 2), (1, 2)]


def test_samples_on_different_devices_are_refused(other_device):
    items = [tt.tensor([1.0]), tt.tensor([2.0], device=other_device)]
    with pytest.raises(
        DeviceError, match=r"default_collate: samples are on different devices: cpu in sample 0, .* in sample 1"
    ):
        default_collate(items)


def test_loader_takes_python_ints_of_numpy_type_for_batch_size():
    loader = DataLoader(TensorDataset(np.zeros((5, 1))), batch_size=np.int64(2))
    assert loader.batch_size == 2 and type(loader.batch_size) is int and len(loader) == 3


# ---------------------------------------------------------------------------- Generator
def test_generator_api():
    g = Generator()
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    a = g.rng.random(4)
    assert np.array_equal(Generator().manual_seed(3).rng.random(4), a)
    assert Generator().initial_seed() == 67280421310721  # torch.Generator()'s default seed
    new = g.seed()
    assert isinstance(new, int) and g.initial_seed() == new
    assert Generator().manual_seed(-1).initial_seed() == 2**64 - 1  # as torch maps negative seeds


# ---------------------------------------------------------------------------- bad input
class _NoLen:
    def __getitem__(self, i):
        return i


class _NoGetitem:
    def __len__(self):
        return 3


class _Opaque:
    pass


def _xy_host(n=10):
    return np.zeros((n, 2), dtype=np.float32), np.zeros(n, dtype=np.int64)


def _collate_rows(*rows):
    return lambda: default_collate(list(rows))


_DS = TensorDataset(*_xy_host())

BAD_INPUT = [
    ("batch-size-zero", lambda: DataLoader(_DS, batch_size=0), ValueError, r"DataLoader: batch_size .* got 0"),
    ("batch-size-negative", lambda: DataLoader(_DS, batch_size=-2), ValueError, r"DataLoader: batch_size .* got -2"),
    ("batch-size-float", lambda: DataLoader(_DS, batch_size=2.0), TypeError, r"DataLoader: batch_size .* got float"),
    ("batch-size-str", lambda: DataLoader(_DS, batch_size="4"), TypeError, r"DataLoader: batch_size .* got str"),
    ("batch-size-bool", lambda: DataLoader(_DS, batch_size=True), TypeError, r"DataLoader: batch_size .* bool"),
    ("batch-size-none", lambda: DataLoader(_DS, batch_size=None), TypeError, r"DataLoader: batch_size .* NoneType"),
    ("dataset-none", lambda: DataLoader(None), TypeError, r"DataLoader: dataset .* got NoneType"),
    ("dataset-str", lambda: DataLoader("abc"), TypeError, r"DataLoader: dataset .* got str"),
    ("dataset-no-len", lambda: DataLoader(_NoLen()), TypeError, r"DataLoader: dataset .*_NoLen has no __len__"),
    ("dataset-no-getitem", lambda: DataLoader(_NoGetitem()), TypeError, r"_NoGetitem has no __getitem__"),
    ("dataset-base-class", lambda: DataLoader(Dataset()), TypeError, r"DataLoader: .*does not implement __len__"),
    ("generator-numpy", lambda: DataLoader(_DS, generator=np.random.default_rng(0)), TypeError,
     r"DataLoader: generator must be a tinytensor Generator .*numpy.random"),
    ("generator-int", lambda: DataLoader(_DS, generator=3), TypeError, r"DataLoader: generator .* got builtins.int"),
    ("shuffle-str", lambda: DataLoader(_DS, shuffle="yes"), TypeError, r"DataLoader: shuffle must be True or False"),
    ("drop-last-none", lambda: DataLoader(_DS, drop_last=None), TypeError, r"DataLoader: drop_last must be True or"),
    ("workers-negative", lambda: DataLoader(_DS, num_workers=-1), ValueError,
     r"DataLoader: num_workers must be an int >= 0, got -1 \(num_workers=0 loads the data in the main process\)"),
    ("workers-float", lambda: DataLoader(_DS, num_workers=2.0), TypeError, r"DataLoader: num_workers .* got float"),
    ("prefetch-without-workers", lambda: DataLoader(_DS, prefetch_factor=2), ValueError,
     r"DataLoader: prefetch_factor needs num_workers > 0"),
    ("prefetch-zero", lambda: DataLoader(_DS, num_workers=1, prefetch_factor=0), ValueError,
     r"DataLoader: prefetch_factor must be an int >= 1, got 0"),
    ("persistent-without-workers", lambda: DataLoader(_DS, persistent_workers=True), ValueError,
     r"DataLoader: persistent_workers=True needs num_workers > 0"),
    ("collate-fn-not-callable", lambda: DataLoader(_DS, collate_fn="stack"), TypeError,
     r"DataLoader: collate_fn must be callable or None, got str 'stack'"),
    ("init-fn-not-callable", lambda: DataLoader(_DS, num_workers=1, worker_init_fn=3), TypeError,
     r"DataLoader: worker_init_fn must be callable or None, got int"),
    ("timeout-negative", lambda: DataLoader(_DS, num_workers=1, timeout=-1), ValueError,
     r"DataLoader: timeout must be >= 0 seconds"),
    ("timeout-str", lambda: DataLoader(_DS, timeout="5"), TypeError, r"DataLoader: timeout must be a number"),
    ("context-without-workers", lambda: DataLoader(_DS, multiprocessing_context="spawn"), ValueError,
     r"DataLoader: multiprocessing_context needs num_workers > 0"),
    ("context-unknown", lambda: DataLoader(_DS, num_workers=1, multiprocessing_context="thread"), ValueError,
     r"DataLoader: multiprocessing_context must be one of \[.*'spawn'.*\], got 'thread'"),
    ("context-type", lambda: DataLoader(_DS, num_workers=1, multiprocessing_context=3), TypeError,
     r"DataLoader: multiprocessing_context must be a start method name"),
    ("pin-memory-str", lambda: DataLoader(_DS, pin_memory="yes"), TypeError, r"DataLoader: pin_memory must be True or"),
    ("sampler-and-shuffle", lambda: DataLoader(_DS, sampler=[0, 1], shuffle=True), ValueError,
     r"DataLoader: sampler option is mutually exclusive with shuffle"),
    ("sampler-not-iterable", lambda: DataLoader(_DS, sampler=3), TypeError, r"DataLoader: sampler must be an iterable"),
    ("batch-sampler-and-size", lambda: DataLoader(_DS, batch_sampler=[[0]], batch_size=2), ValueError,
     r"DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
    ("tensors-none-given", lambda: TensorDataset(), ValueError, r"TensorDataset needs at least one tensor"),
    ("tensors-lengths", lambda: TensorDataset(np.zeros((10, 2)), np.zeros(9)), ShapeError,
     r"TensorDataset: .*same length along axis 0, got lengths \[10, 9\]"),
    ("tensors-none", lambda: TensorDataset(None), TypeError, r"TensorDataset: argument 0 must be a Tensor .*NoneType"),
    ("tensors-str", lambda: TensorDataset(np.zeros(3), "abc"), TypeError, r"TensorDataset: argument 1 .* got str"),
    ("tensors-list", lambda: TensorDataset([1, 2, 3]), TypeError, r"got list \(tt.tensor\(...\) converts"),
    ("tensors-0d", lambda: TensorDataset(np.array(1.0)), ShapeError, r"TensorDataset: argument 0 is 0-d"),
    ("tensors-strings", lambda: TensorDataset(np.array(["a", "b"])), TypeError, r"argument 0 has dtype <U1"),
    ("collate-empty", lambda: default_collate([]), ValueError, r"default_collate: got an empty list"),
    ("collate-shapes", _collate_rows(np.zeros(3), np.zeros(4)), ShapeError,
     r"default_collate: cannot stack samples: shape \(3,\) in sample 0, \(4,\) in sample 1"),
    ("collate-keys", _collate_rows({"a": 1}, {"b": 1}), ValueError, r"samples have different keys: \['a'\] in sample 0, \['b'\] in sample 1"),
    ("collate-fields", _collate_rows((1, 2), (1,)), ValueError, r"samples differ: 2 fields in sample 0, 1 fields in sample 1"),
    ("collate-type", _collate_rows(_Opaque(), _Opaque()), TypeError, r"default_collate: samples hold a _Opaque"),
    ("collate-mixed", _collate_rows(np.zeros(2), 3), TypeError, r"samples mix types: an array or Tensor in sample 0, a int in sample 1"),
    ("seed-str", lambda: Generator().manual_seed("3"), TypeError, r"Generator.manual_seed: seed must be an int"),
    ("seed-float", lambda: Generator().manual_seed(1.5), TypeError, r"seed must be an int, got float"),
    ("seed-range", lambda: Generator().manual_seed(2**64), ValueError, r"seed must be in \[-2\*\*63, 2\*\*64\)"),
    ("global-seed-none", lambda: manual_seed(None), TypeError, r"manual_seed: seed must be an int"),
]  # fmt: skip


@pytest.mark.parametrize("call,error,pattern", [c[1:] for c in BAD_INPUT], ids=[c[0] for c in BAD_INPUT])
def test_bad_input_is_named(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_backend_of_batches_matches_dataset(device):
    # The batch arrays are of the dataset's array type (numpy, CuPy or array_api_strict).
    x, y = _xy(device)
    xb, yb = next(iter(DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True)))
    assert backend_of(xb._data) is backend_of(x._data) and backend_of(yb._data) is backend_of(y._data)
