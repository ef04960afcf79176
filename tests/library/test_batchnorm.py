"""BatchNorm1d and F.batch_norm against torch.nn: outputs, gradients (input, weight, bias), running
statistics over several training steps, eval mode, state dicts, reprs, devices and bad input."""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.nn import functional as F

TOL = dict(rtol=1e-10, atol=1e-12)

CONFIGS = [
    {},
    dict(momentum=0.3),
    dict(momentum=None),
    dict(affine=False),
    dict(eps=1e-2, bias=False),
    dict(track_running_stats=False),
]


def _pair(torch, num_features=3, **kwargs):
    ours = nn.BatchNorm1d(num_features, **kwargs).double()
    theirs = torch.nn.BatchNorm1d(num_features, **kwargs).double()
    rng = np.random.default_rng(9)
    with torch.no_grad():  # non-trivial affine parameters on both sides
        for p in theirs.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _step(torch, ours, theirs, x):
    """One forward and backward on both; compares output and every gradient."""
    mine = tt.tensor(x, requires_grad=True)
    ref = torch.tensor(x, requires_grad=True)
    out, ref_out = ours(mine), theirs(ref)
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), **TOL, err_msg="forward")
    upstream = np.random.default_rng(int(abs(x).sum() * 1000) % 2**32).standard_normal(x.shape)
    out.backward(tt.tensor(upstream))
    ref_out.backward(torch.tensor(upstream))
    np.testing.assert_allclose(mine.grad, ref.grad.numpy(), **TOL, err_msg="grad of input")
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        np.testing.assert_allclose(p.grad, q.grad.numpy(), **TOL, err_msg=f"grad of {name}")
        p.grad, q.grad = None, None


def _compare_state(ours, theirs):
    mine, ref = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(ref)
    for name in ref:
        np.testing.assert_allclose(mine[name].numpy(), ref[name].numpy(), **TOL, err_msg=name)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5)], ids=["NC", "NCL"])
@pytest.mark.parametrize("kwargs", CONFIGS, ids=str)
def test_training_steps_then_eval_match_torch(torch, kwargs, shape):
    ours, theirs = _pair(torch, **kwargs)
    rng = np.random.default_rng(0)
    for step in range(3):
        x = rng.standard_normal(shape) * (step + 1) + step
        _step(torch, ours, theirs, x)
        _compare_state(ours, theirs)  # running statistics and num_batches_tracked after each step
    ours.eval()
    theirs.eval()
    _step(torch, ours, theirs, rng.standard_normal(shape))
    _compare_state(ours, theirs)  # eval mode changes no statistic


def test_state_dict_keys_dtypes_and_shapes_match_torch(torch):
    for kwargs in CONFIGS:
        mine, ref = nn.BatchNorm1d(4, **kwargs).state_dict(), torch.nn.BatchNorm1d(4, **kwargs).state_dict()
        assert list(mine) == list(ref), kwargs
        for name in ref:
            assert str(mine[name].dtype) == str(ref[name].dtype).removeprefix("torch."), name
            assert mine[name].shape == tuple(ref[name].shape), name


@pytest.mark.parametrize("kwargs", CONFIGS, ids=str)
def test_repr_matches_torch(torch, kwargs):
    assert repr(nn.BatchNorm1d(5, **kwargs)) == repr(torch.nn.BatchNorm1d(5, **kwargs))


def test_running_statistics_are_updated_in_place():
    bn = nn.BatchNorm1d(2)
    mean, var, count = bn.running_mean, bn.running_var, bn.num_batches_tracked
    x = tt.tensor([[1.0, 10.0], [3.0, 20.0], [5.0, 60.0]])
    bn(x)
    assert bn.running_mean is mean and bn.running_var is var and bn.num_batches_tracked is count
    np.testing.assert_allclose(mean.numpy(), [0.3, 3.0], rtol=1e-6)  # 0.1 * batch mean
    np.testing.assert_allclose(var.numpy(), [0.9 + 0.1 * 4.0, 0.9 + 0.1 * 700.0], rtol=1e-6)  # unbiased
    assert count.item() == 1 and count.dtype == np.int64


