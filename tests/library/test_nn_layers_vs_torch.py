"""Activation and loss modules, Flatten and a small model against their torch.nn equivalents."""

import warnings

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn

torch = pytest.importorskip("torch", reason="PyTorch (the test oracle) is installed only on Python 3.11")

TOL = dict(rtol=1e-10, atol=1e-12)


def _compare(ours, theirs, *arrays, grad_of=(0,)):
    """Forward and input gradients of two modules on the same float64 inputs (ints stay labels)."""
    mine = [tt.Tensor(a) for a in arrays]
    ref = [torch.tensor(a) for a in arrays]
    for k in grad_of:
        mine[k].requires_grad_(True)
        ref[k].requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Softmax(dim=None) warns on both sides
        out, ref_out = ours(*mine), theirs(*ref)
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), **TOL, err_msg="forward")
    upstream = np.random.default_rng(7).standard_normal(tuple(ref_out.shape))
    out.backward(tt.Tensor(upstream))
    ref_out.backward(torch.tensor(upstream))
    for k in grad_of:
        np.testing.assert_allclose(mine[k].grad, ref[k].grad.numpy(), **TOL, err_msg=f"grad of input {k}")


ACTIVATIONS = [
    ("ReLU", nn.ReLU(), torch.nn.ReLU()),
    ("LeakyReLU", nn.LeakyReLU(), torch.nn.LeakyReLU()),
    ("LeakyReLU-0.3", nn.LeakyReLU(negative_slope=0.3), torch.nn.LeakyReLU(negative_slope=0.3)),
    ("LeakyReLU-neg", nn.LeakyReLU(-1.5), torch.nn.LeakyReLU(-1.5)),
    ("Sigmoid", nn.Sigmoid(), torch.nn.Sigmoid()),
    ("Tanh", nn.Tanh(), torch.nn.Tanh()),
    ("GELU", nn.GELU(), torch.nn.GELU(approximate="tanh")),
    ("Softmax-1", nn.Softmax(dim=1), torch.nn.Softmax(dim=1)),
    ("Softmax-None", nn.Softmax(), torch.nn.Softmax()),
    ("LogSoftmax-0", nn.LogSoftmax(dim=0), torch.nn.LogSoftmax(dim=0)),
    ("LogSoftmax-None", nn.LogSoftmax(), torch.nn.LogSoftmax()),
    ("Identity", nn.Identity(), torch.nn.Identity()),
    ("Flatten", nn.Flatten(), torch.nn.Flatten()),
    ("Flatten-0-1", nn.Flatten(0, 1), torch.nn.Flatten(0, 1)),
]


@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 4)], ids=["2d", "3d"])
@pytest.mark.parametrize("ours,theirs", [a[1:] for a in ACTIVATIONS], ids=[a[0] for a in ACTIVATIONS])
def test_activation_matches_torch(ours, theirs, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    x[0, 0] = 0.0  # the kink: PyTorch's gradient at 0 (relu 0, leaky_relu negative_slope)
    _compare(ours, theirs, x)


@pytest.mark.parametrize("ours,theirs", [a[1:] for a in ACTIVATIONS], ids=[a[0] for a in ACTIVATIONS])
def test_activation_repr_matches_torch(ours, theirs):
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
def test_cross_entropy_loss_matches_torch(options):
    ignore = options.get("ignore_index")
    logits = np.random.default_rng(0).standard_normal((9, 5)) * 3
    targets = _targets(9, 5, ignore)
    _compare(nn.CrossEntropyLoss(**options), torch.nn.CrossEntropyLoss(**options), logits, targets)


@pytest.mark.parametrize("options", [o for o in LOSS_OPTIONS if "label_smoothing" not in o], ids=str)
def test_nll_loss_matches_torch(options):
    ignore = options.get("ignore_index")
    log_probs = np.random.default_rng(0).standard_normal((9, 5))
    targets = _targets(9, 5, ignore)
    _compare(nn.NLLLoss(**options), torch.nn.NLLLoss(**options), log_probs, targets)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_all_targets_ignored_gives_nan_mean_and_zero_gradient(smoothing):
    logits = np.random.default_rng(0).standard_normal((3, 4))
    targets = np.full(3, -100)
    for ours, theirs in [
        (nn.CrossEntropyLoss(label_smoothing=smoothing), torch.nn.CrossEntropyLoss(label_smoothing=smoothing)),
        (nn.NLLLoss(), torch.nn.NLLLoss()),
    ]:
        x = tt.Tensor(logits, requires_grad=True)
        loss = ours(x, tt.Tensor(targets))
        ref = torch.tensor(logits, requires_grad=True)
        ref_loss = theirs(ref, torch.tensor(targets))
        assert np.isnan(loss.item()) and np.isnan(ref_loss.item())
        loss.backward()
        ref_loss.backward()
        np.testing.assert_array_equal(x.grad, ref.grad.numpy())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    "ours,theirs",
    [(nn.MSELoss, torch.nn.MSELoss), (nn.L1Loss, torch.nn.L1Loss), (nn.BCEWithLogitsLoss, torch.nn.BCEWithLogitsLoss)],
    ids=["MSELoss", "L1Loss", "BCEWithLogitsLoss"],
)
def test_elementwise_losses_match_torch(ours, theirs, reduction):
    rng = np.random.default_rng(0)
    pred, target = rng.standard_normal((4, 3)), rng.random((4, 3))
    _compare(ours(reduction=reduction), theirs(reduction=reduction), pred, target, grad_of=(0, 1))


@pytest.mark.parametrize("cls", ["MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss"])
def test_default_loss_repr_matches_torch(cls):
    assert repr(getattr(nn, cls)()) == repr(getattr(torch.nn, cls)())


def test_training_step_matches_torch():
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
    loss = nn.CrossEntropyLoss(**loss_args)(ours(tt.Tensor(x)), tt.Tensor(y))
    ref = torch.nn.CrossEntropyLoss(**loss_args)(theirs(torch.tensor(x)), torch.tensor(y))
    np.testing.assert_allclose(loss.item(), ref.item(), **TOL)
    loss.backward()
    ref.backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        np.testing.assert_allclose(p.grad, q.grad.numpy(), **TOL, err_msg=name)
