"""Bad input, as a table: every row is a call that must fail with an error naming the function,
the argument and the problem, in the user's terms (never a raw numpy message, an AttributeError,
a KeyError, a segfault or a silent wrong answer).

Optimizers, data loading, saving and nn layers keep their own tables next to their tests
(optim/test_optimizer_api.py, test_data.py, test_serialization.py, test_nn_layers.py); this one covers
tensors, creation, ops and Module.
"""

import math

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.nn import functional as F


class _BadDLPackDevice:
    def __dlpack__(self, *args, **kwargs):
        raise AssertionError("not reached")

    def __dlpack_device__(self):
        return "gpu please"


class _RaisingDLPack:
    def __dlpack__(self, *args, **kwargs):
        raise RuntimeError("producer exploded")

    def __dlpack_device__(self):
        return (1, 0)


class _NoCapsule:
    def __dlpack__(self, *args, **kwargs):
        return "not a capsule"

    def __dlpack_device__(self):
        return (1, 0)


class _OnlyDevice:
    def __dlpack_device__(self):
        return (1, 0)


def _x():
    return tt.tensor([[1.0, 2.0], [3.0, 4.0]])


BAD = [
    # ---- Python data into tensors
    ("tensor-None", lambda: tt.tensor(None), TypeError, r"tensor\(\): data must be a number.*got NoneType"),
    ("tensor-str", lambda: tt.tensor("1.5"), TypeError, r"tensor\(\): data must be a number.*got str"),
    ("tensor-str-in-list", lambda: tt.tensor([1, "2"]), TypeError, r"tensor\(\): data must hold numbers or bools"),
    ("tensor-None-in-list", lambda: tt.tensor([1.0, None]), TypeError, r"data must hold numbers or bools"),
    ("tensor-complex", lambda: tt.tensor([1 + 2j]), TypeError, r"tensor\(\): complex numbers are not supported"),
    ("tensor-complex-array", lambda: tt.tensor(np.ones(2, np.complex64)), TypeError, r"complex arrays"),
    ("tensor-object-array", lambda: tt.tensor(np.array([object()])), TypeError, r"dtype object are not supported"),
    ("tensor-ragged", lambda: tt.tensor([[1, 2], [3]]), ValueError, r"tensor\(\): data is ragged"),
    ("tensor-huge-int", lambda: tt.tensor([2**70]), ValueError, r"does not fit in int64"),
    ("Tensor-positional-bool", lambda: tt.tensor([1.0], True), TypeError, r"True is not a dtype.*keyword"),
    ("tensor-unknown-dtype", lambda: tt.tensor([1.0], dtype="float128"), TypeError, r"unknown dtype 'float128'"),
    ("tensor-dtype-object", lambda: tt.tensor([1.0], dtype=object), TypeError, r"dtype object is not supported"),
    # ---- NaN and out-of-range values into integer tensors
    ("nan-to-int64", lambda: tt.tensor([1.5, math.nan], dtype="int64"), ValueError, r"cannot convert NaN or inf"),
    ("inf-to-int32", lambda: tt.tensor(np.array([np.inf]), dtype="int32"), ValueError, r"NaN or infinity to int32"),
    ("big-float-to-int64", lambda: tt.tensor([1e20], dtype="int64"), ValueError, r"do not fit in int64"),
    ("big-int-to-int32", lambda: tt.tensor([2**40], dtype="int32"), ValueError, r"do not fit in int32"),
    ("nan-long", lambda: tt.tensor([math.nan]).long(), ValueError, r"to\(\): cannot convert NaN"),
    ("big-int", lambda: tt.tensor([3e9]).int(), ValueError, r"to\(\): values outside .* do not fit in int32"),
    ("load-nan-into-int", lambda: tt.zeros(2, dtype="int64").copy_(tt.tensor([math.nan, 1.0])), ValueError, r"NaN"),
    # ---- creation functions
    ("arange-step-0", lambda: tt.arange(0, 5, 0), ValueError, r"arange\(\): step must be nonzero"),
    ("arange-nan", lambda: tt.arange(math.nan), ValueError, r"arange\(\): start, end and step must be finite"),
    ("arange-wrong-way", lambda: tt.arange(5, 0, 1), ValueError, r"arange\(\): step 1 points away from end 0"),
    ("arange-str", lambda: tt.arange("5"), TypeError, r"arange\(\): end must be a number, got str"),
    ("zeros-negative", lambda: tt.zeros(2, -1), ValueError, r"zeros\(\): a shape holds non-negative integers"),
    ("zeros-float", lambda: tt.zeros(2.5), ValueError, r"zeros\(\): a shape holds non-negative integers"),
    ("full-None", lambda: tt.full((2,), None), TypeError, r"full\(\): fill_value must be a number, got NoneType"),
    ("full-fraction-int", lambda: tt.full((2,), 0.5, dtype="int64"), ValueError, r"0.5 cannot be stored exactly"),
    ("randn-int-dtype", lambda: tt.randn(2, dtype="int64"), TypeError, r"randn\(\): .* floating-point dtype"),
    ("unknown-device", lambda: tt.zeros(2, device="tpu"), tt.DeviceError, r"unknown device 'tpu'"),
    # ---- malformed DLPack producers
    ("dlpack-list", lambda: tt.from_dlpack([1, 2]), TypeError, r"from_dlpack\(\): list does not implement"),
    ("dlpack-only-device", lambda: tt.from_dlpack(_OnlyDevice()), TypeError, r"does not implement the DLPack"),
    ("dlpack-bad-device", lambda: tt.from_dlpack(_BadDLPackDevice()), TypeError, r"__dlpack_device__\(\) must return"),
    ("dlpack-raises", lambda: tt.from_dlpack(_RaisingDLPack()), TypeError, r"not a valid DLPack producer.*exploded"),
    (
        "dlpack-no-capsule",
        lambda: tt.from_dlpack(_NoCapsule()),
        TypeError,
        r"_NoCapsule is not a valid DLPack producer",
    ),
    # ---- a numpy array or junk where a Tensor is expected (arrays are accepted: see below)
    ("exp-None", lambda: tt.exp(None), TypeError, r"exp\(\): argument 'input' must be a Tensor, got NoneType"),
    ("sum-str", lambda: tt.sum("abc"), TypeError, r"sum\(\): argument 'input' must be a Tensor, got str"),
    ("relu-dict", lambda: F.relu({}), TypeError, r"relu\(\): argument 'input' must be a Tensor, got dict"),
    ("linear-weight-None", lambda: F.linear(_x(), None), TypeError, r"linear\(\): argument 'weight' must be a Tensor"),
    ("maximum-str", lambda: tt.maximum(_x(), "a"), TypeError, r"maximum\(\): argument 'other' must be a Tensor or"),
    ("matmul-int", lambda: tt.matmul(_x(), 2), TypeError, r"matmul\(\): argument 'other' must be a Tensor, got int"),
    ("where-cond-list", lambda: tt.where([True, False], _x(), 0.0), TypeError, r"where\(\): argument 'condition'"),
    ("cat-not-a-list", lambda: tt.cat(_x()), TypeError, r"cat\(\): tensors must be a list or tuple"),
    ("cat-None-item", lambda: tt.cat([_x(), None]), TypeError, r"cat\(\): tensors\[1\] must be a Tensor"),
    ("cat-empty", lambda: tt.cat([]), ValueError, r"cat\(\): needs at least one tensor"),
    # ---- axes, shapes and indices
    ("sum-dim-str", lambda: _x().sum(dim="0"), TypeError, r"an axis \(dim\) must be an int or a tuple of ints"),
    ("sum-dim-out-of-range", lambda: _x().sum(dim=2), tt.ShapeError, r"axis 2 is out of range for a tensor with 2"),
    ("mean-of-ints", lambda: tt.tensor([1, 2]).mean(), TypeError, r"mean\(\) needs a floating-point tensor"),
    ("max-dim-tuple", lambda: _x().max(dim=(0, 1)), TypeError, r"max\(\): dim must be an int.*amax"),
    ("reshape-float", lambda: _x().reshape(2.0, 2), TypeError, r"reshape\(\): a shape holds ints"),
    ("view-wrong-size", lambda: _x().view(3), tt.ShapeError, r"cannot reshape a tensor of shape \(2, 2\) into \(3,\)"),
    ("size-str", lambda: _x().size("0"), TypeError, r"size\(\): dim must be an int, got str"),
    ("size-out-of-range", lambda: _x().size(2), IndexError, r"size\(\): dim 2 is out of range"),
    ("index-float", lambda: _x()[1.5], IndexError, r"index 1.5 is invalid for a tensor of shape \(2, 2\)"),
    ("index-out-of-range", lambda: _x()[5], IndexError, r"index 5 is invalid for a tensor of shape \(2, 2\)"),
    ("gather-out-of-range", lambda: _x()[tt.tensor([0, 2])], IndexError, r"index 2 is out of range for axis 0"),
    ("gather-ndarray-out-of-range", lambda: _x()[np.array([0, 2])], IndexError, r"index 2 is out of range for axis 0"),
    ("item-of-many", lambda: _x().item(), ValueError, r"item\(\) needs a one-element tensor"),
    ("bool-of-many", lambda: bool(_x()), ValueError, r"truth value of a tensor of shape \(2, 2\) is ambiguous"),
    ("to-int-device", lambda: _x().to(0), TypeError, r"to\(\): 0 is not a dtype.*keyword"),
    # ---- backward
    ("backward-no-grad", lambda: _x().sum().backward(), RuntimeError, r"does not require grad"),
    (
        "backward-grad-shape",
        lambda: (tt.ones(2, requires_grad=True) * 2).backward(tt.ones(3)),
        tt.ShapeError,
        r"backward\(\): grad has shape \(3,\), the tensor has shape \(2,\)",
    ),
    (
        "backward-grad-int",
        lambda: (tt.ones(2, requires_grad=True) * 2).backward(tt.tensor([1, 1])),
        TypeError,
        r"backward\(\): grad must be floating point, got dtype int64",
    ),
    ("int-requires-grad", lambda: tt.tensor([1, 2], requires_grad=True), TypeError, r"only floating-point tensors"),
    # ---- Module.to and layer sizes
    ("module-to-int64", lambda: nn.Linear(2, 2).to("int64"), TypeError, r"Module.to\(\): only floating-point dtypes"),
    (
        "module-to-np-bool",
        lambda: nn.Linear(2, 2).to(np.bool_),
        TypeError,
        r"only floating-point dtypes are accepted, got bool",
    ),
    (
        "module-to-int",
        lambda: nn.Linear(2, 2).to(1),
        TypeError,
        r"Module.to\(\): got 1; a device is a string .*'cuda:1'",
    ),
    ("module-to-junk", lambda: nn.Linear(2, 2).to("gpu"), tt.DeviceError, r"unknown device 'gpu'"),
    ("linear-negative", lambda: nn.Linear(-1, 3), ValueError, r"Linear\(\): in_features must be an int >= 0, got -1"),
    ("linear-float", lambda: nn.Linear(2, 3.5), TypeError, r"Linear\(\): out_features must be an int >= 0, got float"),
    (
        "embedding-negative",
        lambda: nn.Embedding(-2, 3),
        ValueError,
        r"Embedding\(\): num_embeddings must be an int >= 0",
    ),
    (
        "layernorm-negative",
        lambda: nn.LayerNorm(-4),
        ValueError,
        r"LayerNorm\(\): normalized_shape must be an int >= 0",
    ),
    ("layernorm-eps", lambda: nn.LayerNorm(4, eps=0), ValueError, r"LayerNorm\(\): eps must be a positive number"),
    ("dropout-p", lambda: nn.Dropout(1.5), ValueError, r"Dropout\(\): p must be a probability in \[0, 1\]"),
    ("linear-input-shape", lambda: nn.Linear(3, 2)(tt.zeros(4, 5)), tt.ShapeError, r"\(4, 5\).*\(2, 3\)"),
    # ---- load_state_dict values
    ("state-not-mapping", lambda: nn.Linear(2, 2).load_state_dict([1, 2]), TypeError, r"must be a mapping.*list"),
    (
        "state-value-None",
        lambda: nn.Linear(1, 1).load_state_dict({"weight": None, "bias": np.zeros(1)}),
        TypeError,
        r"load_state_dict\(\): 'weight' must be a tensor or an array, got NoneType",
    ),
    (
        "state-value-str",
        lambda: nn.Linear(1, 1).load_state_dict({"weight": [[1.0]], "bias": "0"}),
        TypeError,
        r"load_state_dict\(\): 'bias' must be a tensor or an array, got str",
    ),
    (
        "state-value-complex",
        lambda: nn.Linear(1, 1).load_state_dict({"weight": np.ones((1, 1), np.complex64), "bias": np.zeros(1)}),
        TypeError,
        r"load_state_dict\(\): 'weight': complex arrays are not supported",
    ),
    (
        "state-value-ragged",
        lambda: nn.Linear(2, 1).load_state_dict({"weight": [[1.0], [2.0, 3.0]], "bias": [0.0]}),
        ValueError,
        r"load_state_dict\(\): 'weight': data is ragged",
    ),
    (
        "state-value-shape",
        lambda: nn.Linear(2, 1).load_state_dict({"weight": np.zeros((2, 1)), "bias": np.zeros(1)}),
        tt.ShapeError,
        r"size mismatch for weight: copying a param with shape \(2, 1\) from checkpoint, the shape in current model "
        r"is \(1, 2\)",
    ),
]


