"""nn.init: gains and fans against torch.nn.init's, the distributions' bounds and spreads from the
formulas, in-place semantics (same tensor, version bumped), generators, devices and bad input."""

import math
import warnings

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.nn import init


@pytest.fixture(autouse=True)
def _seeded():
    tt.manual_seed(0)  # the statistical checks below hold by wide margins; the seed makes them repeatable


GAINS = [
    ("linear", None),
    ("conv2d", None),
    ("sigmoid", None),
    ("tanh", None),
    ("relu", None),
    ("leaky_relu", None),
    ("leaky_relu", 0.2),
    ("leaky_relu", 0),
    ("selu", None),
]


@pytest.mark.parametrize("nonlinearity,param", GAINS)
def test_calculate_gain_matches_torch(torch, nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-12
    )


@pytest.mark.parametrize("shape", [(3, 4), (5, 3, 2, 2), (2, 3, 4), (7, 1)])
def test_fans_match_torch(torch, shape):
    ours = init._calculate_fan_in_and_fan_out(tt.zeros(*shape))
    assert ours == torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))


N_OUT, N_IN = 300, 200  # 60000 samples: a spread within 2% and bounds reached within 1%


def _torch_fans(torch, shape):
    return torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))


def _check_uniform(values, bound):
    assert np.abs(values).max() <= bound * (1 + 1e-6)
    assert np.abs(values).max() > 0.99 * bound
    np.testing.assert_allclose(values.std(), bound / math.sqrt(3), rtol=0.02)
    assert abs(values.mean()) < 0.02 * bound


def _check_normal(values, std):
    np.testing.assert_allclose(values.std(), std, rtol=0.02)
    assert abs(values.mean()) < 0.02 * std


@pytest.mark.parametrize("gain", [1.0, 5.0 / 3])
def test_xavier_uniform_bounds(torch, gain):
    w = init.xavier_uniform_(tt.zeros(N_OUT, N_IN), gain=gain)
    fan_in, fan_out = _torch_fans(torch, (N_OUT, N_IN))
    _check_uniform(w.numpy(), gain * math.sqrt(6.0 / (fan_in + fan_out)))


def test_xavier_normal_std(torch):
    w = init.xavier_normal_(tt.zeros(N_OUT, 20, 10), gain=2.0)
    fan_in, fan_out = _torch_fans(torch, (N_OUT, 20, 10))
    _check_normal(w.numpy(), 2.0 * math.sqrt(2.0 / (fan_in + fan_out)))


KAIMING = [
    dict(),
    dict(mode="fan_out"),
    dict(nonlinearity="relu"),
    dict(a=0.3, mode="fan_out"),
    dict(a=math.sqrt(5)),  # what PyTorch's Linear uses
    dict(nonlinearity="tanh", mode="FAN_IN"),
]


@pytest.mark.parametrize("kwargs", KAIMING, ids=str)
def test_kaiming_uniform_bounds(torch, kwargs):
    shape = (N_OUT, N_IN)
    w = init.kaiming_uniform_(tt.zeros(*shape), **kwargs)
    fan_in, fan_out = _torch_fans(torch, shape)
    fan = fan_out if kwargs.get("mode", "fan_in").lower() == "fan_out" else fan_in
    gain = torch.nn.init.calculate_gain(kwargs.get("nonlinearity", "leaky_relu"), kwargs.get("a", 0))
    _check_uniform(w.numpy(), math.sqrt(3.0) * gain / math.sqrt(fan))


@pytest.mark.parametrize("kwargs", KAIMING, ids=str)
def test_kaiming_normal_std(torch, kwargs):
    shape = (N_OUT, 40, 5)
    w = init.kaiming_normal_(tt.zeros(*shape), **kwargs)
    fan_in, fan_out = _torch_fans(torch, shape)
    fan = fan_out if kwargs.get("mode", "fan_in").lower() == "fan_out" else fan_in
    gain = torch.nn.init.calculate_gain(kwargs.get("nonlinearity", "leaky_relu"), kwargs.get("a", 0))
    _check_normal(w.numpy(), gain / math.sqrt(fan))


def test_uniform_and_normal_parameters():
    u = init.uniform_(tt.zeros(N_OUT, N_IN), a=-3.0, b=5.0).numpy()
    assert u.min() >= -3.0 and u.max() < 5.0
    np.testing.assert_allclose(u.mean(), 1.0, atol=0.05)
    n = init.normal_(tt.zeros(N_OUT, N_IN, dtype="float64"), mean=2.0, std=0.5).numpy()
    np.testing.assert_allclose([n.mean(), n.std()], [2.0, 0.5], rtol=0.02)


def test_constant_zeros_ones_eye():
    w = tt.randn(3, 4)
    assert init.constant_(w, 0.25) is w
    np.testing.assert_array_equal(w.numpy(), np.full((3, 4), 0.25, np.float32))
    np.testing.assert_array_equal(init.zeros_(w).numpy(), 0)
    np.testing.assert_array_equal(init.ones_(w).numpy(), 1)
    np.testing.assert_array_equal(init.eye_(w).numpy(), np.eye(3, 4))
    counts = init.constant_(tt.zeros(2, dtype="int64"), 7)
    assert counts.dtype == np.int64 and counts.tolist() == [7, 7]


