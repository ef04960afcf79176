"""Optimizer state dicts: PyTorch's layout, resuming exactly, no aliasing, placement on load.

Tests that compare with torch.optim take the ``torch`` fixture (skipped where PyTorch is not
installed); the others run everywhere. Bad state dicts are one table, ``BAD_LOADS``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn, optim

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.5, dampening=0.3)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.05)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, eps=1e-6)),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CONFIGS)]
SAVE_AT, TOTAL = 3, 7


def _weights(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "0.weight": rng.standard_normal((5, 4)),
        "0.bias": rng.standard_normal(5),
        "2.weight": rng.standard_normal((3, 5)),
        "2.bias": rng.standard_normal(3),
    }


def _model(weights, device="cpu", dtype=np.float64):
    model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).to(device, dtype)
    model.load_state_dict(weights)
    return model


def _groups(model, kwargs):
    """Two groups (the first layer at half the rate), so positions cross a group boundary."""
    params = list(model.parameters())
    return [{"params": params[:2], "lr": kwargs["lr"] / 2}, {"params": params[2:]}]


def _batches(n=TOTAL, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((8, 4)), rng.integers(0, 3, 8)) for _ in range(n)]


def _train(model, opt, batches, device="cpu", dtype=np.float64):
    for x, y in batches:
        opt.zero_grad()
        nn.cross_entropy(model(tt.tensor(x.astype(dtype), device=device)), tt.tensor(y, device=device)).backward()
        opt.step()


def _torch_pair(torch, name, kwargs, weights):
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).double()
    model.load_state_dict({k: torch.tensor(v) for k, v in weights.items()})
    return model, getattr(torch.optim, name)(_groups(model, kwargs), **kwargs)


def _torch_train(torch, model, opt, batches):
    for x, y in batches:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(torch.tensor(x)), torch.tensor(y)).backward()
        opt.step()


def _numpy_of(value):
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_state_dict_layout_matches_torch(torch, name, kwargs):
    weights, batches = _weights(), _batches(SAVE_AT)
    model = _model(weights)
    opt = getattr(optim, name)(_groups(model, kwargs), **kwargs)
    _train(model, opt, batches)
    tmodel, topt = _torch_pair(torch, name, kwargs, weights)
    _torch_train(torch, tmodel, topt, batches)

    ours, theirs = opt.state_dict(), topt.state_dict()
    assert [g["params"] for g in ours["param_groups"]] == [g["params"] for g in theirs["param_groups"]]
    for g, tg in zip(ours["param_groups"], theirs["param_groups"], strict=True):
        assert {k: v for k, v in tg.items() if k in g} == g  # ours is a subset of PyTorch's keys
    assert set(ours["state"]) == {i for i, s in theirs["state"].items() if s}
    for index, state in ours["state"].items():
        their_state = theirs["state"][index]
        assert set(state) == {k for k, v in their_state.items() if v is not None}
        for key, value in state.items():
            np.testing.assert_allclose(_numpy_of(value), _numpy_of(their_state[key]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_resume_matches_uninterrupted_run_and_torch(torch, name, kwargs):
    """Train, save, load into a fresh model and optimizer, continue: the same as never stopping."""
    weights, batches = _weights(), _batches()
    straight = _model(weights)
    straight_opt = getattr(optim, name)(_groups(straight, kwargs), **kwargs)
    _train(straight, straight_opt, batches)

    first = _model(weights)
    first_opt = getattr(optim, name)(_groups(first, kwargs), **kwargs)
    _train(first, first_opt, batches[:SAVE_AT])
    saved_model, saved_opt = first.state_dict(), first_opt.state_dict()
    resumed = _model({k: v.numpy() for k, v in saved_model.items()})
    resumed_opt = getattr(optim, name)(_groups(resumed, kwargs), **kwargs)
    resumed_opt.load_state_dict(saved_opt)
    _train(resumed, resumed_opt, batches[SAVE_AT:])

    tmodel, topt = _torch_pair(torch, name, kwargs, weights)
    _torch_train(torch, tmodel, topt, batches)
    for (key, p), q, tq in zip(resumed.named_parameters(), straight.parameters(), tmodel.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=key)
        np.testing.assert_allclose(p.numpy(), tq.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_loads_a_state_dict_saved_by_torch(torch, name, kwargs):
    """A torch.optim state dict loads as PyTorch saved it (torch tensors, a float step, its other
    options), and training continues as in PyTorch."""
    weights, batches = _weights(), _batches()
    tmodel, topt = _torch_pair(torch, name, kwargs, weights)
    _torch_train(torch, tmodel, topt, batches[:SAVE_AT])
    theirs = topt.state_dict()
    for group in theirs["param_groups"]:  # as a GPU run saves them: they change no result
        group.update(foreach=True, fused=True, differentiable=True)
        if "capturable" in group:
            group["capturable"] = True

    model = _model({k: v.detach().numpy() for k, v in tmodel.state_dict().items()})
    opt = getattr(optim, name)(_groups(model, kwargs), **kwargs)
    native_groups = opt.state_dict()["param_groups"]
    opt.load_state_dict(theirs)
    # PyTorch's options are not kept: the groups are those tinytensor saves
    assert opt.state_dict()["param_groups"] == native_groups
    _train(model, opt, batches[SAVE_AT:])
    _torch_train(torch, tmodel, topt, batches[SAVE_AT:])
    for p, tq in zip(model.parameters(), tmodel.parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), tq.detach().numpy(), rtol=1e-10, atol=1e-12)


TORCH_OPTIONS_REFUSED = [  # PyTorch's optimizer and options, tinytensor's optimizer, the message
    pytest.param("SGD", dict(maximize=True), "SGD", "maximize=True", id="SGD-maximize"),
    pytest.param("Adam", dict(amsgrad=True), "Adam", "amsgrad=True", id="Adam-amsgrad"),
    pytest.param("Adam", dict(maximize=True), "Adam", "maximize=True", id="Adam-maximize"),
    pytest.param("AdamW", dict(amsgrad=True), "AdamW", "amsgrad=True", id="AdamW-amsgrad"),
    pytest.param("Adadelta", dict(maximize=True), "Adadelta", "maximize=True", id="Adadelta-maximize"),
    pytest.param(
        "Adam",
        dict(decoupled_weight_decay=True),
        "Adam",
        r"decoupled_weight_decay=True .*load it into optim.AdamW",
        id="Adam-decoupled",
    ),
    pytest.param("AdamW", {}, "Adam", r"decoupled_weight_decay=True .*load it into optim.AdamW", id="AdamW-into-Adam"),
    pytest.param(
        "Adam", {}, "AdamW", r"decoupled_weight_decay=False .*load it into optim.Adam\)", id="Adam-into-AdamW"
    ),
]


@pytest.mark.parametrize("torch_name,torch_kwargs,name,option", TORCH_OPTIONS_REFUSED)
def test_torch_option_that_changes_the_result_is_refused_by_name(torch, torch_name, torch_kwargs, name, option):
    weights = _weights()
    tmodel, topt = _torch_pair(torch, torch_name, {"lr": 0.01, **torch_kwargs}, weights)
    _torch_train(torch, tmodel, topt, _batches(2))
    model = _model(weights)
    opt = getattr(optim, name)(_groups(model, {"lr": 0.01}), lr=0.01)
    before = opt.state_dict()["param_groups"]
    with pytest.raises(ValueError, match=rf"{name}.load_state_dict: parameter group 0: PyTorch option {option}"):
        opt.load_state_dict(topt.state_dict())
    assert opt.state_dict()["param_groups"] == before


def test_none_state_from_older_torch_is_no_state():
    """PyTorch before 2.1 saved SGD's momentum buffer as None where it had none."""
    model = _model(_weights())
    opt = optim.SGD(model.parameters(), lr=0.1)
    saved = opt.state_dict()
    saved["state"] = {i: {"momentum_buffer": None} for i in range(4)}
    opt.load_state_dict(saved)
    assert opt.state_dict()["state"] == {}
    _train(model, opt, _batches(1))


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_state_dict_never_aliases_live_state(name, kwargs):
    model = _model(_weights())
    opt = getattr(optim, name)(model.parameters(), **kwargs)
    batches = _batches(4)
    _train(model, opt, batches[:2])
    saved = opt.state_dict()
    frozen = {i: {k: _numpy_of(v).copy() for k, v in s.items()} for i, s in saved["state"].items()}

    _train(model, opt, batches[2:3])  # a later step must not reach the saved dict
    opt.param_groups[0]["lr"] = 123.0
    fresh = getattr(optim, name)(model.parameters(), **kwargs)
    fresh.load_state_dict(saved)
    _train(model, fresh, batches[3:])  # nor a step of an optimizer that loaded it
    assert saved["param_groups"][0]["lr"] == kwargs["lr"]
    for i, state in saved["state"].items():
        for k, v in state.items():
            np.testing.assert_array_equal(_numpy_of(v), frozen[i][k], err_msg=f"{i}.{k}")


