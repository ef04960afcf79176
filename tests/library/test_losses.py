"""The loss modules and functions added to PyTorch's set (BCELoss, SmoothL1Loss, HuberLoss, class
weights of CrossEntropyLoss and NLLLoss) against torch.nn, their state dicts and reprs, PyTorch's
rule for a target of another dtype (promote or refuse) for every pointwise loss, and bad input.

The op table (op_cases.py) checks the functional forms' values and gradients on every device."""

import warnings

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.dtypes import numpy_dtype
from tinytensor.nn import functional as F

TOL = dict(rtol=1e-10, atol=1e-12)


def _compare(torch, ours, theirs, x, target, grad_of_target=True):
    """Forward and gradients (input, and a float target) of two losses on the same float64 data."""
    mine = [tt.tensor(x, requires_grad=True), tt.tensor(target)]
    ref = [torch.tensor(x, requires_grad=True), torch.tensor(target)]
    if grad_of_target:
        mine[1].requires_grad_(True)
        ref[1].requires_grad_(True)
    out, ref_out = ours(*mine), theirs(*ref)
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), **TOL, err_msg="forward")
    upstream = np.random.default_rng(7).standard_normal(tuple(ref_out.shape))
    out.backward(tt.tensor(upstream))
    ref_out.backward(torch.tensor(upstream))
    for k in (0, 1) if grad_of_target else (0,):
        np.testing.assert_allclose(mine[k].grad, ref[k].grad.numpy(), **TOL, err_msg=f"grad of argument {k}")


def _probabilities(shape, seed):
    return np.random.default_rng(seed).uniform(0.02, 0.98, shape)


REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weight"])
def test_bce_loss_matches_torch(torch, reduction, weighted):
    weight = np.array([0.5, 2.0, 1.0])
    ours = nn.BCELoss(tt.tensor(weight) if weighted else None, reduction=reduction)
    theirs = torch.nn.BCELoss(torch.tensor(weight) if weighted else None, reduction=reduction)
    _compare(torch, ours, theirs, _probabilities((4, 3), 0), _probabilities((4, 3), 1))


def test_bce_clamps_the_log_at_minus_100_like_torch(torch):
    x, t = np.array([0.0, 1.0, 0.0, 1.0, 1e-50]), np.array([1.0, 0.0, 0.0, 1.0, 1.0])
    loss = nn.BCELoss(reduction="none")(tt.tensor(x), tt.tensor(t))
    np.testing.assert_array_equal(loss.numpy(), [100.0, 100.0, 0.0, 0.0, 100.0])
    np.testing.assert_array_equal(loss.numpy(), torch.nn.BCELoss(reduction="none")(torch.tensor(x), torch.tensor(t)))
    # the gradient divides by max(p * (1 - p), 1e-12); PyTorch's 1e-12 is rounded to float32
    mine, ref = tt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    F.binary_cross_entropy(mine, tt.tensor(t), reduction="sum").backward()
    torch.nn.functional.binary_cross_entropy(ref, torch.tensor(t), reduction="sum").backward()
    np.testing.assert_allclose(mine.grad, ref.grad.numpy(), rtol=1e-8)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [1.0, 0.3, 0.0])
