"""PyTorch's typed constructors (``tt.FloatTensor`` and its kind) against PyTorch's: from data, from
a shape (zeros here, uninitialised in PyTorch), from a tensor, ``isinstance``, and bad input."""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn

NAMES = ["HalfTensor", "FloatTensor", "DoubleTensor", "IntTensor", "LongTensor", "BoolTensor"]

FROM_DATA = [[1, 0], [1.5, -2.0], [[True, False]], (3, 4), np.array([1, 2], np.int32), np.array([0.25, 1.0])]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("data", FROM_DATA, ids=["ints", "floats", "bools", "tuple", "int32-array", "float64-array"])
def test_from_data_matches_pytorch(torch, name, data):
    ours, theirs = getattr(tt, name)(data), getattr(torch, name)(data)
    assert isinstance(ours, tt.Tensor) and ours.device == "cpu" and ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), strict=True)
    assert getattr(tt, name).dtype == str(theirs.dtype).removeprefix("torch.")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0, 4)])
def test_from_a_shape_gives_zeros_of_that_shape(torch, name, shape):
    ours, theirs = getattr(tt, name)(*shape), getattr(torch, name)(*shape)
    assert ours.shape == tuple(theirs.shape) and ours.numpy().dtype == theirs.numpy().dtype
    assert not ours.numpy().any()  # PyTorch leaves the values uninitialised


def test_from_a_tensor_of_its_type_shares_the_storage():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    alias = tt.FloatTensor(x)
    assert alias is not x and not alias.requires_grad
    alias.add_(1.0)
    np.testing.assert_array_equal(x.detach().numpy(), [2.0, 3.0])


def test_isinstance_checks_dtype_and_device(torch, other_device):
    for name in NAMES:
        for dtype in ("float16", "float32", "float64", "int32", "int64", "bool"):
            ours = isinstance(tt.zeros(2, dtype=dtype), getattr(tt, name))
            theirs = isinstance(torch.zeros(2, dtype=getattr(torch, dtype)), getattr(torch, name))
            assert ours == theirs, (name, dtype)
    assert isinstance(nn.Parameter(tt.zeros(2)), tt.FloatTensor)
    assert not isinstance(tt.zeros(2, device=other_device), tt.FloatTensor)  # a CPU type, as in PyTorch
    assert not isinstance(np.zeros(2, np.float32), tt.FloatTensor) and not isinstance("x", tt.LongTensor)
    assert not issubclass(tt.FloatTensor, tt.Tensor) and not issubclass(torch.FloatTensor, torch.Tensor)
    assert repr(tt.FloatTensor) == "<class 'tinytensor.FloatTensor'>" and not tt.FloatTensor.is_cuda


BAD = [
    (
        "float",
        lambda: tt.FloatTensor(2.5),
        TypeError,
        r"FloatTensor\(\): data must be a sequence or an array, got float",
    ),
    ("bool", lambda: tt.LongTensor(True), TypeError, r"LongTensor\(\): data must be a sequence .* got bool"),
    ("str", lambda: tt.LongTensor("a"), TypeError, r"got str"),
    ("negative", lambda: tt.FloatTensor(-1), ValueError, r"FloatTensor\(\): a shape holds non-negative integers"),
    (
        "mixed",
        lambda: tt.LongTensor(3, 4.0),
        TypeError,
        r"LongTensor\(\): takes data .* or a shape as ints, got int, float",
    ),
    ("ragged", lambda: tt.FloatTensor([[1, 2], [3]]), ValueError, r"data is ragged"),
    (
        "other-dtype",
        lambda: tt.FloatTensor(tt.tensor([1, 2])),
        TypeError,
        r"expected a float32 tensor on the CPU, got int64",
    ),
    ("keyword", lambda: tt.FloatTensor([1], requires_grad=True), TypeError, r"unexpected keyword argument"),
]


@pytest.mark.parametrize(("name", "call", "exc", "message"), BAD, ids=[row[0] for row in BAD])
def test_bad_input_is_named(name, call, exc, message):
    with pytest.raises(exc, match=message):
        call()
