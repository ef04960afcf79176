"""Activation and loss modules, Flatten: reprs, shapes, the implicit softmax axis, argument checks,
and their values and gradients against torch.nn (the tests that take the ``torch`` fixture).

Fusing Linear with the activation after it is tested with Module's other behaviour, in test_nn.py.
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
    x = tt.tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape), device=device)
    x.requires_grad_(True)
    out = nn.Flatten(**kwargs)(x)
    assert out.shape == expected and out.device == x.device
    np.testing.assert_array_equal(out.numpy().reshape(-1), x.numpy().reshape(-1))
    out.sum().backward()
    assert tt.tensor(x.grad).shape == shape


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


def test_identity_returns_its_input():
    x = tt.randn(3)
    assert nn.Identity(3, bias=False)(x) is x


def test_losses_run_on_every_device(device):
    tt.manual_seed(0)
    logits = tt.tensor(np.random.default_rng(0).standard_normal((5, 3)), device=device).requires_grad_(True)
    labels = tt.tensor(np.array([0, 2, -100, 1, 2]), device=device)
    for loss_fn in (nn.CrossEntropyLoss(label_smoothing=0.1), nn.NLLLoss(reduction="sum")):
        loss = loss_fn(logits, labels)
        assert loss.device == logits.device and loss.shape == ()
        loss.backward()
    grad = tt.tensor(logits.grad).numpy()
    np.testing.assert_array_equal(grad[2], 0)  # the ignored row gets no gradient


def _logits():
    return tt.tensor(np.zeros((3, 4), dtype=np.float32), requires_grad=True)


def _labels(values=(0, 1, 2)):
    return tt.tensor(np.array(values, dtype=np.int64))


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
        "F-ce-negative-target",
        lambda: F.cross_entropy(_logits(), np.array([0, -1, 1])),
        IndexError,
        r"index -1 is out of range for cross_entropy: classes are 0\.\.3",
    ),
    ("F-ce-float-targets", lambda: F.cross_entropy(_logits(), np.array([0.0, 1.0, 2.0])), TypeError, r"integer class"),
    ("F-nll-shapes", lambda: F.nll_loss(_logits(), np.array([0, 1])), tt.ShapeError, r"\(3, 4\) and \(2,\)"),
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


def test_numpy_numbers_are_accepted_as_python_numbers_are():
    # As in PyTorch: a dropout probability or an eps read from numpy (a config, a sweep) works.
    drop = nn.Dropout(np.float32(0.25))
    kept = drop(tt.ones(4000)).numpy()
    assert drop.p == np.float32(0.25)
    assert 0.2 < float(np.mean(kept == 0)) < 0.3
    np.testing.assert_allclose(kept[kept != 0], 1 / 0.75, rtol=1e-6)
    x = tt.randn(3, 4)
    small = nn.LayerNorm(4, eps=np.float32(0.5))(x).numpy()
    np.testing.assert_allclose(small, nn.LayerNorm(4, eps=0.5)(x).numpy(), rtol=1e-6)
    for bad in (True, "0.5"):  # bools and strings are still refused
        with pytest.raises(ValueError, match=r"Dropout\(\): p must be a probability"):
            nn.Dropout(bad)
        with pytest.raises(ValueError, match=r"LayerNorm\(\): eps must be a positive number"):
            nn.LayerNorm(4, eps=bad)


# ---------------------------------------------------------------------------- against torch.nn
TOL = dict(rtol=1e-10, atol=1e-12)


def _compare(torch, ours, theirs, *arrays, grad_of=(0,)):
    """Forward and input gradients of two modules on the same float64 inputs (ints stay labels)."""
    mine = [tt.tensor(a) for a in arrays]
    ref = [torch.tensor(a) for a in arrays]
    for k in grad_of:
        mine[k].requires_grad_(True)
        ref[k].requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Softmax(dim=None) warns on both sides
        out, ref_out = ours(*mine), theirs(*ref)
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), **TOL, err_msg="forward")
    upstream = np.random.default_rng(7).standard_normal(tuple(ref_out.shape))
    out.backward(tt.tensor(upstream))
    ref_out.backward(torch.tensor(upstream))
    for k in grad_of:
        np.testing.assert_allclose(mine[k].grad, ref[k].grad.numpy(), **TOL, err_msg=f"grad of input {k}")


# (id, class name, positional arguments, keyword arguments): the same construction on both sides
ACTIVATIONS = [
    ("ReLU", "ReLU", (), {}),
    ("LeakyReLU", "LeakyReLU", (), {}),
    ("LeakyReLU-0.3", "LeakyReLU", (), dict(negative_slope=0.3)),
    ("LeakyReLU-neg", "LeakyReLU", (-1.5,), {}),
    ("Sigmoid", "Sigmoid", (), {}),
    ("Tanh", "Tanh", (), {}),
    ("GELU", "GELU", (), dict(approximate="tanh")),  # our default (test_repr), PyTorch's option
    ("Softmax-1", "Softmax", (), dict(dim=1)),
    ("Softmax-None", "Softmax", (), {}),
    ("LogSoftmax-0", "LogSoftmax", (), dict(dim=0)),
    ("LogSoftmax-None", "LogSoftmax", (), {}),
    ("Identity", "Identity", (), {}),
    ("Flatten", "Flatten", (), {}),
    ("Flatten-0-1", "Flatten", (0, 1), {}),
]


def _pair(torch, name, args, kwargs):
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 4)], ids=["2d", "3d"])
@pytest.mark.parametrize("spec", [a[1:] for a in ACTIVATIONS], ids=[a[0] for a in ACTIVATIONS])
def test_activation_matches_torch(torch, spec, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    x[0, 0] = 0.0  # the kink: PyTorch's gradient at 0 (relu 0, leaky_relu negative_slope)
    _compare(torch, *_pair(torch, *spec), x)


@pytest.mark.parametrize("spec", [a[1:] for a in ACTIVATIONS], ids=[a[0] for a in ACTIVATIONS])
def test_activation_repr_matches_torch(torch, spec):
    ours, theirs = _pair(torch, *spec)
    assert repr(ours) == repr(theirs)


def _targets(n, classes, ignore=None, seed=1):
    labels = np.random.default_rng(seed).integers(0, classes, n)
    if ignore is not None:
        labels[::3] = ignore
    return labels


LOSS_OPTIONS = [
    {},
    dict(reduction="sum"),
    dict(reduction="none"),
    dict(ignore_index=-100),
    dict(ignore_index=2),
    dict(label_smoothing=0.2),
    dict(label_smoothing=1.0, reduction="sum"),
    dict(ignore_index=-100, label_smoothing=0.15, reduction="none"),
    dict(ignore_index=5, label_smoothing=0.3),
]


@pytest.mark.parametrize("options", LOSS_OPTIONS, ids=[str(o) for o in LOSS_OPTIONS])
def test_cross_entropy_loss_matches_torch(torch, options):
    ignore = options.get("ignore_index")
    logits = np.random.default_rng(0).standard_normal((9, 5)) * 3
    targets = _targets(9, 5, ignore)
    _compare(torch, nn.CrossEntropyLoss(**options), torch.nn.CrossEntropyLoss(**options), logits, targets)


@pytest.mark.parametrize("options", [o for o in LOSS_OPTIONS if "label_smoothing" not in o], ids=str)
def test_nll_loss_matches_torch(torch, options):
    ignore = options.get("ignore_index")
    log_probs = np.random.default_rng(0).standard_normal((9, 5))
    targets = _targets(9, 5, ignore)
    _compare(torch, nn.NLLLoss(**options), torch.nn.NLLLoss(**options), log_probs, targets)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_all_targets_ignored_gives_nan_mean_and_zero_gradient(torch, smoothing):
    logits = np.random.default_rng(0).standard_normal((3, 4))
    targets = np.full(3, -100)
    for ours, theirs in [
        (nn.CrossEntropyLoss(label_smoothing=smoothing), torch.nn.CrossEntropyLoss(label_smoothing=smoothing)),
        (nn.NLLLoss(), torch.nn.NLLLoss()),
    ]:
        x = tt.tensor(logits, requires_grad=True)
        loss = ours(x, tt.tensor(targets))
        ref = torch.tensor(logits, requires_grad=True)
        ref_loss = theirs(ref, torch.tensor(targets))
        assert np.isnan(loss.item()) and np.isnan(ref_loss.item())
        loss.backward()
        ref_loss.backward()
        np.testing.assert_array_equal(x.grad, ref.grad.numpy())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", ["MSELoss", "L1Loss", "BCEWithLogitsLoss"])
def test_elementwise_losses_match_torch(torch, name, reduction):
    rng = np.random.default_rng(0)
    pred, target = rng.standard_normal((4, 3)), rng.random((4, 3))
    _compare(torch, *_pair(torch, name, (), dict(reduction=reduction)), pred, target, grad_of=(0, 1))


@pytest.mark.parametrize("cls", ["MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss"])
def test_default_loss_repr_matches_torch(torch, cls):
    assert repr(getattr(nn, cls)()) == repr(getattr(torch.nn, cls)())


def test_training_step_matches_torch(torch):
    """Flatten, Linear, LeakyReLU, GELU and CrossEntropyLoss with ignore_index and smoothing, one SGD step."""
    theirs = torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(12, 8),
        torch.nn.LeakyReLU(0.1),
        torch.nn.Linear(8, 8),
        torch.nn.GELU(approximate="tanh"),
        torch.nn.Linear(8, 4),
    ).double()
    ours = nn.Sequential(
        nn.Flatten(), nn.Linear(12, 8), nn.LeakyReLU(0.1), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 4)
    ).double()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((6, 3, 4))
    y = np.array([0, 3, -100, 1, 2, 3])
    loss_args = dict(ignore_index=-100, label_smoothing=0.1)
    loss = nn.CrossEntropyLoss(**loss_args)(ours(tt.tensor(x)), tt.tensor(y))
    ref = torch.nn.CrossEntropyLoss(**loss_args)(theirs(torch.tensor(x)), torch.tensor(y))
    np.testing.assert_allclose(loss.item(), ref.item(), **TOL)
    loss.backward()
    ref.backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        np.testing.assert_allclose(p.grad, q.grad.numpy(), **TOL, err_msg=name)