@pytest.mark.parametrize(
    "fn",
    [init.uniform_, init.normal_, init.xavier_uniform_, init.xavier_normal_, init.kaiming_uniform_, init.eye_],
    ids=lambda fn: fn.__name__,
)
def test_in_place_on_a_parameter_with_grad_mode_on(fn):
    layer = nn.Linear(4, 3)
    weight = layer.weight
    before = weight.numpy().copy()
    x = tt.randn(2, 4)
    y = (layer(x) * layer.weight.sum()).sum()  # saves the weight
    assert fn(weight) is weight and layer.weight is weight
    assert weight.requires_grad and weight.dtype == np.float32 and weight.shape == (3, 4)
    assert not np.array_equal(weight.numpy(), before)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()  # the version was bumped: the graph refuses the stale weight


def test_seeds_and_generators_repeat():
    tt.manual_seed(3)
    a = init.kaiming_uniform_(tt.zeros(5, 4)).numpy()
    tt.manual_seed(3)
    b = init.kaiming_uniform_(tt.zeros(5, 4)).numpy()
    np.testing.assert_array_equal(a, b)
    g1, g2 = tt.Generator().manual_seed(11), tt.Generator().manual_seed(11)
    tt.manual_seed(3)
    c = init.kaiming_uniform_(tt.zeros(5, 4), generator=g1).numpy()
    d = init.kaiming_uniform_(tt.zeros(5, 4)).numpy()  # the global stream was not advanced by g1
    np.testing.assert_array_equal(d, a)
    np.testing.assert_array_equal(c, init.kaiming_uniform_(tt.zeros(5, 4), generator=g2).numpy())
    assert not np.array_equal(c, a)


@pytest.mark.parametrize(
    "fn,kwargs",
    [
        (init.uniform_, dict(a=-1.0, b=2.0)),
        (init.normal_, dict(std=0.1)),
        (init.xavier_normal_, {}),
        (init.kaiming_uniform_, dict(nonlinearity="relu")),
        (init.eye_, {}),
        (init.constant_, dict(val=1.5)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_every_device_gets_the_cpu_values(device, fn, kwargs):
    host = tt.zeros(6, 5)
    placed = tt.zeros(6, 5, device=device)
    random = fn not in (init.eye_, init.constant_)
    fn(host, **kwargs, **({"generator": tt.Generator().manual_seed(5)} if random else {}))
    # a generator for the tensor's type of device, as PyTorch requires
    out = fn(placed, **kwargs, **({"generator": tt.Generator(device=device).manual_seed(5)} if random else {}))
    assert out is placed and out.device == tt.zeros(1, device=device).device
    np.testing.assert_array_equal(out.numpy(), host.numpy())


def test_zero_element_kaiming_warns_and_does_nothing():
    w = tt.zeros(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_normal_(w) is w
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert init.xavier_uniform_(tt.zeros(0, 0)).shape == (0, 0)


def test_module_apply_initializes_every_linear():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 2)))

    def reset(module):
        if isinstance(module, nn.Linear):
            init.zeros_(module.bias)
            init.ones_(module.weight)

    assert model.apply(reset) is model
    for name, p in model.named_parameters():
        np.testing.assert_array_equal(p.numpy(), 1.0 if name.endswith("weight") else 0.0, err_msg=name)


BAD = [
    (lambda: init.xavier_uniform_(tt.zeros(5)), ValueError, r"fewer than 2 dimensions \(got shape \(5,\)\)"),
    (lambda: init.xavier_normal_(tt.zeros(())), ValueError, r"fewer than 2 dimensions"),
    (lambda: init.kaiming_uniform_(tt.zeros(5)), ValueError, r"fewer than 2 dimensions"),
    (lambda: init.kaiming_normal_(tt.zeros(3, 2), mode="fan_avg"), ValueError, r"Mode 'fan_avg' not supported"),
    (lambda: init.kaiming_normal_(tt.zeros(3, 2), nonlinearity="swish"), ValueError, r"unsupported nonlinearity"),
    (lambda: init.calculate_gain("leaky_relu", "0.1"), ValueError, r"negative_slope '0.1' is not a valid number"),
    (
        lambda: init.normal_(tt.zeros(3, dtype="int64")),
        TypeError,
        r"normal_\(\): .*floating-point tensor, got dtype int64",
    ),
    (lambda: init.normal_(tt.zeros(3), std=-1.0), ValueError, r"std must be non-negative"),
    (lambda: init.uniform_(tt.zeros(3), a=2.0, b=1.0), ValueError, r"a must be at most b"),
    (lambda: init.uniform_(np.zeros(3)), TypeError, r"uniform_\(\): tensor must be a Tensor, got ndarray"),
    (lambda: init.normal_(tt.zeros(3), generator=np.random.default_rng()), TypeError, r"tinytensor Generator"),
    (
        lambda: init.normal_(tt.zeros(3, device="strict:device1"), generator=tt.Generator()),
        tt.DeviceError,
        r"normal_\(\): generator is a 'cpu' generator but the result is on a 'strict' device",
    ),
    (lambda: init.eye_(tt.zeros(2, 2, 2)), ValueError, r"only tensors with 2 dimensions"),
    (lambda: init.constant_(tt.zeros(2, dtype="int64"), 0.5), TypeError, r"floating-point result"),
]


@pytest.mark.parametrize("call,exc,message", BAD, ids=[str(k) for k in range(len(BAD))])
def test_bad_input_is_named(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_torch_refuses_the_same_shapes(torch):
    for fn in (torch.nn.init.xavier_uniform_, torch.nn.init.kaiming_normal_):
        with pytest.raises(ValueError, match="fewer than 2 dimensions"):
            fn(torch.zeros(5))
