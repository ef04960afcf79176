"""Loading a state dict is all or nothing, and reports what it left out as PyTorch does.

Every entry (name, type, shape, dtype cast, device) is checked and converted before the module
changes, so a state dict with one bad tensor, even the last one, leaves every parameter and buffer
as it was. Values are cast to the module's dtypes as PyTorch's ``copy_`` casts them. PyTorch is the
oracle for the ``strict=False`` report and for the casts.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.serialization import save


def _model(seed):
    """Three layers, with BatchNorm's buffers (running stats, an int64 counter) between them."""
    tt.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))
    model(tt.randn(5, 4))  # training mode: the running stats and the counter move off their defaults
    return model


def _snapshot(model):
    return {name: t.cpu().numpy().copy() for name, t in model.state_dict().items()}


def _assert_unchanged(model, before):
    after = _snapshot(model)
    assert list(after) == list(before)
    for name, array in before.items():
        assert after[name].dtype == array.dtype, name
        np.testing.assert_array_equal(after[name], array, err_msg=name)


def _other_state():
    """A complete state dict for the model, every value different from ``_model(0)``'s."""
    return {name: t.numpy().copy() for name, t in _model(1).state_dict().items()}


def _from_file(tmp_path, state):
    path = tmp_path / "ckpt.tt"
    save(state, path)
    return path


LOADERS = {
    "load_state_dict": lambda model, state, tmp_path, **kw: model.load_state_dict(state, **kw),
    "Module.load": lambda model, state, tmp_path, **kw: model.load(_from_file(tmp_path, state), **kw),
}


# ---------------------------------------------------------------------------- all or nothing
@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("strict", [True, False])
def test_a_misshaped_last_tensor_leaves_every_parameter_and_buffer_as_it_was(loader, strict, tmp_path):
    model = _model(0)
    before = _snapshot(model)
    state = _other_state()
    assert list(state)[-1] == "2.bias"
    state["2.bias"] = np.zeros(4, np.float32)
    with pytest.raises(tt.ShapeError) as err:
        LOADERS[loader](model, state, tmp_path, strict=strict)
    _assert_unchanged(model, before)
    assert str(err.value).endswith(
        "Error(s) in loading state_dict for Sequential:\n\tsize mismatch for 2.bias: copying a param "
        "with shape (4,) from checkpoint, the shape in current model is (3,)."
    )


def test_every_size_mismatch_is_named_at_once(torch):
    model = _model(0)
    state = _other_state()
    state["0.weight"], state["2.bias"] = np.zeros((8, 5), np.float32), np.zeros(4, np.float32)
    with pytest.raises(tt.ShapeError) as ours:
        model.load_state_dict(state)

    reference = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 3))
    with pytest.raises(RuntimeError) as theirs:
        reference.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    # the same lines, shapes written as tuples rather than torch.Size
    as_tuple = lambda m: str(tuple(int(n) for n in m[1].split(", ") if n))  # noqa: E731
    assert str(ours.value) == re.sub(r"torch\.Size\(\[(.*?)\]\)", as_tuple, str(theirs.value))


@pytest.mark.parametrize("loader", LOADERS)
def test_a_value_that_cannot_be_cast_leaves_every_parameter_and_buffer_as_it_was(loader, tmp_path):
    model = _model(0)
    before = _snapshot(model)
    state = _other_state()
    state["1.num_batches_tracked"] = np.array(np.nan)  # into an int64 buffer, after five other entries
    with pytest.raises(ValueError, match=r"'1\.num_batches_tracked'.*cannot convert NaN"):
        LOADERS[loader](model, state, tmp_path)
    _assert_unchanged(model, before)


def test_a_value_that_is_not_a_tensor_leaves_every_parameter_and_buffer_as_it_was():
    model = _model(0)
    before = _snapshot(model)
    state = _other_state()
    state["2.bias"] = "not a tensor"
    with pytest.raises(TypeError, match=r"'2\.bias' must be a tensor or an array, got str"):
        model.load_state_dict(state)
    _assert_unchanged(model, before)


