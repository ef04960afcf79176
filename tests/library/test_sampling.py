"""normal and multinomial: PyTorch's forms, shapes and dtypes, the statistics of many draws, the
gradient PyTorch gives (zero), devices, and bad input checked against PyTorch's own refusals.

The random streams differ from PyTorch's, so values are compared through their statistics; each
test seeds its stream, so a tolerance of several standard errors never flakes.
"""

import math

import numpy as np
import pytest

import tinytensor as tt
from tinytensor.dtypes import numpy_dtype


def _host(t):
    return t.numpy()


# ---------------------------------------------------------------------------- normal
def test_normal_of_numbers_has_the_asked_mean_and_std(device):
    tt.manual_seed(0)
    out = tt.normal(3.0, 2.0, (200_000,), device=device)
    assert out.device == device and numpy_dtype(out.dtype) == np.float32
    values = _host(out).astype(np.float64)
    assert abs(values.mean() - 3.0) < 5 * 2.0 / math.sqrt(values.size)
    assert abs(values.std() - 2.0) < 0.02
    assert tt.normal(0, 1, size=(2, 3), dtype="float64").dtype == np.float64
    assert tt.normal(0.0, 1.0, [4], requires_grad=True).requires_grad


def test_normal_of_tensors_draws_each_element_from_its_own_mean_and_std(device):
    tt.manual_seed(1)
    n = 50_000
    mean = tt.tensor([[-5.0], [0.0], [10.0]], device=device)  # (3, 1)
    std = tt.tensor([0.5, 1.0, 4.0, 0.0], device=device)  # (4,): broadcast to (3, 4)
    draws = np.stack([_host(tt.normal(mean, std)) for _ in range(200)])  # (200, 3, 4)
    assert draws.shape == (200, 3, 4)
    expected_mean = np.broadcast_to(np.array([[-5.0], [0.0], [10.0]]), (3, 4))
    expected_std = np.broadcast_to(np.array([0.5, 1.0, 4.0, 0.0]), (3, 4))
    np.testing.assert_allclose(draws.mean(axis=0), expected_mean, atol=5 * 4.0 / math.sqrt(200))
    np.testing.assert_allclose(draws.std(axis=0), expected_std, rtol=0.2, atol=1e-6)
    assert np.all(draws[:, :, 3] == expected_mean[:, 3])  # std 0: exactly the mean
    many = _host(tt.normal(tt.zeros(n, device=device), 3.0)).astype(np.float64)
    assert abs(many.mean()) < 5 * 3.0 / math.sqrt(n) and abs(many.std() - 3.0) < 0.05
    scaled = _host(tt.normal(1.5, tt.full((n,), 0.5, device=device))).astype(np.float64)
    assert abs(scaled.mean() - 1.5) < 5 * 0.5 / math.sqrt(n) and abs(scaled.std() - 0.5) < 0.01


@pytest.mark.parametrize(
    ("mean", "std"),
    [
        ((2, 1), (3,)),
        ((3,), None),
        (None, (2, 3)),
        ((1,), (4, 1)),
        ((), ()),
    ],
)
def test_normal_shapes_and_dtypes_follow_pytorch(torch, mean, std):
    def make(lib, shape, dtype):
        return 0.5 if shape is None else lib.ones(shape, dtype=getattr(lib, dtype))

    pairs = (
        ("float32", "float32"),
        ("float64", "float32"),
        ("float16", "float32"),
        ("float32", "float64"),
        ("float32", "float16"),
    )
    for mean_dtype, std_dtype in pairs:
        ours = tt.normal(make(tt, mean, mean_dtype), make(tt, std, std_dtype))
        theirs = torch.normal(make(torch, mean, mean_dtype), make(torch, std, std_dtype))
        assert ours.shape == tuple(theirs.shape)
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")


def test_normal_gradient_is_zero_as_in_pytorch(torch, device):
    mean = tt.tensor([1.0, 2.0], device=device, requires_grad=True)
    std = tt.tensor([[0.5, 1.0]], device=device, requires_grad=True)  # broadcast to (1, 2)
    out = tt.normal(mean, std)
    assert out.requires_grad and out.shape == (1, 2)
    (out * 3.0).sum().backward()
    t_mean = torch.tensor([1.0, 2.0], requires_grad=True)
    t_std = torch.tensor([[0.5, 1.0]], requires_grad=True)
    (torch.normal(t_mean, t_std) * 3.0).sum().backward()
    for ours, theirs in ((mean, t_mean), (std, t_std)):
        assert ours.grad.device == device and ours.grad.shape == tuple(theirs.grad.shape)
        np.testing.assert_array_equal(_host(ours.grad), theirs.grad.numpy())
    only_mean = tt.normal(tt.zeros(2, requires_grad=True), 1.0)
    assert only_mean.requires_grad
    with tt.no_grad():
        assert not tt.normal(mean, std).requires_grad
    assert not tt.normal(tt.zeros(2), 1.0).requires_grad


