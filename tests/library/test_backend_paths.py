"""The backend's hot paths (matmul, linear, softmax cross-entropy) on every array library.

Each op has one call site, the backend method; whether numpy, CuPy or the extension's kernels run
is decided there. On array_api_strict's devices every array must stay on the input's device
(mixing raises), as every launch and allocation must on a GPU; on "cuda" the extension must be
the path taken wherever the probe found its kernels usable.
"""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.devices import backend_of
from tinytensor.nn import functional as F
from tinytensor.numpy_backend import NUMPY


def _on(device, array):
    return tt.tensor(array).to(device)._data


def _host(array):
    return backend_of(array).to_numpy(array)


@pytest.fixture
def target(other_device):
    """A device other than the CPU (and, for strict, other than the one most tests use)."""
    return "strict:device2" if other_device.startswith("strict") else other_device


def _uses_extension(backend, array) -> bool:
    return getattr(backend, "ext", None) is not None and array.device.id in backend.fused


@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_stays_on_the_inputs_device_and_matches_numpy(target, activation, bias):
    rng = np.random.default_rng(0)
    x, w, g = (rng.standard_normal(s).astype(np.float32) for s in ((5, 4), (3, 4), (5, 3)))
    b = rng.standard_normal(3).astype(np.float32) if bias else None
    xd, wd, gd = _on(target, x), _on(target, w), _on(target, g)
    bd = _on(target, b) if bias else None
    backend = backend_of(xd)
    pre, out, how = backend.linear(xd, wd, bd, activation)
    gpre, gb = backend.linear_grad(gd, pre, out, how, activation, bias, bias)
    if target == "cuda" and _uses_extension(backend, xd):
        assert how == "fused", "the extension's fused kernel was bypassed"
    for array in (pre, out, gpre) + ((gb,) if bias else ()):
        assert backend.device(array) == backend.device(xd)

    ref_pre, ref_out, ref_how = NUMPY.linear(x, w, b, activation)
    ref_gpre, ref_gb = NUMPY.linear_grad(g, ref_pre, ref_out, ref_how, activation, bias, bias)
    np.testing.assert_allclose(_host(out), ref_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_host(gpre), ref_gpre, rtol=1e-5, atol=1e-6)
    assert (gb is None) == (not bias)
    if bias:
        np.testing.assert_allclose(_host(gb), ref_gb, rtol=1e-5, atol=1e-6)


def test_softmax_cross_entropy_stays_on_the_inputs_device(target):
    rng = np.random.default_rng(1)
    logits, labels = rng.standard_normal((6, 5)).astype(np.float32), rng.integers(0, 5, 6)
    xd, yd = _on(target, logits), _on(target, labels)
    backend = backend_of(xd)
    rows, saved = backend.softmax_xent(xd, yd)
    scale = backend.full((6, 1), 0.5, np.float32, xd)
    grad = backend.softmax_xent_grad(saved, yd, scale)
    if target == "cuda" and _uses_extension(backend, xd):
        assert saved[0] == "fused", "the extension's fused kernel was bypassed"
    assert backend.device(rows) == backend.device(grad) == backend.device(xd)
    ref_rows, ref_saved = NUMPY.softmax_xent(logits, labels)
    np.testing.assert_allclose(_host(rows), ref_rows, rtol=1e-5, atol=1e-6)
    ref_grad = NUMPY.softmax_xent_grad(ref_saved, labels, np.full((6, 1), 0.5, np.float32))
    np.testing.assert_allclose(_host(grad), ref_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shapes", [((4,), (4, 3)), ((2, 5, 4), (4, 3)), ((3, 4), (2, 4, 3)), ((4,), (4,))])
def test_matmul_stays_on_the_inputs_device(target, shapes):
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    ad, bd = _on(target, a), _on(target, b)
    out = backend_of(ad).matmul(ad, bd)
    assert backend_of(out).device(out) == backend_of(ad).device(ad)
    np.testing.assert_allclose(_host(out), a @ b, rtol=1e-5, atol=1e-5)


def test_two_models_on_two_devices_train_side_by_side():
    """Neither device is the default one: nothing may be allocated anywhere but on each model's."""
    pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    losses = {}
    for device in ("strict:device1", "strict:device2"):
        tt.manual_seed(3)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
        opt = tt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = tt.randn(16, 4).to(device), tt.randint(0, 3, (16,)).to(device)
        for _ in range(3):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert all(p.device == device and p.grad.device == device for p in model.parameters())
        losses[device] = loss.item()
    assert losses["strict:device1"] == pytest.approx(losses["strict:device2"], rel=1e-6)

    layer = nn.Linear(4, 2).to("strict:device2")
    with pytest.raises(
        tt.DeviceError, match=r"linear: tensors are on different devices \(strict:device1 and strict:device2\)"
    ):
        layer(tt.randn(3, 4).to("strict:device1"))


@pytest.mark.parametrize("rows", [3, (1 << 15) + 1], ids=["blas-product", "reduction"])
def test_linear_bias_gradient_sums_inf_and_minus_inf_to_nan_quietly(rows):
    # The bias gradient is a column sum, as a BLAS product with ones for up to 2**15 rows and as
    # numpy's reduction beyond. A column holding inf and -inf sums to nan on either path, without
    # the floating-point warning that PyTorch never gives (the test suite turns warnings into errors).
    g = np.ones((rows, 2), np.float32)
    g[0, 0], g[1, 0] = np.inf, -np.inf
    _, gb = NUMPY.linear_grad(g, g, g, None, None, True, True)
    assert np.isnan(gb[0])
    assert gb[1] == rows