@pytest.mark.parametrize("loader", LOADERS)
def test_missing_or_unexpected_names_leave_the_module_as_it_was(loader, tmp_path):
    model = _model(0)
    before = _snapshot(model)
    state = _other_state()
    del state["2.bias"]
    with pytest.raises(KeyError, match=r"missing keys \['2\.bias'\]"):
        LOADERS[loader](model, state, tmp_path)
    _assert_unchanged(model, before)


def test_a_model_on_another_device_is_left_whole_then_loaded_in_place(device):
    model = _model(0).to(device)
    before = _snapshot(model)
    state = _other_state()
    state["2.bias"] = np.zeros(4, np.float32)
    with pytest.raises(tt.ShapeError, match=r"size mismatch for 2\.bias"):
        model.load_state_dict(state)
    _assert_unchanged(model, before)
    assert {t.device for t in model.state_dict().values()} == {tt.device(device)}

    state["2.bias"] = np.zeros(3, np.float32)
    model.load_state_dict(state)
    assert {t.device for t in model.state_dict().values()} == {tt.device(device)}
    for name, array in _snapshot(model).items():
        np.testing.assert_array_equal(array, state[name].astype(before[name].dtype), err_msg=name)


# ---------------------------------------------------------------------------- casts, as PyTorch
def test_values_are_cast_to_the_module_dtypes_as_pytorch_copies_them(torch):
    state = _other_state()
    state["0.weight"] = state["0.weight"].astype(np.float64) + 1e-9  # float64 into float32: rounded
    state["0.bias"] = np.arange(8, dtype=np.int64)  # int64 into float32
    state["1.num_batches_tracked"] = np.array(7.0)  # float into the int64 counter

    model = _model(0)
    model.load_state_dict(state)
    reference = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 3))
    reference.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in state.items()})

    ours, theirs = model.state_dict(), reference.state_dict()
    assert list(ours) == list(theirs)
    for name, tensor in theirs.items():
        expected = tensor.numpy()
        assert ours[name].numpy().dtype == expected.dtype, name
        np.testing.assert_array_equal(ours[name].numpy(), expected, err_msg=name)


# ---------------------------------------------------------------------------- strict=False, as PyTorch
def test_strict_false_reports_missing_and_unexpected_names_as_pytorch_does(torch):
    state = _other_state()
    del state["0.bias"], state["1.running_var"]
    extras = ["2.extra", "1.foo.bar", "extra", "0", "9.weight", "0.weight.x", "1.num_batches_tracked.y"]
    for name in extras:
        state[name] = np.zeros(1, np.float32)

    model = _model(0)
    before = _snapshot(model)
    result = model.load_state_dict(state, strict=False)
    reference = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 3))
    expected = reference.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=False)

    assert result.missing_keys == expected.missing_keys == ["0.bias", "1.running_var"]
    assert result.unexpected_keys == expected.unexpected_keys
    assert sorted(result.unexpected_keys) == sorted(extras)
    assert tuple(result) == tuple(expected)
    assert repr(result) == repr(expected).replace("_IncompatibleKeys", "LoadResult")
    # what was there was loaded; what was missing stayed
    after = _snapshot(model)
    np.testing.assert_array_equal(after["0.weight"], state["0.weight"])
    np.testing.assert_array_equal(after["0.bias"], before["0.bias"])
    np.testing.assert_array_equal(after["1.running_var"], before["1.running_var"])


def test_a_complete_load_reports_that_all_keys_matched_as_pytorch_does(torch):
    result = _model(0).load_state_dict(_other_state())
    reference = torch.nn.Linear(2, 2)
    expected = reference.load_state_dict(reference.state_dict())
    assert repr(result) == repr(expected) == "<All keys matched successfully>"
    assert result == expected == ([], [])