def test_normal_gradient_survives_a_later_change_to_mean():
    # the zero gradient reads no saved value, so changing mean afterwards is no error (PyTorch too)
    mean = tt.zeros(3, requires_grad=True)
    out = tt.normal(mean, 1.0)
    with tt.no_grad():
        mean.add_(1.0)
    out.sum().backward()
    np.testing.assert_array_equal(_host(mean.grad), [0.0, 0.0, 0.0])


# ---------------------------------------------------------------------------- multinomial
def test_multinomial_with_replacement_follows_the_probabilities(device):
    tt.manual_seed(2)
    probs = np.array([0.1, 0.0, 0.6, 0.3])
    n = 100_000
    out = tt.multinomial(tt.tensor(probs * 7.0, device=device), n, replacement=True)  # rows need not sum to 1
    assert out.device == device and out.shape == (n,) and _host(out).dtype == np.int64
    counts = np.bincount(_host(out), minlength=4) / n
    assert counts[1] == 0.0  # a category of probability zero is never drawn
    np.testing.assert_allclose(counts, probs, atol=5 * math.sqrt(0.25 / n))


def test_multinomial_rows_are_independent_distributions(device):
    tt.manual_seed(3)
    probs = tt.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0], [1.0, 1.0, 0.0]], device=device)
    out = _host(tt.multinomial(probs, 1000, True))
    assert out.shape == (3, 1000)
    assert set(out[0].tolist()) == {0} and set(out[1].tolist()) == {2} and set(out[2].tolist()) == {0, 1}
    assert tt.multinomial(tt.ones(0, 3), 2).shape == (0, 2)


def test_multinomial_without_replacement_draws_in_order_of_probability():
    # P(first = a, second = b) = p_a * p_b / (1 - p_a): drawing one after another without replacement
    tt.manual_seed(4)
    p = np.array([0.5, 0.3, 0.2])
    n = 40_000
    draws = _host(tt.multinomial(tt.tensor(np.tile(p, (n, 1))), 2))
    assert draws.shape == (n, 2) and np.all(draws[:, 0] != draws[:, 1])
    for a in range(3):
        for b in range(3):
            if a != b:
                expected = p[a] * p[b] / (1 - p[a])
                seen = np.mean((draws[:, 0] == a) & (draws[:, 1] == b))
                assert abs(seen - expected) < 5 * math.sqrt(expected * (1 - expected) / n), (a, b, seen, expected)


def test_multinomial_without_replacement_puts_zero_probabilities_last(torch):
    tt.manual_seed(5)
    for _ in range(20):
        ours = _host(tt.multinomial(tt.tensor([0.0, 1.0, 1.0, 0.0, 3.0]), 5))
        theirs = torch.multinomial(torch.tensor([0.0, 1.0, 1.0, 0.0, 3.0]), 5).numpy()
        assert sorted(ours.tolist()) == sorted(theirs.tolist()) == [0, 1, 2, 3, 4]
        assert set(ours[3:].tolist()) == set(theirs[3:].tolist()) == {0, 3}


