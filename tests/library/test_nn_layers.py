"""Activation and loss modules, Flatten: reprs, shapes, the implicit softmax axis, fusion, argument checks.

Their values and gradients against torch.nn are in test_nn_layers_vs_torch.py.
"""

import warnings

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.nn import functional as F
from tinytensor.ops import nn_ops

REPRS = [
    (nn.ReLU(), "ReLU()"),
    (nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
    (nn.LeakyReLU(0.2), "LeakyReLU(negative_slope=0.2)"),
    (nn.Sigmoid(), "Sigmoid()"),
    (nn.Tanh(), "Tanh()"),
    (nn.GELU(), "GELU(approximate='tanh')"),
    (nn.Softmax(), "Softmax(dim=None)"),
    (nn.Softmax(dim=-1), "Softmax(dim=-1)"),
    (nn.LogSoftmax(1), "LogSoftmax(dim=1)"),
    (nn.Identity(54, unused="ignored"), "Identity()"),
    (nn.Flatten(), "Flatten(start_dim=1, end_dim=-1)"),
    (nn.Flatten(0, 2), "Flatten(start_dim=0, end_dim=2)"),
    (nn.MSELoss(), "MSELoss()"),
    (nn.L1Loss(reduction="sum"), "L1Loss(reduction='sum')"),
    (nn.CrossEntropyLoss(), "CrossEntropyLoss()"),
    (nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1), "CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)"),
    (nn.NLLLoss(reduction="none"), "NLLLoss(reduction='none')"),
    (nn.BCEWithLogitsLoss(), "BCEWithLogitsLoss()"),
]


@pytest.mark.parametrize("module,expected", REPRS, ids=[r for _, r in REPRS])
def test_repr(module, expected):
    assert repr(module) == expected


def test_repr_inside_sequential():
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 4), nn.LeakyReLU(0.1), nn.Linear(4, 2), nn.LogSoftmax(dim=1))
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Flatten(start_dim=1, end_dim=-1)\n"
        "  (1): Linear(in_features=12, out_features=4, bias=True)\n"
        "  (2): LeakyReLU(negative_slope=0.1)\n"
        "  (3): Linear(in_features=4, out_features=2, bias=True)\n"
        "  (4): LogSoftmax(dim=1)\n"
        ")"
    )


FLATTEN_SHAPES = [
    ((2, 3, 4), {}, (2, 12)),
    ((2, 3, 4, 5), {}, (2, 60)),
    ((2, 3, 4, 5), dict(start_dim=1, end_dim=2), (2, 12, 5)),
    ((2, 3, 4, 5), dict(start_dim=0, end_dim=-2), (24, 5)),
    ((2, 3, 4, 5), dict(start_dim=-2), (2, 3, 20)),
    ((2, 3), dict(start_dim=1), (2, 3)),
    ((2, 3), dict(start_dim=0), (6,)),
    ((7,), dict(start_dim=0), (7,)),
    ((), dict(start_dim=0), (1,)),
    ((0, 3, 4), {}, (0, 12)),
    ((3, 0, 4), {}, (3, 0)),
]


@pytest.mark.parametrize("shape,kwargs,expected", FLATTEN_SHAPES, ids=[f"{s}-{k}" for s, k, _ in FLATTEN_SHAPES])
def test_flatten_shapes_and_gradient(shape, kwargs, expected, device):
    x = tt.Tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape), device=device)
    x.requires_grad_(True)
    out = nn.Flatten(**kwargs)(x)
    assert out.shape == expected and out.device == x.device
    np.testing.assert_array_equal(out.numpy().reshape(-1), x.numpy().reshape(-1))
    out.sum().backward()
    assert tt.Tensor(x.grad).shape == shape


@pytest.mark.parametrize(
    "cls,fn,ndim,dim",
    [
        (nn.Softmax, nn_ops.softmax, 1, 0),
        (nn.Softmax, nn_ops.softmax, 2, 1),
        (nn.Softmax, nn_ops.softmax, 3, 0),
        (nn.Softmax, nn_ops.softmax, 4, 1),
        (nn.LogSoftmax, nn_ops.log_softmax, 3, 0),
        (nn.LogSoftmax, nn_ops.log_softmax, 2, 1),
    ],
)
def test_softmax_without_dim_picks_pytorchs_axis_and_warns(cls, fn, ndim, dim):
    x = tt.randn(*(2, 3, 4, 5)[:ndim])
    name = "softmax" if cls is nn.Softmax else "log_softmax"
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name} has been deprecated") as record:
        out = cls()(x)
    assert [w.filename for w in record] == [__file__]  # the warning names the caller's line
    np.testing.assert_allclose(out.numpy(), fn(x, dim).numpy(), rtol=1e-6)


def test_softmax_with_dim_does_not_warn():
    x = tt.randn(2, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = nn.Softmax(dim=-1)(x)
        nn.LogSoftmax(dim=0)(x)
    np.testing.assert_allclose(out.numpy().sum(axis=-1), 1.0, rtol=1e-6)


def test_sequential_still_fuses_linear_with_relu_and_gelu(monkeypatch):
    calls = []
    real = nn_ops.linear

    def spy(x, w, b=None, activation=None):
        calls.append(activation)
        return real(x, w, b, activation)

    monkeypatch.setattr(nn_ops, "linear", spy)
    tt.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 5), nn.GELU(), nn.Linear(5, 3), nn.LeakyReLU(), nn.Linear(3, 2)
    )
    x = tt.randn(6, 4)
    fused = model(x)
    assert calls == ["relu", "gelu", None, None]  # LeakyReLU has no fused kernel: it runs on its own
    unfused = x
    for layer in model:
        unfused = layer(unfused)
    np.testing.assert_allclose(fused.numpy(), unfused.numpy(), rtol=1e-5, atol=1e-7)