def test_smooth_l1_loss_matches_torch(torch, reduction, beta):
    rng = np.random.default_rng(0)
    ours = nn.SmoothL1Loss(reduction=reduction, beta=beta)
    theirs = torch.nn.SmoothL1Loss(reduction=reduction, beta=beta)
    _compare(torch, ours, theirs, rng.standard_normal((5, 4)), rng.standard_normal((5, 4)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("delta", [1.0, 0.3, 2.5])
def test_huber_loss_matches_torch(torch, reduction, delta):
    rng = np.random.default_rng(0)
    ours, theirs = nn.HuberLoss(reduction, delta), torch.nn.HuberLoss(reduction, delta)
    _compare(torch, ours, theirs, rng.standard_normal((5, 4)) * 2, rng.standard_normal((5, 4)))


WEIGHTED_OPTIONS = [
    {},
    dict(reduction="sum"),
    dict(reduction="none"),
    dict(ignore_index=2),
    dict(ignore_index=-100),
    dict(label_smoothing=0.2),
    dict(ignore_index=-100, label_smoothing=0.3, reduction="sum"),
]


def _class_data(seed=0, ignore=None):
    rng = np.random.default_rng(seed)
    logits, targets = rng.standard_normal((9, 5)) * 2, rng.integers(0, 5, 9)
    if ignore is not None:
        targets[::4] = ignore
    return logits, targets


@pytest.mark.parametrize("options", WEIGHTED_OPTIONS, ids=str)
def test_weighted_cross_entropy_matches_torch(torch, options):
    weight = np.array([0.2, 1.0, 3.0, 0.5, 1.5])
    logits, targets = _class_data(ignore=options.get("ignore_index"))
    ours = nn.CrossEntropyLoss(tt.tensor(weight), **options)  # weight positional, as PyTorch's
    theirs = torch.nn.CrossEntropyLoss(torch.tensor(weight), **options)
    _compare(torch, ours, theirs, logits, targets, grad_of_target=False)


@pytest.mark.parametrize("options", [o for o in WEIGHTED_OPTIONS if "label_smoothing" not in o], ids=str)
def test_weighted_nll_loss_matches_torch(torch, options):
    weight = np.array([0.2, 1.0, 3.0, 0.5, 1.5])
    logits, targets = _class_data(ignore=options.get("ignore_index"))
    ours, theirs = nn.NLLLoss(weight=tt.tensor(weight), **options), torch.nn.NLLLoss(torch.tensor(weight), **options)
    _compare(torch, ours, theirs, logits, targets, grad_of_target=False)


def test_weighted_mean_divides_by_the_target_weights():
    logits = tt.zeros(3, 2)  # every row's nll is log(2)
    weight = tt.tensor([1.0, 3.0])
    targets = tt.tensor([0, 1, -100])
    loss = F.cross_entropy(logits, targets, weight)
    np.testing.assert_allclose(loss.item(), (1 + 3) * np.log(2) / (1 + 3), rtol=1e-6)
    rows = F.cross_entropy(logits, targets, weight, reduction="none").numpy()
    np.testing.assert_allclose(rows, [np.log(2), 3 * np.log(2), 0.0], rtol=1e-6)
    assert np.isnan(F.cross_entropy(logits, tt.tensor([-100, -100, -100]), weight).item())  # nothing counted
    assert np.isnan(F.nll_loss(logits, targets, tt.tensor([0.0, 0.0])).item())  # zero total weight


def test_loss_weight_is_a_buffer_like_torchs(torch, device):
    ours = nn.CrossEntropyLoss(tt.tensor([1.0, 2.0]))
    assert list(ours.state_dict()) == list(torch.nn.CrossEntropyLoss(torch.tensor([1.0, 2.0])).state_dict())
    assert list(nn.BCELoss().state_dict()) == list(torch.nn.BCELoss().state_dict()) == []
    ours.to(device).double()
    assert ours.weight.device == tt.zeros(1, device=device).device and numpy_dtype(ours.weight.dtype) == np.float64
    logits = tt.zeros(2, 2, dtype="float64", device=device)
    assert ours(logits, tt.tensor([0, 1], device=device)).device == logits.device


@pytest.mark.parametrize("name", ["BCELoss", "SmoothL1Loss", "HuberLoss"])
def test_default_repr_matches_torch(torch, name):
    assert repr(getattr(nn, name)()) == repr(getattr(torch.nn, name)())


# ---------------------------------------------------------------------------- target dtypes
POINTWISE = [
    "mse_loss",
    "l1_loss",
    "binary_cross_entropy_with_logits",
    "binary_cross_entropy",
    "smooth_l1_loss",
    "huber_loss",
]
DTYPE_PAIRS = [
    ("float32", "int32"),
    ("float32", "int64"),
    ("float32", "float64"),
    ("float32", "bool"),
    ("float64", "float32"),
    ("float64", "int64"),
]


@pytest.mark.parametrize("input_dtype,target_dtype", DTYPE_PAIRS, ids=[f"{a}-{b}" for a, b in DTYPE_PAIRS])
@pytest.mark.parametrize("name", POINTWISE)
def test_target_of_another_dtype_follows_torch(torch, name, input_dtype, target_dtype):
    """Where PyTorch refuses the pair, a TypeError names both dtypes; where it computes, the same
    value and result dtype, and the input's gradient in the input's dtype."""
    x = _probabilities((3, 4), 0)
    t = np.random.default_rng(1).random((3, 4)) > 0.5
    ref_x = torch.tensor(x, dtype=getattr(torch, input_dtype), requires_grad=True)
    ref_t = torch.tensor(t).to(getattr(torch, target_dtype))
    mine_x = tt.tensor(x, dtype=input_dtype, requires_grad=True)
    mine_t = tt.tensor(t, dtype=target_dtype)
    fn, ref_fn = getattr(F, name), getattr(torch.nn.functional, name)
    try:
        ref = ref_fn(ref_x, ref_t)
    except RuntimeError:
        with pytest.raises(
            TypeError, match=rf"{name}: target has dtype {target_dtype}.* input has dtype {input_dtype}"
        ):
            fn(mine_x, mine_t)
        return
    out = fn(mine_x, mine_t)
    assert str(out.dtype) == str(ref.dtype).removeprefix("torch.")
    tol = dict(rtol=1e-6, atol=1e-7) if "float32" in (input_dtype, str(ref.dtype)[6:]) else TOL
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), **tol)
    out.backward()
    assert mine_x.grad.dtype == mine_x.dtype
    try:
        ref.backward()
        expected = ref_x.grad.numpy()
    except RuntimeError:  # huber_loss: PyTorch's backward refuses the mix; ours works
        assert name == "huber_loss"
        wide_x = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        ref_fn(wide_x, ref_t.double()).backward()
        expected = wide_x.grad.numpy()
    np.testing.assert_allclose(mine_x.grad.numpy(), expected, **tol)


