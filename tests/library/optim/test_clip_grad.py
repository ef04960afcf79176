"""Gradient clipping (nn.utils.clip_grad_norm_, clip_grad_value_) against torch.nn.utils and
on every device. Tests that compare with PyTorch take the ``torch`` fixture."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.nn.utils import clip_grad_norm_, clip_grad_value_

SHAPES = [(3, 4), (5,), (), (2, 1, 3)]
NORM_TYPES = [2.0, 1.0, 3.0, 0.5, math.inf, -math.inf, "inf"]
MAX_NORMS = [0.5, 1e3]  # clipped, and left alone


def _grads(seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    return [scale * rng.standard_normal(s) + 0.5 for s in SHAPES]


def _params(grads, device="cpu", dtype=np.float64):
    params = []
    for g in grads:
        p = nn.Parameter(tt.tensor(np.zeros(np.shape(g), dtype=dtype), device=device))
        p.grad = tt.tensor(np.asarray(g, dtype=dtype), device=device)._data
        params.append(p)
    return params


def _torch_params(torch, grads):
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.zeros(np.shape(g), dtype=torch.float64))
        p.grad = torch.tensor(np.asarray(g))
        params.append(p)
    return params


@pytest.mark.parametrize("max_norm", MAX_NORMS)
@pytest.mark.parametrize("norm_type", NORM_TYPES, ids=str)
def test_clip_grad_norm_matches_torch(torch, norm_type, max_norm):
    grads = _grads()
    ours, theirs = _params(grads), _torch_params(torch, grads)
    total = clip_grad_norm_(ours, max_norm, norm_type)
    want = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert isinstance(total, tt.Tensor) and total.shape == ()
    np.testing.assert_allclose(total.numpy(), want.numpy(), rtol=1e-12)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.grad, q.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_clip_grad_norm_scales_only_above_max_norm():
    grads = _grads()
    params = _params(grads)
    total = float(clip_grad_norm_(params, 1e6))
    for p, g in zip(params, grads, strict=True):
        np.testing.assert_array_equal(p.grad, g)  # untouched, bit for bit
    clip_grad_norm_(params, total / 4)
    after = math.sqrt(sum(float((p.grad**2).sum()) for p in params))
    np.testing.assert_allclose(after, total / 4, rtol=1e-6)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # numpy's inf * 0
@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_clip_grad_norm_nonfinite_as_torch(torch, bad):
    grads = _grads()
    grads[0][1, 2] = bad
    ours, theirs = _params(grads), _torch_params(torch, grads)
    total = clip_grad_norm_(ours, 1.0)
    want = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    np.testing.assert_array_equal(total.numpy(), want.numpy())
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(p.grad, q.grad.numpy())


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_clip_grad_norm_error_if_nonfinite(bad):
    grads = _grads()
    grads[1][0] = bad
    params = _params(grads)
    with pytest.raises(RuntimeError, match=r"clip_grad_norm_: the total norm of order 2.0 .* is non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    for p, g in zip(params, grads, strict=True):
        np.testing.assert_array_equal(p.grad, g)  # nothing was scaled


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_on_device(device, norm_type):
    """The norm is computed on the gradients' device and the gradients stay there."""
    grads = _grads()
    ref = _params(grads, "cpu", np.float32)
    ours = _params(grads, device, np.float32)
    want = clip_grad_norm_(ref, 1.0, norm_type)
    total = clip_grad_norm_(ours, 1.0, norm_type)
    assert total.device == ours[0].device
    np.testing.assert_allclose(total.numpy(), want.numpy(), rtol=1e-5)
    assert total.dtype == ours[0].dtype
    for p, q in zip(ours, ref, strict=True):
        assert tt.tensor(p.grad).device == p.device
        np.testing.assert_allclose(tt.tensor(p.grad).numpy(), q.grad, rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_accepts_one_tensor_generators_and_tensor_grads():
    grads = _grads()
    single = _params(grads[:1])[0]
    total = clip_grad_norm_(single, 1.0)
    np.testing.assert_allclose(total.item(), np.linalg.norm(grads[0]))
    params = _params(grads)
    params[1].grad = tt.tensor(params[1].grad)  # a user may set a Tensor
    no_grad = nn.Parameter(np.zeros(3))
    total = clip_grad_norm_((p for p in [*params, no_grad]), 1.0)
    np.testing.assert_allclose(total.item(), math.sqrt(sum((g**2).sum() for g in grads)))
    assert no_grad.grad is None
    scaled = params[1].grad.numpy()
    np.testing.assert_allclose(scaled, grads[1] / total.item(), rtol=1e-5)


def test_clip_grad_norm_without_grads_is_zero():
    total = clip_grad_norm_([nn.Parameter(np.zeros(2))], 1.0)
    assert total.item() == 0.0


def test_clip_grad_norm_keeps_dtype_and_float16():
    p32 = _params(_grads(), dtype=np.float32)
    assert clip_grad_norm_(p32, 1.0).dtype == np.float32
    assert all(p.grad.dtype == np.float32 for p in p32)
    p16 = _params([np.full(300, 100.0)], dtype=np.float16)  # sum of squares overflows float16
    total = clip_grad_norm_(p16, 1.0)
    np.testing.assert_allclose(float(total), 100.0 * math.sqrt(300), rtol=1e-3)
    assert p16[0].grad.dtype == np.float16
    np.testing.assert_allclose(p16[0].grad.numpy().astype(np.float64), 1 / math.sqrt(300), rtol=1e-2)


@pytest.mark.parametrize("clip_value", [0.0, 0.7, 100.0])
def test_clip_grad_value_matches_torch(torch, clip_value):
    grads = _grads()
    grads[0][0, 0] = math.nan
    ours, theirs = _params(grads), _torch_params(torch, grads)
    clip_grad_value_(ours, clip_value)
    torch.nn.utils.clip_grad_value_(theirs, clip_value)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(p.grad, q.grad.numpy())


def test_clip_grad_value_on_device(device):
    grads = _grads()
    ours = _params(grads, device, np.float32)
    clip_grad_value_(ours, 0.5)
    for p, g in zip(ours, grads, strict=True):
        assert tt.tensor(p.grad).device == p.device
        np.testing.assert_allclose(tt.tensor(p.grad).numpy(), np.clip(g, -0.5, 0.5).astype(np.float32))


_P = nn.Parameter(np.zeros(2))
BAD_INPUTS = [
    (
        "norm-type-zero",
        lambda: clip_grad_norm_([_P], 1.0, norm_type=0),
        ValueError,
        r"clip_grad_norm_: invalid norm_type 0.0: must be a number > 0, inf or -inf",
    ),
    ("norm-type-negative", lambda: clip_grad_norm_([_P], 1.0, norm_type=-2), ValueError, r"invalid norm_type -2.0"),
    ("norm-type-word", lambda: clip_grad_norm_([_P], 1.0, norm_type="fro"), ValueError, r"could not convert string"),
    ("max-norm-none", lambda: clip_grad_norm_([_P], None), TypeError, r"float\(\) argument must be"),
    (
        "parameters-int",
        lambda: clip_grad_norm_(3, 1.0),
        TypeError,
        r"clip_grad_norm_: parameters must be a Tensor or an iterable of Tensors, got int",
    ),
    (
        "parameters-array",
        lambda: clip_grad_norm_([np.zeros(2)], 1.0),
        TypeError,
        r"clip_grad_norm_: parameters\[0\] is a ndarray, expected a Tensor",
    ),
    (
        "value-negative",
        lambda: clip_grad_value_([_P], -1.0),
        ValueError,
        r"clip_grad_value_: invalid clip_value -1.0: must be a number >= 0",
    ),
    (
        "value-string-item",
        lambda: clip_grad_value_(["w"], 1.0),
        TypeError,
        r"clip_grad_value_: parameters\[0\] is a str",
    ),
]


@pytest.mark.parametrize("call,exc,message", [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_is_named(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