def test_identity_returns_its_input():
    x = tt.randn(3)
    assert nn.Identity(3, bias=False)(x) is x


def test_losses_run_on_every_device(device):
    tt.manual_seed(0)
    logits = tt.Tensor(np.random.default_rng(0).standard_normal((5, 3)), device=device).requires_grad_(True)
    labels = tt.Tensor(np.array([0, 2, -100, 1, 2]), device=device)
    for loss_fn in (nn.CrossEntropyLoss(label_smoothing=0.1), nn.NLLLoss(reduction="sum")):
        loss = loss_fn(logits, labels)
        assert loss.device == logits.device and loss.shape == ()
        loss.backward()
    grad = tt.Tensor(logits.grad).numpy()
    np.testing.assert_array_equal(grad[2], 0)  # the ignored row gets no gradient


def _logits():
    return tt.Tensor(np.zeros((3, 4), dtype=np.float32), requires_grad=True)


def _labels(values=(0, 1, 2)):
    return tt.Tensor(np.array(values, dtype=np.int64))


# (id, call, exception type, message regex)
INVALID = [
    ("mse-reduction", lambda: nn.MSELoss(reduction="avg"), ValueError, r"MSELoss: unknown reduction 'avg'"),
    ("l1-reduction", lambda: nn.L1Loss(reduction="elementwise_mean"), ValueError, r"L1Loss: unknown reduction"),
    ("ce-reduction", lambda: nn.CrossEntropyLoss(reduction=None), ValueError, r"CrossEntropyLoss: unknown reduction"),
    ("nll-reduction", lambda: nn.NLLLoss(reduction="max"), ValueError, r"NLLLoss: unknown reduction 'max'"),
    ("bce-reduction", lambda: nn.BCEWithLogitsLoss(reduction="Mean"), ValueError, r"BCEWithLogitsLoss: unknown"),
    ("loss-positional", lambda: nn.MSELoss("sum"), TypeError, r"positional argument"),
    ("ce-smoothing-high", lambda: nn.CrossEntropyLoss(label_smoothing=1.5), ValueError, r"label_smoothing .*\[0, 1\]"),
    ("ce-smoothing-low", lambda: nn.CrossEntropyLoss(label_smoothing=-0.1), ValueError, r"got -0\.1"),
    ("ce-smoothing-type", lambda: nn.CrossEntropyLoss(label_smoothing="0.1"), TypeError, r"label_smoothing .*str"),
    ("ce-ignore-type", lambda: nn.CrossEntropyLoss(ignore_index=1.0), TypeError, r"ignore_index must be an int"),
    ("nll-ignore-type", lambda: nn.NLLLoss(ignore_index=None), TypeError, r"NLLLoss: ignore_index"),
    (
        "F-ce-smoothing",
        lambda: F.cross_entropy(_logits(), _labels(), label_smoothing=2),
        ValueError,
        r"cross_entropy: label_smoothing",
    ),
    (
        "ce-target-range",
        lambda: nn.CrossEntropyLoss()(_logits(), _labels((0, 4, 1))),
        IndexError,
        r"index 4 is out of range for cross_entropy: classes are 0\.\.3 \(or ignore_index=-100\)",
    ),
    (
        "ce-negative-target",
        lambda: nn.CrossEntropyLoss(ignore_index=-1)(_logits(), _labels((0, -2, 1))),
        IndexError,
        r"index -2 is out of range .*ignore_index=-1",
    ),
    (
        "nll-target-range",
        lambda: nn.NLLLoss(ignore_index=2)(_logits(), _labels((0, 9, 2))),
        IndexError,
        r"index 9 is out of range for nll_loss",
    ),
    (
        "l1-shapes",
        lambda: nn.L1Loss()(_logits(), tt.zeros(4, 3)),
        tt.ShapeError,
        r"l1_loss: input has shape \(3, 4\), target has shape \(4, 3\)",
    ),
    ("leaky-slope-type", lambda: nn.LeakyReLU("0.2"), TypeError, r"LeakyReLU: negative_slope must be a real number"),
    ("leaky-slope-bool", lambda: nn.LeakyReLU(True), TypeError, r"negative_slope .* got bool"),
    ("F-leaky-slope", lambda: F.leaky_relu(_logits(), None), TypeError, r"leaky_relu: negative_slope .*NoneType"),
    ("gelu-exact", lambda: nn.GELU(approximate="none"), ValueError, r"GELU: approximate='none' is not supported"),
    ("softmax-dim-type", lambda: nn.Softmax(dim=1.0), TypeError, r"Softmax: dim must be an int or None"),
    ("logsoftmax-dim-type", lambda: nn.LogSoftmax(dim="1"), TypeError, r"LogSoftmax: dim must be"),
    ("flatten-arg-type", lambda: nn.Flatten(start_dim="1"), TypeError, r"Flatten: start_dim must be an int"),
    (
        "flatten-order",
        lambda: nn.Flatten(2, 1)(tt.zeros(2, 3, 4)),
        tt.ShapeError,
        r"flatten: start_dim 2 comes after end_dim 1",
    ),
    (
        "flatten-range",
        lambda: nn.Flatten()(tt.zeros(3)),
        tt.ShapeError,
        r"flatten: start_dim=1 is out of range for shape \(3,\) \(expected -1\.\.0\)",
    ),
]


@pytest.mark.parametrize("call,exc,message", [case[1:] for case in INVALID], ids=[case[0] for case in INVALID])
def test_invalid_arguments_are_named(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
