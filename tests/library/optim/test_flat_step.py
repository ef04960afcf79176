"""The optimizers' flat step (``optim.flat``): the same numbers as the per-parameter path, bit for
bit, and everything that may change a parameter's array, gradient or state between steps.

Each scenario runs twice, once as users get it and once with the flat step switched off
(``FLAT_MAX_SIZE = 0`` sends every parameter down the per-parameter path), and the parameters
and optimizer state must come out identical.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn, optim
from tinytensor.optim import adadelta, adam, flat, sgd

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.5, dampening=0.3, weight_decay=0.1)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.05)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, eps=1e-6)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CONFIGS)]


def _model(dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).to(dtype)
    model.load_state_dict({k: rng.standard_normal(p.shape) for k, p in model.state_dict().items()})
    return model


def _backward(model, step, dtype=np.float32):
    rng = np.random.default_rng(100 + step)
    x = tt.tensor(rng.standard_normal((8, 4)).astype(dtype))
    nn.cross_entropy(model(x), tt.tensor(rng.integers(0, 3, 8))).backward()


def _train(model, opt, steps=5, between=None, dtype=np.float32):
    """Train ``steps`` steps; True when the last one was a flat step."""
    flat_step = False
    for step in range(steps):
        opt.zero_grad()
        _backward(model, step, dtype)
        if between is not None:
            between(step, model, opt)
        before = len(FLAT_STEPS)
        opt.step()
        flat_step = len(FLAT_STEPS) > before
    return flat_step


def _result(model, opt):
    """The parameters and every state array, as numpy copies, in order."""
    params = [p.numpy().copy() for p in model.parameters()]
    state = opt.state_dict()["state"]
    arrays = [np.array(v.numpy()) for i in sorted(state) for k, v in sorted(state[i].items()) if hasattr(v, "numpy")]
    steps = [v for i in sorted(state) for k, v in sorted(state[i].items()) if not hasattr(v, "numpy")]
    return params, arrays, steps


FLAT_STEPS: list = []  # one entry per flat update run, while _both counts them


def _both(monkeypatch, scenario):
    """``scenario()``'s result with the flat step and with the per-parameter path only."""
    with monkeypatch.context() as m:
        for module, name in ((sgd, "sgd_flat"), (adam, "adam_flat"), (adadelta, "adadelta_flat")):
            original = getattr(module, name)
            m.setattr(module, name, lambda *args, _f=original: FLAT_STEPS.append(1) or _f(*args))
        flat_result = scenario()
    with monkeypatch.context() as m:
        m.setattr(flat, "FLAT_MAX_SIZE", 0)
        reference = scenario()
    return flat_result, reference