# ---------------------------------------------------------------------------- bad input, against PyTorch
BAD = [
    # name, call(lib), our error, our message
    (
        "normal-numbers-no-size",
        lambda lib: lib.normal(0.0, 1.0),
        TypeError,
        r"normal\(\): with a number mean and std, size is required",
    ),
    (
        "normal-tensor-and-size",
        lambda lib: lib.normal(lib.zeros(2), 1.0, (3,)),
        TypeError,
        r"normal\(\): size goes with a number",
    ),
    (
        "normal-tensor-and-dtype",
        lambda lib: lib.normal(lib.zeros(2), 1.0, dtype=lib.float64),
        TypeError,
        r"normal\(\): dtype, device and requires_grad go",
    ),
    (
        "normal-negative-std",
        lambda lib: lib.normal(0.0, -1.0, (2,)),
        ValueError,
        r"normal\(\): std must be >= 0, got -1.0",
    ),
    (
        "normal-nan-std",
        lambda lib: lib.normal(0.0, math.nan, (2,)),
        ValueError,
        r"normal\(\): std must be >= 0, got nan",
    ),
    (
        "normal-negative-std-scalar",
        lambda lib: lib.normal(lib.zeros(2), -1.0),
        ValueError,
        r"std must be >= 0, got -1.0",
    ),
    (
        "normal-negative-std-tensor",
        lambda lib: lib.normal(lib.zeros(2), lib.tensor([1.0, -1.0])),
        ValueError,
        r"every element of std must be >= 0",
    ),
    (
        "normal-int-mean",
        lambda lib: lib.normal(lib.zeros(2, dtype=lib.int64), 1.0),
        TypeError,
        r"normal\(\): mean must be a floating-point tensor",
    ),
    (
        "normal-shapes",
        lambda lib: lib.normal(lib.zeros(2, 3), lib.ones(3, 2)),
        tt.ShapeError,
        r"mean of shape \(2, 3\) and std of shape \(3, 2\) cannot be broadcast",
    ),
    (
        "normal-int-dtype",
        lambda lib: lib.normal(0.0, 1.0, (2,), dtype=lib.int64),
        TypeError,
        r"normal\(\): random samples need a floating-point dtype",
    ),
    (
        "multinomial-too-many",
        lambda lib: lib.multinomial(lib.tensor([0.2, 0.8]), 3),
        ValueError,
        r"cannot draw 3 samples without replacement from 2 categories",
    ),
    (
        "multinomial-zero-samples",
        lambda lib: lib.multinomial(lib.tensor([0.2, 0.8]), 0),
        ValueError,
        r"num_samples must be an int >= 1, got 0",
    ),
    (
        "multinomial-float-samples",
        lambda lib: lib.multinomial(lib.tensor([0.2, 0.8]), 1.5),
        TypeError,
        r"num_samples must be an int >= 1, got float",
    ),
    (
        "multinomial-negative",
        lambda lib: lib.multinomial(lib.tensor([0.2, -0.8]), 1),
        ValueError,
        r"probabilities must be finite and >= 0",
    ),
    (
        "multinomial-nan",
        lambda lib: lib.multinomial(lib.tensor([1.0, math.nan]), 1),
        ValueError,
        r"probabilities must be finite and >= 0",
    ),
    (
        "multinomial-inf",
        lambda lib: lib.multinomial(lib.tensor([1.0, math.inf]), 1, True),
        ValueError,
        r"probabilities must be finite",
    ),
    (
        "multinomial-zero-sum",
        lambda lib: lib.multinomial(lib.tensor([0.0, 0.0]), 1),
        ValueError,
        r"the probabilities sum to 0",
    ),
    (
        "multinomial-zero-row",
        lambda lib: lib.multinomial(lib.tensor([[1.0, 1.0], [0.0, 0.0]]), 1),
        ValueError,
        r"row 1 of the probabilities sums to 0",
    ),
    (
        "multinomial-int",
        lambda lib: lib.multinomial(lib.tensor([1, 2]), 1),
        TypeError,
        r"must be a floating-point tensor of probabilities, got dtype int64",
    ),
    (
        "multinomial-0d",
        lambda lib: lib.multinomial(lib.tensor(1.0), 1),
        ValueError,
        r"must be 1-D or 2-D .* got shape \(\)",
    ),
    ("multinomial-3d", lambda lib: lib.multinomial(lib.ones(2, 2, 2), 1), ValueError, r"must be 1-D or 2-D"),
    (
        "multinomial-empty",
        lambda lib: lib.multinomial(lib.ones(0), 1),
        ValueError,
        r"cannot draw 1 samples without replacement from 0",
    ),
]


@pytest.mark.parametrize(("name", "call", "exc", "message"), BAD, ids=[row[0] for row in BAD])
def test_bad_input_is_refused_as_pytorch_refuses_it(torch, name, call, exc, message):
    with pytest.raises(exc, match=message):
        call(tt)
    with pytest.raises((RuntimeError, TypeError, ValueError, NotImplementedError)):
        call(torch)


def test_bad_input_without_a_pytorch_counterpart():
    with pytest.raises(TypeError, match=r"multinomial\(\): input must be a tensor of probabilities, got list"):
        tt.multinomial([0.5, 0.5], 1)
    with pytest.raises(tt.DeviceError, match=r"normal\(\): mean is on cpu and std on strict:device1"):
        tt.normal(tt.zeros(2), tt.ones(2, device="strict:device1"))