# ---------------------------------------------------------------------------- bad input
def _p(*shape):
    return tt.tensor(_probabilities(shape, 0).astype(np.float32), requires_grad=True)


BAD = [
    (lambda: F.binary_cross_entropy(tt.tensor([0.5, 1.5]), tt.tensor([0.0, 1.0])), ValueError, "all elements of input"),
    (lambda: F.binary_cross_entropy(tt.tensor([0.5, float("nan")]), tt.zeros(2)), ValueError, "elements of input"),
    (lambda: F.binary_cross_entropy(tt.tensor([0.5]), tt.tensor([2.0])), ValueError, "all elements of target"),
    (lambda: F.binary_cross_entropy(_p(2, 3), tt.zeros(3, 2)), tt.ShapeError, r"input has shape \(2, 3\), target"),
    (
        lambda: F.binary_cross_entropy(_p(2, 3), tt.zeros(2, 3), tt.ones(2)),
        tt.ShapeError,
        r"weight of shape \(2,\) does not broadcast to the input's \(2, 3\)",
    ),
    (
        lambda: F.binary_cross_entropy(_p(2, 3), tt.zeros(2, 3), tt.ones(3, requires_grad=True)),
        RuntimeError,
        "not differentiable with respect to weight",
    ),
    (lambda: F.binary_cross_entropy(_p(2), tt.zeros(2), "sum"), TypeError, r"pass reduction= by keyword"),
    (lambda: F.cross_entropy(_p(3, 4), tt.tensor([0, 1, 2]), "sum"), TypeError, r"weight must be a Tensor or None"),
    (
        lambda: F.cross_entropy(_p(3, 4), tt.tensor([0, 1, 2]), tt.ones(3)),
        tt.ShapeError,
        r"weight tensor should be defined either for all 4 classes .* shape \(3,\)",
    ),
    (
        lambda: F.cross_entropy(_p(3, 4), tt.tensor([0, 1, 2]), tt.ones(4, dtype="float64")),
        TypeError,
        r"weight has dtype float64 but input has dtype float32",
    ),
    (
        lambda: F.nll_loss(_p(3, 4), tt.tensor([0, 1, 2]), tt.ones(4, requires_grad=True)),
        RuntimeError,
        r"nll_loss: the loss is not differentiable with respect to weight",
    ),
    (
        lambda: nn.CrossEntropyLoss([1.0, 2.0]),
        TypeError,
        r"CrossEntropyLoss: weight must be a Tensor or None, got list",
    ),
    (lambda: F.smooth_l1_loss(_p(2), tt.zeros(2), beta=-1.0), ValueError, "does not support negative values for beta"),
    (lambda: nn.SmoothL1Loss(beta=-0.5), ValueError, r"SmoothL1Loss does not support negative values for beta"),
    (lambda: nn.HuberLoss(delta=0), ValueError, r"HuberLoss does not support non-positive values for delta"),
    (lambda: F.huber_loss(_p(2), tt.zeros(2), delta="1"), TypeError, r"huber_loss: delta must be a number, got str"),
    (lambda: F.huber_loss(_p(2, 2), tt.zeros(2, 2), weight=tt.ones(2)), tt.ShapeError, r"it must have the input's"),
    (lambda: F.smooth_l1_loss(_p(2), tt.zeros(2), reduction="avg"), ValueError, r"unknown reduction 'avg'"),
    (lambda: nn.SmoothL1Loss("sum"), TypeError, r"positional argument"),
    (lambda: F.l1_loss(_p(2), tt.zeros(2, dtype="bool")), TypeError, r"l1_loss: target has dtype bool"),
]


@pytest.mark.parametrize("call,exc,message", BAD, ids=[str(k) for k in range(len(BAD))])
def test_bad_input_is_named(call, exc, message):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no numpy warning on the way
        with pytest.raises(exc, match=message):
            call()


@pytest.mark.parametrize("name", ["smooth_l1_loss", "huber_loss", "mse_loss", "binary_cross_entropy_with_logits"])
def test_float_target_of_another_dtype_gets_its_gradient_in_its_dtype(torch, name):
    x = np.random.default_rng(0).standard_normal((3, 2))
    t = np.random.default_rng(1).random((3, 2))
    mine_x, mine_t = tt.tensor(x, dtype="float32", requires_grad=True), tt.tensor(t, requires_grad=True)
    getattr(F, name)(mine_x, mine_t).backward()
    assert mine_x.grad.dtype == np.float32 and mine_t.grad.dtype == np.float64
    ref_t = torch.tensor(t, requires_grad=True)  # the reference: both in float64
    getattr(torch.nn.functional, name)(torch.tensor(x.astype(np.float32).astype(np.float64)), ref_t).backward()
    np.testing.assert_allclose(mine_t.grad.numpy(), ref_t.grad.numpy(), rtol=1e-5, atol=1e-7)