@pytest.mark.parametrize("name", ["SGD", "Adam", "Adadelta"])
def test_load_places_state_on_each_parameter_device_and_dtype(device, name):
    """Saved on the CPU in float64, loaded into a float32 model on ``device``: the state follows
    each parameter, and training continues as it does on the CPU."""
    kwargs = dict(lr=0.05, momentum=0.9) if name == "SGD" else dict(lr=0.01)
    weights, batches = _weights(), _batches()
    source = _model(weights)
    source_opt = getattr(optim, name)(source.parameters(), **kwargs)
    _train(source, source_opt, batches[:SAVE_AT])
    saved_weights = {k: v.numpy() for k, v in source.state_dict().items()}

    runs = {}
    for where in ("cpu", device):
        model = _model(saved_weights, where, np.float32)
        opt = getattr(optim, name)(model.parameters(), **kwargs)
        opt.load_state_dict(source_opt.state_dict())
        for p in model.parameters():
            for key, value in opt.state[id(p)].items():
                if hasattr(value, "shape"):
                    assert tt.tensor(value).device == p.device, key
                    assert value.dtype == p.dtype, key
        _train(model, opt, batches[SAVE_AT:], where, np.float32)
        runs[where] = [p.numpy() for p in model.parameters()]
    for a, b in zip(runs["cpu"], runs[device], strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_load_replaces_hyperparameters_but_keeps_parameters():
    model = _model(_weights())
    saved = optim.SGD(
        [{"params": list(model.parameters())[:2], "lr": 0.3}, {"params": list(model.parameters())[2:]}],
        lr=0.1,
        momentum=0.9,
    ).state_dict()
    fresh = optim.SGD(_groups(model, dict(lr=0.5)), lr=0.5)
    groups_before = [g["params"] for g in fresh.param_groups]
    fresh.load_state_dict(saved)
    assert [g["lr"] for g in fresh.param_groups] == [0.3, 0.1]
    assert [g["momentum"] for g in fresh.param_groups] == [0.9, 0.9]
    assert [g["params"] for g in fresh.param_groups] == groups_before


def _saved(name="SGD", groups=1, **kwargs):
    model = _model(_weights())
    params = list(model.parameters())
    spec = [{"params": params}] if groups == 1 else [{"params": params[:2]}, {"params": params[2:]}]
    opt = getattr(optim, name)(spec, **({"lr": 0.1, "momentum": 0.9} if name == "SGD" else {}), **kwargs)
    _train(model, opt, _batches(1))
    return opt.state_dict()


def _load(saved, name="SGD", groups=1, edit=None):
    model = _model(_weights())
    params = list(model.parameters())
    spec = [{"params": params}] if groups == 1 else [{"params": params[:2]}, {"params": params[2:]}]
    opt = getattr(optim, name)(spec, **({"lr": 0.1} if name == "SGD" else {}))
    if edit:
        edit(saved)
    opt.load_state_dict(saved)


def _shrink_group(saved):
    saved["param_groups"][0]["params"].pop()


def _wrong_shape(saved):
    saved["state"][0]["momentum_buffer"] = np.zeros((2, 2))


def _wrong_adadelta_shape(saved):
    saved["state"][1]["acc_delta"] = np.zeros(4)


def _unknown_index(saved):
    saved["state"][17] = {}


def _bad_lr(saved):
    saved["param_groups"][0]["lr"] = -1.0


def _fractional_step(saved):
    saved["state"][0]["step"] = np.array(2.5)  # a count: truncating it would change the bias correction


BAD_LOADS = [
    (
        "not-a-dict",
        lambda: _load([1, 2]),
        ValueError,
        r"SGD.load_state_dict: expected a dict with 'state' and 'param_groups'",
    ),
    (
        "group-count",
        lambda: _load(_saved(groups=2)),
        ValueError,
        r"SGD.load_state_dict: the state dict has 2 parameter group\(s\), this optimizer has 1",
    ),
    (
        "group-size",
        lambda: _load(_saved(), edit=_shrink_group),
        ValueError,
        r"SGD.load_state_dict: parameter group 0 has 3 parameter\(s\) in the state dict, 4 in this optimizer",
    ),
    (
        "other-optimizer",
        lambda: _load(_saved("Adam"), "SGD"),
        ValueError,
        r"SGD.load_state_dict: parameter group 0 lacks 'momentum', 'dampening', 'nesterov' and has unknown "
        r"key\(s\) 'betas', 'eps'; SGD's groups hold lr, momentum, dampening, weight_decay, nesterov$",
    ),
    (
        "other-optimizer-adadelta",
        lambda: _load(_saved("Adam"), "Adadelta"),
        ValueError,
        r"Adadelta.load_state_dict: parameter group 0 lacks 'rho' and has unknown key\(s\) 'betas'; "
        r"Adadelta's groups hold lr, rho, eps, weight_decay$",
    ),
    (
        "adadelta-state-shape",
        lambda: _load(_saved("Adadelta"), "Adadelta", edit=_wrong_adadelta_shape),
        ValueError,
        r"Adadelta.load_state_dict: state 'acc_delta' of parameter 1 has shape \(4,\), the parameter has shape \(5,\)",
    ),
    (
        "state-shape",
        lambda: _load(_saved(), edit=_wrong_shape),
        ValueError,
        r"state 'momentum_buffer' of parameter 0 has shape \(2, 2\), the parameter has shape \(5, 4\)",
    ),
    (
        "unknown-index",
        lambda: _load(_saved(), edit=_unknown_index),
        ValueError,
        r"the state dict has state for parameter 17, which no group lists",
    ),
    (
        "bad-hyperparameter",
        lambda: _load(_saved(), edit=_bad_lr),
        ValueError,
        r"SGD.load_state_dict: parameter group 0: invalid lr -1.0",
    ),
    (
        "fractional-step",
        lambda: _load(_saved("Adam"), "Adam", edit=_fractional_step),
        ValueError,
        r"Adam.load_state_dict: state 'step' of parameter 0 is 2.5, expected a whole number >= 0",
    ),
]


@pytest.mark.parametrize("call,exc,message", [c[1:] for c in BAD_LOADS], ids=[c[0] for c in BAD_LOADS])
def test_bad_state_dict_is_named(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_failed_load_changes_nothing():
    model = _model(_weights())
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _train(model, opt, _batches(1))
    before = opt.state_dict()
    saved = _saved()
    saved["param_groups"][0]["lr"] = 0.7
    _wrong_shape(saved)
    with pytest.raises(ValueError):
        opt.load_state_dict(saved)
    after = opt.state_dict()
    assert after["param_groups"] == before["param_groups"]
    for i in before["state"]:
        np.testing.assert_array_equal(
            after["state"][i]["momentum_buffer"].numpy(), before["state"][i]["momentum_buffer"].numpy()
        )


class _Uncopyable(float):
    """A number that passes the hyperparameter checks but cannot be deep-copied."""

    def __deepcopy__(self, memo):
        raise RuntimeError("this value cannot be copied")


def test_a_value_that_cannot_be_copied_leaves_every_group_unchanged():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    opt = optim.SGD([{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.2}], lr=0.1)
    before = opt.state_dict()["param_groups"]
    saved = opt.state_dict()
    saved["param_groups"][0]["lr"] = 0.5
    saved["param_groups"][1]["dampening"] = _Uncopyable(0.0)
    with pytest.raises(RuntimeError, match="cannot be copied"):
        opt.load_state_dict(saved)
    assert opt.state_dict()["param_groups"] == before
    assert [len(g["params"]) for g in opt.param_groups] == [2, 2]