@pytest.mark.parametrize("name,call,exc,message", BAD, ids=[row[0] for row in BAD])
def test_bad_input_is_named(name, call, exc, message):
    with pytest.raises(exc, match=message) as info:
        call()
    # never an error that would hide what went wrong
    assert not isinstance(info.value, (AttributeError, KeyError))


ACCEPTED = [  # arrays and Python data where a Tensor is expected: converted, as the same values
    ("exp-ndarray", lambda: tt.exp(np.zeros(2)), [1.0, 1.0]),
    ("sum-list", lambda: tt.sum([1.0, 2.0]), 3.0),
    ("max-ndarray-dim", lambda: tt.max(np.array([[1.0, 5.0]]), dim=1).values, [5.0]),
    ("reshape-ndarray", lambda: tt.reshape(np.arange(4.0), (2, 2)), [[0.0, 1.0], [2.0, 3.0]]),
    ("relu-ndarray", lambda: F.relu(np.array([-1.0, 2.0])), [0.0, 2.0]),
    ("softmax-ndarray", lambda: F.softmax(np.zeros(2), dim=0), [0.5, 0.5]),
    ("cross-entropy-ndarray", lambda: F.cross_entropy(np.zeros((1, 2)), np.array([0])), math.log(2)),
    ("module-ndarray", lambda: nn.Identity()(np.array([3.0])), [3.0]),
    ("maximum-ndarray-first", lambda: tt.maximum(np.array([1.0, 5.0]), tt.tensor([2.0, 2.0])), [2.0, 5.0]),
]


@pytest.mark.parametrize("name,call,expected", ACCEPTED, ids=[row[0] for row in ACCEPTED])
def test_arrays_where_a_tensor_is_expected_are_converted(name, call, expected):
    out = call()
    assert isinstance(out, tt.Tensor)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
