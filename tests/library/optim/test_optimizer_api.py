"""Optimizer construction, parameter groups, hyperparameter checks and step()'s gradient checks
(no PyTorch needed).

Bad inputs are one table, ``BAD_INPUTS``: (id, call, exception type, message regex).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn, optim
from tinytensor.errors import DeviceError, ShapeError


def _params(*shapes):
    return [nn.Parameter(np.zeros(s, dtype=np.float64)) for s in shapes]


W, B = _params((2, 3), (3,))
NON_LEAF = W * 2


def _step_with_grad(grad, opt_name="SGD"):
    ps = _params((2,), (3,))
    opt = getattr(optim, opt_name)(ps, lr=0.1)
    ps[1].grad = grad
    opt.step()


def _add_group(group):
    optim.SGD([W], lr=0.1).add_param_group(group)


def _set_lr(value):
    optim.SGD([W], lr=0.1).lr = value


BAD_INPUTS = [
    # params itself
    (
        "bare-tensor",
        lambda: optim.SGD(tt.tensor(np.zeros(2)), lr=0.1),
        TypeError,
        r"SGD: params must be an iterable of Tensors or dicts, got Tensor",
    ),
    ("bare-parameter", lambda: optim.Adam(W), TypeError, r"Adam: params must be an iterable .* got Parameter"),
    ("not-iterable", lambda: optim.SGD(3, lr=0.1), TypeError, r"SGD: params must be an iterable .* got int"),
    ("set", lambda: optim.SGD({W, B}, lr=0.1), TypeError, r"SGD: params must be an ordered .* got set"),
    ("one-dict", lambda: optim.SGD({"params": [W]}, lr=0.1), TypeError, r"SGD: params is one dict; pass a list"),
    ("empty-list", lambda: optim.Adam([]), ValueError, r"Adam: got an empty parameter list"),
    ("empty-generator", lambda: optim.AdamW(p for p in []), ValueError, r"AdamW: got an empty parameter list"),
    ("string", lambda: optim.SGD([W, "bias"], lr=0.1), TypeError, r"SGD: param group 0: params\[1\] is a str"),
    ("none", lambda: optim.SGD([None], lr=0.1), TypeError, r"params\[0\] is a NoneType, expected a Tensor"),
    ("ndarray", lambda: optim.SGD([np.zeros(2)], lr=0.1), TypeError, r"params\[0\] is a ndarray"),
    (
        "non-leaf",
        lambda: optim.SGD([W, NON_LEAF], lr=0.1),
        ValueError,
        r"SGD: param group 0: params\[1\] is a non-leaf",
    ),
    (
        "duplicate",
        lambda: optim.SGD([W, B, W], lr=0.1),
        ValueError,
        r"SGD: param group 0: the same parameter is at positions 0 and 2 \(it would be stepped twice\)",
    ),
    (
        "duplicate-across-groups",
        lambda: optim.Adam([{"params": [W, B]}, {"params": [B]}]),
        ValueError,
        r"Adam: param group 1: its parameter at position 0 is already in param group 0",
    ),
    ("mixed-dicts", lambda: optim.SGD([{"params": [W]}, B], lr=0.1), TypeError, r"SGD: params mixes parameter-group"),
    # groups
    (
        "group-without-params",
        lambda: optim.SGD([{"lr": 0.1}], lr=0.1),
        ValueError,
        r"SGD: param group 0 has no 'params'",
    ),
    (
        "group-unknown-key",
        lambda: optim.SGD([{"params": [W], "learning_rate": 1.0}], lr=0.1),
        ValueError,
        r"SGD: param group 0 has unknown hyperparameter\(s\) 'learning_rate'; SGD takes lr, momentum",
    ),
    ("group-set", lambda: optim.SGD([{"params": {W}}], lr=0.1), TypeError, r"param group 0: params must be ordered"),
    (
        "group-string",
        lambda: optim.SGD([{"params": "W"}], lr=0.1),
        TypeError,
        r"params must be an iterable of Tensors, got str",
    ),
    (
        "group-bad-lr",
        lambda: optim.SGD([{"params": [W]}, {"params": [B], "lr": -1.0}], lr=0.1),
        ValueError,
        r"SGD: param group 1: invalid lr -1.0: must be a number >= 0",
    ),
    ("add-not-dict", lambda: _add_group([B]), TypeError, r"SGD: param group 1 must be a dict, got list"),
    (
        "add-duplicate",
        lambda: _add_group({"params": [B, W]}),
        ValueError,
        r"SGD: param group 1: its parameter at position 1 is already in param group 0",
    ),
    ("add-unknown-key", lambda: _add_group({"params": [B], "betas": (0.9, 0.9)}), ValueError, r"unknown .*'betas'"),
    # hyperparameters
    ("sgd-lr", lambda: optim.SGD([W], lr=-1), ValueError, r"SGD: invalid lr -1: must be a number >= 0"),
    ("sgd-lr-string", lambda: optim.SGD([W], lr="0.1"), ValueError, r"SGD: invalid lr '0.1'"),
    ("sgd-lr-nan", lambda: optim.SGD([W], lr=math.nan), ValueError, r"SGD: invalid lr nan"),
    ("sgd-momentum", lambda: optim.SGD([W], lr=0.1, momentum=-0.5), ValueError, r"SGD: invalid momentum -0.5"),
    ("sgd-weight-decay", lambda: optim.SGD([W], lr=0.1, weight_decay=-1e-4), ValueError, r"invalid weight_decay"),
    ("sgd-dampening", lambda: optim.SGD([W], lr=0.1, dampening=None), ValueError, r"invalid dampening None"),
    (
        "sgd-nesterov",
        lambda: optim.SGD([W], lr=0.1, nesterov=True),
        ValueError,
        r"SGD: Nesterov momentum needs momentum > 0 and dampening == 0, got 0.0 and 0.0",
    ),
    ("adam-lr", lambda: optim.Adam([W], lr=-0.1), ValueError, r"Adam: invalid lr -0.1"),
    (
        "adam-beta1",
        lambda: optim.Adam([W], betas=(1.0, 0.9)),
        ValueError,
        r"Adam: invalid betas \(1.0, 0.9\): must be two numbers in \[0, 1\)",
    ),
    ("adam-beta2", lambda: optim.AdamW([W], betas=(0.9, -0.1)), ValueError, r"AdamW: invalid betas"),
    ("adam-betas-length", lambda: optim.Adam([W], betas=(0.9,)), ValueError, r"invalid betas \(0.9,\)"),
    ("adam-eps", lambda: optim.Adam([W], eps=-1e-8), ValueError, r"Adam: invalid eps"),
    ("adamw-weight-decay", lambda: optim.AdamW([W], weight_decay=-0.01), ValueError, r"AdamW: invalid weight_decay"),
    (
        "adadelta-lr",
        lambda: optim.Adadelta([W], lr=-1.0),
        ValueError,
        r"Adadelta: invalid lr -1.0: must be a number >= 0",
    ),
    (
        "adadelta-rho-above-one",
        lambda: optim.Adadelta([W], rho=1.5),
        ValueError,
        r"Adadelta: invalid rho 1.5: must be a number in \[0, 1\]",
    ),
    ("adadelta-rho-negative", lambda: optim.Adadelta([W], rho=-0.1), ValueError, r"Adadelta: invalid rho -0.1"),
    ("adadelta-rho-nan", lambda: optim.Adadelta([W], rho=math.nan), ValueError, r"Adadelta: invalid rho nan"),
    ("adadelta-rho-string", lambda: optim.Adadelta([W], rho="0.9"), ValueError, r"Adadelta: invalid rho '0.9'"),
    ("adadelta-rho-bool", lambda: optim.Adadelta([W], rho=True), ValueError, r"Adadelta: invalid rho True"),
    ("adadelta-eps", lambda: optim.Adadelta([W], eps=-1e-6), ValueError, r"Adadelta: invalid eps -1e-06: must be"),
    (
        "adadelta-weight-decay",
        lambda: optim.Adadelta([W], weight_decay=-0.1),
        ValueError,
        r"Adadelta: invalid weight_decay -0.1: must be a number >= 0",
    ),
    (
        "adadelta-group-rho",
        lambda: optim.Adadelta([{"params": [W]}, {"params": [B], "rho": 2}]),
        ValueError,
        r"Adadelta: param group 1: invalid rho 2: must be a number in \[0, 1\]",
    ),
    (
        "adadelta-maximize",  # as Adam: PyTorch's option is not taken, rather than ignored
        lambda: optim.Adadelta([W], maximize=True),
        TypeError,
        r"unexpected keyword argument 'maximize'",
    ),
    ("lr-setter", lambda: _set_lr(-0.5), ValueError, r"SGD: invalid lr -0.5"),
    # step(): gradients that do not fit their parameter
    (
        "grad-shape",
        lambda: _step_with_grad(np.zeros(2)),
        ShapeError,
        r"SGD.step\(\): the gradient of parameter 1 has shape \(2,\), the parameter has shape \(3,\)",
    ),
    (
        "grad-broadcastable",
        lambda: _step_with_grad(np.zeros((1, 3)), "Adam"),
        ShapeError,
        r"Adam.step\(\): the gradient of parameter 1 has shape \(1, 3\), the parameter has shape \(3,\)",
    ),
    ("grad-tensor-shape", lambda: _step_with_grad(tt.tensor(np.zeros(4))), ShapeError, r"parameter 1 has shape \(4,\)"),
    (
        "grad-list",
        lambda: _step_with_grad([0.0, 0.0, 0.0]),
        TypeError,
        r"assigned grad expected to be a Tensor or None, got list",
    ),
]


@pytest.mark.parametrize("call,exc,message", [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_is_named(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_grad_on_another_device_is_named(other_device):
    p = nn.Parameter(tt.tensor(np.zeros(3), device=other_device))
    opt = optim.SGD([p], lr=0.1)
    p.grad = np.ones(3)
    with pytest.raises(DeviceError, match=r"SGD.step\(\): the gradient of parameter 0 is on cpu, the parameter on"):
        opt.step()


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adadelta"])
def test_grad_may_be_a_tensor(name):
    """``p.grad`` set by hand to a Tensor steps exactly as the array autograd would store."""
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal((3, 2)) for _ in range(3)]
    results = []
    for as_tensor in (False, True):
        p = nn.Parameter(np.ones((3, 2)))
        opt = getattr(optim, name)([p], lr=0.1)
        for g in grads:
            p.grad = tt.tensor(g) if as_tensor else g.copy()
            opt.step()
        results.append(p.numpy())
    np.testing.assert_array_equal(results[0], results[1])


def test_groups_take_defaults_and_overrides():
    w, b, extra = _params((2, 2), (2,), (4,))
    opt = optim.SGD([{"params": [w]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert [g["momentum"] for g in opt.param_groups] == [0.0, 0.9]
    assert opt.param_groups[1]["params"] == [b]  # a lone tensor becomes a list
    opt.add_param_group({"params": [extra], "weight_decay": 0.1})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["weight_decay"] == 0.1
    for p in (w, b, extra):
        p.grad = np.ones(p.shape)
    opt.step()
    np.testing.assert_allclose(w.numpy(), -0.1)
    np.testing.assert_allclose(b.numpy(), -0.5)
    np.testing.assert_allclose(extra.numpy(), -0.1)


def test_lr_property_reads_first_group_and_sets_all():
    """1.x code (and 1.x schedulers) read and write ``optimizer.lr``."""
    w, b = _params((2,), (2,))
    opt = optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.01)
    assert opt.lr == 0.01
    opt.lr = 0.2
    assert [g["lr"] for g in opt.param_groups] == [0.2, 0.2]
    assert opt.lr == 0.2


def test_named_parameters_are_accepted():
    model = nn.Linear(3, 2)
    opt = optim.SGD(model.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.param_groups[0]["params"] == [model.weight, model.bias]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]


def test_non_leaf_that_retains_grad_is_accepted():
    """As in PyTorch: a non-leaf that keeps its .grad can be optimized (one that does not is refused,
    BAD_INPUTS' "non-leaf"), and a step moves it as torch.optim.SGD does: y = 2x = 2, dL/dy = 2y = 4,
    y - 0.1 * 4 = 1.6; the leaf it came from is left alone."""
    x = nn.Parameter(np.ones(3))
    y = (x * 2).retain_grad()
    opt = optim.SGD([y], lr=0.1)
    (param,) = opt.param_groups[0]["params"]
    assert param is y
    (y * y).sum().backward()
    opt.step()
    np.testing.assert_allclose(y.numpy(), [1.6, 1.6, 1.6])
    np.testing.assert_array_equal(x.numpy(), [1.0, 1.0, 1.0])


def test_step_marks_each_updated_parameter(monkeypatch):
    """step() reports every in-place update, so a graph saved before it cannot backpropagate."""
    import tinytensor.optim.optimizer as optimizer_module

    marked = []
    monkeypatch.setattr(optimizer_module, "mark_modified", marked.append)
    w, b, frozen = _params((2,), (3,), (4,))
    opt = optim.Adam([w, b, frozen])
    w.grad, b.grad = np.ones(2), np.ones(3)
    opt.step()
    assert marked == [w, b]


def test_step_closure_returns_the_loss():
    w = nn.Parameter(np.array([3.0]))
    opt = optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 9.0
    np.testing.assert_allclose(w.numpy(), [3.0 - 0.1 * 6.0])


def test_zero_grad_without_none_gives_zeros_even_after_nan():
    w = nn.Parameter(np.ones(3))
    opt = optim.SGD([w], lr=0.1)
    w.grad = np.array([np.nan, np.inf, 1.0])
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(w.grad, np.zeros(3))
    opt.zero_grad()
    assert w.grad is None


def test_repr_lists_groups():
    text = repr(optim.SGD([{"params": [W]}, {"params": [B], "lr": 0.5}], lr=0.1))
    assert "Parameter Group 1" in text and "lr: 0.5" in text


@pytest.mark.parametrize("rho", [0, 0.0, 1, 1.0, np.float32(0.5)])
def test_adadelta_takes_rho_at_both_ends(rho):
    """rho in [0, 1], both ends included, as PyTorch takes it (Adam's betas exclude 1)."""
    opt = optim.Adadelta([W], rho=rho)
    assert opt.param_groups[0]["rho"] == rho
