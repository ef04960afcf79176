"""The extension's kernels against the CuPy path, on a GPU (skipped, with the reason, elsewhere)."""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor.backends import cuda_ext
from tinytensor.nn import functional as F

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.fixture
def cp(gpu_extension):
    import cupy

    return cupy


def _rand(cp, shape, dtype, seed=0):
    return cp.asarray(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 13, 5), (128, 64, 256), (300, 257, 129)])
def test_cublas_matmul_matches_cupy(cp, dtype, trans_a, trans_b, m, k, n):
    a = _rand(cp, (k, m) if trans_a else (m, k), dtype, 1)
    b = _rand(cp, (n, k) if trans_b else (k, n), dtype, 2)
    a = a.T if trans_a else a  # F-contiguous views exercise the transpose flags
    b = b.T if trans_b else b
    ours = cuda_ext.try_matmul(a, b)
    assert ours is not None
    cp.testing.assert_allclose(ours, cp.matmul(a, b), **TOL[dtype])


@pytest.mark.parametrize(
    "shape_a,shape_b",
    [
        ((4,), (4, 5)),  # 1-D operands, as numpy promotes them
        ((3, 4), (4,)),
        ((4,), (4,)),
        ((2, 3, 4), (4, 5)),  # a batch of rows times one matrix
        ((3, 4), (2, 4, 5)),  # one matrix times a batch (zero-stride operand)
        ((2, 3, 4), (2, 4, 5)),
        ((2, 1, 3, 4), (5, 4, 2)),  # broadcast batch axes
        ((0, 3), (3, 2)),  # empty
        ((2, 0), (0, 3)),  # zero inner size: zeros
    ],
)
def test_every_float_matmul_goes_through_the_extension(cp, shape_a, shape_b):
    a, b = _rand(cp, shape_a, np.float32, 1), _rand(cp, shape_b, np.float32, 2)
    ours = cuda_ext.try_matmul(a, b)
    assert ours is not None and ours.shape == cp.matmul(a, b).shape
    cp.testing.assert_allclose(ours, cp.matmul(a, b), rtol=1e-5, atol=1e-5)


def test_non_contiguous_operands_are_copied_not_refused(cp):
    a = _rand(cp, (6, 8), np.float64)[:, ::2]
    b = _rand(cp, (4, 3), np.float64, 1)
    cp.testing.assert_allclose(cuda_ext.try_matmul(a, b), a @ b, rtol=1e-12)


