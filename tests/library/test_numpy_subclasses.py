"""Every ``numpy.ndarray`` is an array, subclasses included: ``np.load(path, mmap_mode="r")`` (how
a data set larger than memory is read), ``np.recarray`` and a user's own subclass are taken
wherever a plain ndarray is, as the ndarray they view (as PyTorch takes them), in creation, ops,
saving, collation and DataLoader workers. Each row's result equals the same call on a plain
ndarray, and what tinytensor keeps is a plain ndarray.
"""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.data import DataLoader, TensorDataset, default_collate
from tinytensor.nn import functional as F

VALUES = np.arange(6, dtype=np.float32).reshape(2, 3) - 2


class UserArray(np.ndarray):
    """A subclass as a user writes one: numpy hands it back from views and ufuncs."""


@pytest.fixture(params=["memmap", "recarray", "user"])
def array(request, tmp_path):
    if request.param == "memmap":
        np.save(tmp_path / "values.npy", VALUES)
        made = np.load(tmp_path / "values.npy", mmap_mode="r")
    elif request.param == "recarray":
        made = VALUES.copy().view(np.recarray)
    else:
        made = VALUES.copy().view(UserArray)
    assert type(made) is not np.ndarray and isinstance(made, np.ndarray)
    return made


def _set_item(a):
    t = tt.zeros(2, 3)
    t[...] = a
    return t


def _set_data(a):
    t = tt.zeros(2, 3)
    t.data = a
    return t


def _round_trip(a, tmp_path):
    tt.save({"a": a, "t": tt.tensor(a)}, tmp_path / "sub.tt")
    back = tt.load(tmp_path / "sub.tt")
    assert type(back["a"]) is np.ndarray
    return back["a"] + back["t"].numpy()


def _loader(a, workers):
    batches = list(DataLoader(a, batch_size=2, num_workers=workers))
    assert len(batches) == 1
    return batches[0]


CALLS = [
    ("tensor", lambda a, tmp: tt.tensor(a)),
    ("Tensor", lambda a, tmp: tt.tensor(a)),
    ("from_numpy", lambda a, tmp: tt.from_numpy(a)),
    ("function-argument", lambda a, tmp: tt.exp(a)),
    ("operator-right", lambda a, tmp: tt.ones(2, 3) + a),
    ("operator-left", lambda a, tmp: a * tt.full((2, 3), 2.0)),
    ("matmul", lambda a, tmp: tt.ones(3, 3) @ a.T),
    ("where", lambda a, tmp: tt.where(tt.tensor(a) > 0, a, 0.0)),
    ("where-condition", lambda a, tmp: tt.where(a > 0, tt.ones(2, 3), 0.0)),
    ("cat", lambda a, tmp: tt.cat([a, tt.ones(1, 3)])),
    ("equal", lambda a, tmp: tt.equal(tt.tensor(VALUES), a)),
    ("loss-target", lambda a, tmp: F.mse_loss(tt.zeros(2, 3), a)),
    ("set-item", lambda a, tmp: _set_item(a)),
    ("set-data", lambda a, tmp: _set_data(a)),
    ("module-call", lambda a, tmp: nn.Identity()(a)),
    ("tensor-dataset", lambda a, tmp: TensorDataset(a)[1][0]),
    ("collate", lambda a, tmp: default_collate([a[0], a[1]])),
    ("dataloader", lambda a, tmp: _loader(a, 0)),
    ("dataloader-worker", lambda a, tmp: _loader(a, 1)),
    ("save-load", _round_trip),
]


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=[n for n, _ in CALLS])
def test_a_numpy_subclass_is_taken_as_the_ndarray_it_views(call, array, tmp_path):
    expected = call(VALUES.copy(), tmp_path)
    got = call(array, tmp_path)
    assert type(got) is type(expected)
    if isinstance(got, tt.Tensor):
        assert type(got._data) is np.ndarray and got.dtype == expected.dtype
        got, expected = got.numpy(), expected.numpy()
    np.testing.assert_array_equal(got, expected)


def test_from_numpy_shares_the_memory_of_a_subclass():
    a = VALUES.copy().view(UserArray)
    t = tt.from_numpy(a)
    a[0, 0] = 100
    assert t[0, 0].item() == 100
