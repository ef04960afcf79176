"""Work queued on a non-blocking CuPy stream: the library and the extension launch on the current
stream, so results read after that stream is synchronized are right.

Each test first queues a kernel that spins for a while on the stream. A launch that went to another
stream (the legacy default stream does not wait for a non-blocking one) would then run before its
inputs exist, and the values would be wrong, not merely late.
"""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn, optim
from tinytensor.cuda import extension

SPIN_CYCLES = 200_000_000  # about 0.1 s at a GPU's clock: long enough for a misplaced launch to overtake


def _spin(cp):
    """Queue one thread that busy-waits on the current stream (NVRTC compiles it; no CUDA library needed)."""
    kernel = cp.RawKernel(
        r"""
        extern "C" __global__ void spin(long long cycles) {
            long long start = clock64();
            while (clock64() - start < cycles) {}
        }""",
        "spin",
    )
    kernel((1,), (1,), (np.int64(SPIN_CYCLES),))


def _train(device, steps=2):
    """Loss and parameters after ``steps`` SGD-with-momentum steps of a small MLP, all on ``device``."""
    tt.manual_seed(0)
    rng = np.random.default_rng(0)
    x_host, y_host = rng.standard_normal((64, 20)).astype(np.float32), rng.integers(0, 5, 64)
    model = nn.Sequential(nn.Linear(20, 32), nn.GELU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 5)).to(device)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = tt.tensor(x_host, device=device), tt.tensor(y_host, device=device)
    losses = []
    for _ in range(steps):  # the second step reads the momentum buffers the first one wrote
        opt.zero_grad()
        loss = nn.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses, list(model.parameters())


def test_training_steps_on_a_non_blocking_stream_match_the_cpu(cp):
    losses_cpu, params_cpu = _train("cpu")
    with cp.cuda.Stream(non_blocking=True) as stream:
        _spin(cp)
        losses, params = _train("cuda")
    stream.synchronize()
    # read on the default stream, after the synchronize: everything must have been queued on `stream`
    for got, want in zip(losses, losses_cpu):
        np.testing.assert_allclose(cp.asnumpy(got._data), want.numpy(), rtol=1e-5)
    for got, want in zip(params, params_cpu):
        np.testing.assert_allclose(cp.asnumpy(got._data), want.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(cp.asnumpy(got.grad), want.grad, rtol=1e-4, atol=1e-5)


def test_the_extension_launches_on_the_current_stream(cp, ext_spy):
    with cp.cuda.Stream(non_blocking=True) as stream:
        _train("cuda", steps=1)
    stream.synchronize()
    assert set(ext_spy.counts()) >= {"matmul", "bias_act_forward", "softmax_xent_backward"}, ext_spy.counts()
    assert ext_spy.streams() == {stream.ptr}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_big_extension_matmul_on_a_non_blocking_stream(cp, gpu_extension, dtype):
    n = 2048
    rng = np.random.default_rng(0)
    a_host, b_host = rng.standard_normal((n, n)).astype(dtype), rng.standard_normal((n, n)).astype(dtype)
    a_src, b_src = cp.asarray(a_host), cp.asarray(b_host)
    a, b = cp.zeros((n, n), dtype), cp.zeros((n, n), dtype)
    cp.cuda.Device().synchronize()
    with cp.cuda.Stream(non_blocking=True) as stream:
        _spin(cp)
        a[...] = a_src  # the operands are filled only after the spin, on this stream
        b[...] = b_src
        out = extension.try_matmul(a, b)
    stream.synchronize()
    ref = a_host.astype(np.float64) @ b_host.astype(np.float64)
    tol = 8 * n * np.finfo(dtype).eps
    np.testing.assert_allclose(cp.asnumpy(out), ref, rtol=tol, atol=tol)