def test_the_gpu_path_never_loads_cupys_own_cublas(gpu_extension):
    """The cu12 wheel ships one cuBLAS (the extension's); CuPy's cuBLAS module must stay unloaded."""
    import subprocess
    import sys

    script = (
        "import sys, numpy as np, tinytensor as tt\n"
        "from tinytensor import nn\n"
        "m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to('cuda')\n"
        "x = tt.randn(5, 8, device='cuda', requires_grad=True)\n"
        "y = tt.Tensor(np.array([0, 1, 2, 1, 0]), device='cuda')\n"
        "loss = nn.cross_entropy(m(x), y) + (x @ x.T).sum() + (tt.randn(2, 5, 8, device='cuda') @ x.T).mean()\n"
        "loss = loss + (x[0] @ x[1])\n"
        "loss.backward()\n"
        "assert 'cupy_backends.cuda.libs.cublas' not in sys.modules, 'CuPy loaded its own cuBLAS'\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_matmul_on_a_non_default_stream(cp):
    a, b = _rand(cp, (64, 32), np.float32), _rand(cp, (32, 16), np.float32, 1)
    with cp.cuda.Stream(non_blocking=True) as stream:
        ours = cuda_ext.try_matmul(a, b)
        stream.synchronize()
    cp.testing.assert_allclose(ours, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_linear_matches_cupy(cp, dtype, activation, bias):
    x, w = _rand(cp, (33, 20), dtype, 1), _rand(cp, (17, 20), dtype, 2)
    b = _rand(cp, (17,), dtype, 3) if bias else None
    pre, out = cuda_ext.try_linear_forward(x, w, b, activation)
    ref_pre = x @ w.T + (b if bias else 0)
    from tinytensor.ops.elementwise import gelu_forward, gelu_grad

    ref_out = {None: ref_pre, "relu": cp.maximum(ref_pre, 0), "gelu": gelu_forward(cp, ref_pre)}[activation]
    cp.testing.assert_allclose(pre, ref_pre, **TOL[dtype])
    cp.testing.assert_allclose(out, ref_out, **TOL[dtype])
    g = _rand(cp, (33, 17), dtype, 4)
    gpre, gbias = cuda_ext.linear_backward(g, pre, out, bias, activation)
    ref_gpre = {None: g, "relu": g * (ref_pre > 0), "gelu": gelu_grad(cp, g, ref_pre)}[activation]
    cp.testing.assert_allclose(gpre, ref_gpre, **TOL[dtype])
    if bias:
        cp.testing.assert_allclose(gbias, ref_gpre.sum(axis=0), rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)
    else:
        assert gbias is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,c", [(1, 1), (5, 3), (64, 10), (8, 1500)])
def test_fused_softmax_cross_entropy_matches_cupy(cp, dtype, n, c):
    logits = _rand(cp, (n, c), dtype) * 4
    labels = cp.asarray(np.random.default_rng(1).integers(0, c, n))
    rows, probs = cuda_ext.try_softmax_xent_forward(logits, labels)
    m = logits.max(axis=1, keepdims=True)
    lse = cp.log(cp.exp(logits - m).sum(axis=1, keepdims=True)) + m
    ref_rows = lse[:, 0] - logits[cp.arange(n), labels]
    cp.testing.assert_allclose(rows, ref_rows, **TOL[dtype])
    cp.testing.assert_allclose(probs, cp.exp(logits - lse), **TOL[dtype])
    scale = _rand(cp, (n,), dtype, 5)
    grad = cuda_ext.softmax_xent_backward(probs, labels, scale)
    onehot = (cp.arange(c)[None, :] == labels[:, None]).astype(dtype)
    cp.testing.assert_allclose(grad, (cp.exp(logits - lse) - onehot) * scale[:, None], **TOL[dtype])


def test_bad_label_gives_nan_in_the_kernel_and_an_error_in_the_library(cp):
    logits = _rand(cp, (3, 4), np.float32)
    rows, _ = cuda_ext.try_softmax_xent_forward(logits, cp.asarray([0, 7, 1]))
    assert bool(cp.isnan(rows[1])) and not bool(cp.isnan(rows[0]))
    with pytest.raises(IndexError, match="out of range"):
        F.cross_entropy(tt.Tensor(logits), tt.Tensor(cp.asarray([0, 7, 1])))


def test_binding_rejects_bad_cupy_arrays(cp):
    a = _rand(cp, (4, 6), np.float32)
    with pytest.raises(ValueError, match="C- or F-contiguous"):
        cuda_ext.ops.matmul(a[:, ::2], _rand(cp, (3, 2), np.float32), cp.empty((4, 2), np.float32), 0)
    with pytest.raises(ValueError, match="must be C-contiguous"):
        cuda_ext.ops.bias_act_forward(a.T, None, cp.empty((6, 4), np.float32), "relu", 0)
    with pytest.raises(TypeError, match="different dtypes"):
        cuda_ext.ops.matmul(a, _rand(cp, (6, 2), np.float64), cp.empty((4, 2), np.float32), 0)


def test_library_uses_the_extension_for_linear_and_loss_on_gpu(cp):
    tt.manual_seed(0)
    model = tt.nn.Sequential(tt.nn.Linear(20, 30), tt.nn.GELU(), tt.nn.Linear(30, 5))
    x = tt.randn(16, 20)
    y = tt.Tensor(np.random.default_rng(0).integers(0, 5, 16))
    loss_cpu = F.cross_entropy(model(x), y)
    loss_cpu.backward()
    grads_cpu = [p.grad.copy() for p in model.parameters()]
    model.zero_grad()
    model.to("cuda")
    xg, yg = x.to("cuda"), y.to("cuda")
    assert cuda_ext.try_linear_forward(xg.data, model[0].weight.data, model[0].bias.data, "gelu") is not None
    loss_gpu = F.cross_entropy(model(xg), yg)
    loss_gpu.backward()
    assert abs(loss_gpu.item() - loss_cpu.item()) < 1e-5
    for g_cpu, p in zip(grads_cpu, model.parameters()):
        np.testing.assert_allclose(cp.asnumpy(p.grad), g_cpu, rtol=1e-4, atol=1e-5)