def test_batch_size_one_is_refused_in_training_only(torch):
    bn = nn.BatchNorm1d(3)
    with pytest.raises(
        ValueError, match=r"Expected more than 1 value per channel when training, got input size \(1, 3\)"
    ):
        bn(tt.zeros(1, 3))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        torch.nn.BatchNorm1d(3)(torch.zeros(1, 3))
    assert bn(tt.zeros(1, 3, 2)).shape == (1, 3, 2)  # one sample, two values per channel
    bn.eval()
    assert bn(tt.zeros(1, 3)).shape == (1, 3)


def test_empty_batch_gives_empty_output_and_keeps_the_statistics(torch):
    ours, theirs = nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    out, ref = ours(tt.zeros(0, 3)), theirs(torch.zeros(0, 3))
    assert out.shape == tuple(ref.shape) == (0, 3)
    _compare_state(ours, theirs)


def test_eval_without_running_statistics_uses_the_batch(torch):
    ours, theirs = _pair(torch, track_running_stats=False)
    ours.eval()
    theirs.eval()
    _step(torch, ours, theirs, np.random.default_rng(1).standard_normal((5, 3)))


def test_trains_and_moves_on_every_device(device):
    x = np.random.default_rng(2).standard_normal((8, 3, 4)).astype(np.float32)
    results = []
    for where in ("cpu", device):
        tt.manual_seed(0)
        bn = nn.BatchNorm1d(3, momentum=None).to(where)
        inp = tt.tensor(x, device=where, requires_grad=True)
        for _ in range(2):
            out = bn(inp)
        out.sum().backward()
        assert out.device == inp.device and bn.running_var.device == inp.device
        results.append([out.numpy(), inp.grad.numpy(), bn.running_mean.numpy(), bn.running_var.numpy()])
    for got, expected in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-6)


def test_to_double_keeps_the_batch_counter_int64():
    bn = nn.BatchNorm1d(2).double()
    assert bn.running_mean.dtype == np.float64 and bn.weight.dtype == np.float64
    assert bn.num_batches_tracked.dtype == np.int64


def test_functional_batch_norm_updates_the_given_running_statistics(torch):
    x = np.random.default_rng(3).standard_normal((5, 2, 3))
    mean, var = tt.zeros(2, dtype="float64"), tt.ones(2, dtype="float64")
    ref_mean, ref_var = torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)
    out = F.batch_norm(tt.tensor(x), mean, var, training=True, momentum=0.25)
    ref = torch.nn.functional.batch_norm(torch.tensor(x), ref_mean, ref_var, training=True, momentum=0.25)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), **TOL)
    np.testing.assert_allclose(mean.numpy(), ref_mean.numpy(), **TOL)
    np.testing.assert_allclose(var.numpy(), ref_var.numpy(), **TOL)


BAD = [
    (lambda: nn.BatchNorm1d(3)(tt.zeros(4)), ValueError, r"BatchNorm1d: expected 2D or 3D input \(got 1D input\)"),
    (lambda: nn.BatchNorm1d(3)(tt.zeros(2, 3, 4, 5)), ValueError, r"got 4D input"),
    (
        lambda: nn.BatchNorm1d(3)(tt.zeros(2, 4)),
        tt.ShapeError,
        r"running_mean should contain 4 elements .*got shape \(3,\)",
    ),
    (
        lambda: nn.BatchNorm1d(3)(tt.zeros(2, 3, dtype="float64")),
        TypeError,
        r"running_mean has dtype float32 but the input has dtype float64",
    ),
    (lambda: F.batch_norm(tt.zeros(4, 3), None, None), ValueError, r"must be defined in evaluation mode"),
    (lambda: F.batch_norm(tt.zeros(4, 3), None, None, tt.ones(2), training=True), tt.ShapeError, r"weight should"),
    (lambda: F.batch_norm(tt.zeros(4, 3, dtype="int64"), None, None, training=True), TypeError, r"floating point"),
    (lambda: F.batch_norm(tt.zeros(4, 3), None, None, training=True, momentum="0.1"), TypeError, r"momentum"),
    (lambda: nn.BatchNorm1d(3, eps=0), ValueError, r"eps must be a positive number"),
    (lambda: nn.BatchNorm1d(-1), ValueError, r"num_features must be an int >= 0"),
    (lambda: nn.BatchNorm1d(3, momentum="x"), TypeError, r"momentum must be a number or None"),
]


@pytest.mark.parametrize("call,exc,message", BAD, ids=[str(k) for k in range(len(BAD))])
def test_bad_input_is_named(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