def _assert_same(got, expected):
    for a, b in zip(got[0] + got[1], expected[0] + expected[1], strict=True):
        np.testing.assert_array_equal(a, b)
    assert got[2] == expected[2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_flat_step_is_the_per_parameter_step_bit_for_bit(monkeypatch, name, kwargs, dtype):
    def scenario():
        model = _model(dtype)
        opt = getattr(optim, name)(model.parameters(), **kwargs)
        _train(model, opt, dtype=dtype)
        return _result(model, opt)

    before = len(FLAT_STEPS)
    _assert_same(*_both(monkeypatch, scenario))
    assert len(FLAT_STEPS) - before == 5  # every step of the first run was a flat one


def test_parameters_and_state_become_views_of_one_array_per_group():
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _train(model, opt, steps=2)
    (layout,) = opt._flat_layouts.values()
    for p in model.parameters():
        assert p._data.base is layout.flat_params
        assert opt.state[id(p)]["momentum_buffer"].base is layout.state["momentum_buffer"][0]
    # what a user takes from a parameter now shares its storage, as before
    weight = model[0].weight
    held = weight.numpy()
    _train(model, opt, steps=1)
    np.testing.assert_array_equal(held, weight.numpy())


def test_an_array_held_elsewhere_keeps_its_storage():
    """A parameter whose array something else holds (here a .numpy() view) is never moved: the
    alias keeps seeing every update."""
    model = _model()
    held = model[0].weight.numpy()
    detached = model[2].bias.detach()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    before = held.copy()
    _train(model, opt, steps=3)
    assert np.shares_memory(held, model[0].weight.numpy())
    assert np.shares_memory(detached.numpy(), model[2].bias.numpy())
    assert not np.array_equal(held, before)


def _replace_data(step, model, opt):
    if step == 2:
        model[0].weight.data = tt.tensor(np.full((5, 4), 0.5, np.float32))
        model[2].bias.data = np.zeros(3, np.float32)


def _load_module_state(step, model, opt):
    if step == 1:
        model.load_state_dict(_model(seed=7).state_dict())


def _replace_grad(step, model, opt):
    if step == 3:
        model[0].bias.grad = tt.tensor(np.ones(5, np.float32))
    if step == 1:
        _ = model[2].weight.grad  # read: the stored array becomes a Tensor
        model[2].weight.grad.mul_(0.5)


def _drop_a_grad(step, model, opt):
    if step in (1, 2):
        model[0].weight.grad = None  # no update, no momentum decay for it this step


def _late_grad(step, model, opt):
    if step < 2:
        model[0].weight.grad = None  # its first step comes when the others already have state


def _load_optimizer_state(step, model, opt):
    if step == 2:
        saved = opt.state_dict()
        for values in saved["state"].values():
            for value in values.values():
                if hasattr(value, "numpy"):
                    value.mul_(0.5)
        opt.load_state_dict(saved)


def _edit_state(step, model, opt):
    if step == 2:
        state = opt.state[id(model[2].weight)]
        key = next(k for k in ("momentum_buffer", "exp_avg", "square_avg") if k in state)
        state[key] = np.zeros_like(state[key])  # a new array, not the flat view


SCENARIOS = {
    "p.data replaced": _replace_data,
    "module load_state_dict": _load_module_state,
    "p.grad replaced or changed": _replace_grad,
    "a parameter without grad": _drop_a_grad,
    "a parameter's first grad comes late": _late_grad,
    "optimizer load_state_dict": _load_optimizer_state,
    "state array replaced": _edit_state,
}


@pytest.mark.parametrize("between", SCENARIOS.values(), ids=SCENARIOS.keys())
@pytest.mark.parametrize(
    "name,kwargs", [CONFIGS[1], CONFIGS[2], CONFIGS[5], CONFIGS[6], CONFIGS[8]], ids=IDS[1:3] + IDS[5:7] + IDS[8:9]
)
def test_changes_between_steps_are_honoured(monkeypatch, name, kwargs, between):
    def scenario():
        model = _model()
        opt = getattr(optim, name)(model.parameters(), **kwargs)
        flat_step = _train(model, opt, steps=6, between=between)
        return (*_result(model, opt), flat_step)

    got, expected = _both(monkeypatch, scenario)
    _assert_same(got, expected)
    # the last step was a flat one again, after the change (the per-parameter run takes none);
    # except for Adam once a parameter missed a step: its step count lags the others' for good,
    # and Adam's bias correction is per parameter (Adadelta's update does not read its count)
    assert got[3] == (name in ("SGD", "Adadelta") or between not in (_late_grad, _drop_a_grad))
    assert not expected[3]


@pytest.mark.parametrize("name,kwargs", [CONFIGS[1], CONFIGS[5], CONFIGS[8]], ids=[IDS[1], IDS[5], IDS[8]])
def test_module_to_another_dtype_between_steps(monkeypatch, name, kwargs):
    def scenario():
        model = _model()
        opt = getattr(optim, name)(model.parameters(), **kwargs)
        _train(model, opt, steps=2)
        model.to(np.float64)
        _train(model, opt, steps=3, dtype=np.float64)
        return _result(model, opt)

    got, expected = _both(monkeypatch, scenario)
    _assert_same(got, expected)
    assert all(p.dtype == np.float64 for p in _model().to(np.float64).parameters())


@pytest.mark.parametrize("name,kwargs", [CONFIGS[1], CONFIGS[5], CONFIGS[8]], ids=[IDS[1], IDS[5], IDS[8]])
def test_param_group_added_after_steps(monkeypatch, name, kwargs):
    def scenario():
        model, extra = _model(), _model(seed=4)
        opt = getattr(optim, name)(model.parameters(), **kwargs)
        _train(model, opt, steps=2)
        opt.add_param_group({"params": list(extra.parameters()), "lr": kwargs["lr"] / 2})
        for step in range(3):
            opt.zero_grad()
            _backward(model, step)
            _backward(extra, step + 10)
            opt.step()
        params, state, steps = _result(model, opt)
        return params + [p.numpy().copy() for p in extra.parameters()], state, steps

    _assert_same(*_both(monkeypatch, scenario))


@pytest.mark.parametrize("name,kwargs", [CONFIGS[1], CONFIGS[5], CONFIGS[8]], ids=[IDS[1], IDS[5], IDS[8]])
def test_a_group_of_two_dtypes(monkeypatch, name, kwargs):
    def scenario():
        single, double = _model(), _model(np.float64, seed=2)
        opt = getattr(optim, name)(list(single.parameters()) + list(double.parameters()), **kwargs)
        for step in range(4):
            opt.zero_grad()
            _backward(single, step)
            _backward(double, step, np.float64)
            opt.step()
        params, state, steps = _result(single, opt)
        return params + [p.numpy().copy() for p in double.parameters()], state, steps

    _assert_same(*_both(monkeypatch, scenario))


@pytest.mark.parametrize("name,kwargs", [CONFIGS[1], CONFIGS[8]], ids=[IDS[1], IDS[8]])
def test_a_copy_of_the_optimizer_steps_its_own_parameters(monkeypatch, name, kwargs):
    def scenario():
        model = _model()
        opt = getattr(optim, name)(model.parameters(), **kwargs)
        _train(model, opt, steps=2)
        twin = copy.deepcopy(opt)  # copies the parameters too
        twin_params = twin.param_groups[0]["params"]
        for _ in range(3):
            for p in twin_params:
                p.grad = np.ones(p.shape, np.float32)
            twin.step()
        _train(model, opt, steps=1)
        return [p.numpy().copy() for p in model.parameters()] + [p.numpy().copy() for p in twin_params], [], []

    _assert_same(*_both(monkeypatch, scenario))


def test_a_graph_saved_before_a_flat_step_refuses_backward():
    model = _model()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _train(model, opt, steps=1)  # the layout exists: the next step is a flat one
    x = tt.tensor(np.ones((2, 4), np.float32))
    loss = model(x).sum()
    opt.zero_grad()
    _backward(model, 0)
    opt.step()
    with pytest.raises(RuntimeError, match="modified in place"):
        loss.backward()


def test_numpy_scalar_hyperparameters_take_the_per_parameter_path():
    """numpy scalars promote differently from Python numbers: those groups keep the old path."""
    model = _model()
    opt = optim.SGD(model.parameters(), lr=np.float64(0.1), momentum=0.9)
    _train(model, opt, steps=2)
    assert not opt._flat_layouts


def test_adadelta_copy_leaves_out_the_flat_temporary():
    """Adadelta's flat step keeps one temporary per group between steps; a copy makes its own."""
    model = _model()
    opt = optim.Adadelta(model.parameters())
    _train(model, opt, steps=2)
    assert len(opt._flat_deltas) == 1
    assert pickle.loads(pickle.dumps(opt))._flat_deltas == {}
    assert copy.deepcopy(opt)._flat_deltas == {}
