"""The extension's kernels against numpy on the host, on a GPU (skipped, with the reason, elsewhere).

Every reference is computed with numpy in float64 from host copies of the inputs. The driver-only
pytinytensor-cu12 install has no CuPy cuBLAS (the extension bundles its own), so nothing here may
call cp.matmul, ``@`` on CuPy arrays, cupy.linalg, dot, tensordot or einsum.
"""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor.activation_math import ACTIVATIONS
from tinytensor.cuda import extension
from tinytensor.nn import functional as F
from tinytensor.numpy_backend import NUMPY

pytestmark = pytest.mark.usefixtures("gpu_extension")

DTYPES = [np.float32, np.float64]


def _host(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _tol(dtype, terms=1, scale=1.0):
    """Rounding grows with the terms each value sums and with the size of the values involved."""
    value = 8 * max(terms, 1) * np.finfo(dtype).eps * max(scale, 1.0)
    return dict(rtol=value, atol=value)


def _check(cp, ours, ref, dtype, **tol):
    """``ours``, a CuPy array of ``dtype``, against a float64 host reference."""
    assert isinstance(ours, cp.ndarray), type(ours)
    assert ours.dtype == dtype and ours.shape == ref.shape, (ours.dtype, ours.shape, ref.shape)
    np.testing.assert_allclose(cp.asnumpy(ours), ref, **_tol(dtype, **tol))


def _f64(cp, a):
    return cp.asnumpy(a).astype(np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 13, 5), (128, 64, 256), (300, 257, 129)])
def test_cublas_matmul_matches_numpy(cp, ext_spy, dtype, trans_a, trans_b, m, k, n):
    a_host = _host((k, m) if trans_a else (m, k), dtype, 1)
    b_host = _host((n, k) if trans_b else (k, n), dtype, 2)
    a, b = cp.asarray(a_host), cp.asarray(b_host)
    a = a.T if trans_a else a  # F-contiguous views exercise the transpose flags
    b = b.T if trans_b else b
    ours = extension.try_matmul(a, b)
    _check(cp, ours, _f64(cp, a) @ _f64(cp, b), dtype, terms=k)
    # one GEMM, given the views themselves: cuBLAS reads them in place, no copy is made
    ((name, args, _),) = ext_spy.calls
    assert name == "matmul" and args[0] is a and args[1] is b


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
def test_every_float_matmul_goes_through_the_extension(cp, ext_spy, shape_a, shape_b):
    a, b = cp.asarray(_host(shape_a, np.float32, 1)), cp.asarray(_host(shape_b, np.float32, 2))
    ref = np.matmul(_f64(cp, a), _f64(cp, b))
    _check(cp, extension.try_matmul(a, b), ref, np.float32, terms=shape_a[-1])
    launches = ext_spy.counts()["matmul"] + ext_spy.counts()["matmul_batched"]
    # one GEMM (plain or strided batched) for any rank; an empty product is zeros made by the bridge
    assert launches == (1 if ref.size and shape_a[-1] else 0), ext_spy.counts()


def test_non_contiguous_operands_are_copied_not_refused(cp):
    a = cp.asarray(_host((6, 8), np.float64))[:, ::2]
    b = cp.asarray(_host((4, 3), np.float64, 1))
    _check(cp, extension.try_matmul(a, b), _f64(cp, a) @ _f64(cp, b), np.float64, terms=4)


def test_the_gpu_path_never_loads_cupys_own_cublas():
    """The cu12 wheel ships one cuBLAS (the extension's); CuPy's cuBLAS module must stay unloaded
    through a whole training step: forward, every float matmul, backward, clipping, optimizer."""
    import subprocess
    import sys

    script = (
        "import sys, numpy as np, tinytensor as tt\n"
        "from tinytensor import nn\n"
        "m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to('cuda')\n"
        "x = tt.randn(5, 8, device='cuda', requires_grad=True)\n"
        "y = tt.tensor(np.array([0, 1, 2, 1, 0]), device='cuda')\n"
        "loss = nn.cross_entropy(m(x), y) + (x @ x.T).sum() + (tt.randn(2, 5, 8, device='cuda') @ x.T).mean()\n"
        "loss = loss + (x[0] @ x[1])\n"
        "loss.backward()\n"
        "nn.utils.clip_grad_norm_(m.parameters(), 1.0)\n"  # a training step's other GPU work
        "tt.optim.SGD(m.parameters(), lr=0.1, momentum=0.9).step()\n"
        "assert 'cupy_backends.cuda.libs.cublas' not in sys.modules, 'CuPy loaded its own cuBLAS'\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_linear_matches_numpy(cp, dtype, activation, bias):
    x, w = cp.asarray(_host((33, 20), dtype, 1)), cp.asarray(_host((17, 20), dtype, 2))
    b = cp.asarray(_host((17,), dtype, 3)) if bias else None
    pre, out = extension.try_linear_forward(x, w, b, activation)
    ref_pre = _f64(cp, x) @ _f64(cp, w).T + (_f64(cp, b) if bias else 0)
    ref_out = {
        None: ref_pre,
        "relu": np.maximum(ref_pre, 0),
        "gelu": ACTIVATIONS["gelu"].forward(NUMPY, ref_pre, False),
    }[activation]
    _check(cp, pre, ref_pre, dtype, terms=21)
    _check(cp, out, ref_out, dtype, terms=21)

    # backward from the kernel's own pre-activation, so forward rounding cannot move a relu kink
    g = cp.asarray(_host((33, 17), dtype, 4))
    gpre, gbias = extension.linear_backward(g, pre, out, bias, activation)
    g_host, pre_host = _f64(cp, g), _f64(cp, pre)
    ref_gpre = {
        None: g_host,
        "relu": g_host * (pre_host > 0),
        "gelu": ACTIVATIONS["gelu"].grad(NUMPY, g_host, pre_host, None),
    }[activation]
    _check(cp, gpre, ref_gpre, dtype, terms=4, scale=np.abs(g_host).max())
    if bias:
        _check(cp, gbias, ref_gpre.sum(axis=0), dtype, terms=33, scale=np.abs(ref_gpre).max())
    else:
        assert gbias is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,c", [(1, 1), (5, 3), (64, 10), (8, 1500)])
def test_fused_softmax_cross_entropy_matches_numpy(cp, dtype, n, c):
    logits_host = _host((n, c), dtype) * 4
    labels_host = np.random.default_rng(1).integers(0, c, n)
    logits, labels = cp.asarray(logits_host), cp.asarray(labels_host)
    rows, probs = extension.try_softmax_xent_forward(logits, labels)

    x = logits_host.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m
    # a row max and a sum over the row, then exp or log: a few roundings of values as large as the logits
    tol = dict(terms=8, scale=np.abs(x).max())
    _check(cp, rows, lse[:, 0] - x[np.arange(n), labels_host], dtype, **tol)
    _check(cp, probs, np.exp(x - lse), dtype, **tol)

    scale_host = _host((n,), dtype, 5)
    grad = extension.softmax_xent_backward(probs, labels, cp.asarray(scale_host))
    onehot = np.eye(c)[labels_host]
    ref_grad = (_f64(cp, probs) - onehot) * scale_host.astype(np.float64)[:, None]  # from the kernel's probs
    _check(cp, grad, ref_grad, dtype, terms=2, scale=np.abs(scale_host).max())


def test_bad_label_gives_nan_in_the_kernel_and_an_error_in_the_library(cp):
    logits = cp.asarray(_host((3, 4), np.float32))
    rows, _ = extension.try_softmax_xent_forward(logits, cp.asarray([0, 7, 1]))
    rows = cp.asnumpy(rows)
    assert np.isnan(rows[1]) and not np.isnan(rows[0]) and not np.isnan(rows[2])
    with pytest.raises(IndexError, match="out of range"):
        F.cross_entropy(tt.tensor(logits), tt.tensor(cp.asarray([0, 7, 1])))


def test_labels_that_are_a_strided_view_reach_the_fused_loss(cp):
    """The kernels read labels as one contiguous int64 row: a view such as y[::2] is copied first."""
    logits_host = _host((4, 5), np.float32)
    labels_host = np.array([[0, 9], [3, 9], [4, 9], [1, 9]])  # the class is column 0
    cpu = F.cross_entropy(tt.tensor(logits_host, requires_grad=True), tt.tensor(labels_host[:, 0]))
    logits = tt.tensor(logits_host, device="cuda", requires_grad=True)
    gpu = F.cross_entropy(logits, tt.tensor(cp.asarray(labels_host))[:, 0])
    gpu.backward()
    cpu_logits = tt.tensor(logits_host, requires_grad=True)
    F.cross_entropy(cpu_logits, tt.tensor(labels_host[:, 0])).backward()
    np.testing.assert_allclose(gpu.item(), cpu.item(), rtol=1e-6)
    np.testing.assert_allclose(cp.asnumpy(logits.grad), cpu_logits.grad, rtol=1e-5, atol=1e-7)


def test_fused_linear_backward_of_no_rows_gives_a_zero_bias_gradient(cp):
    x = cp.zeros((0, 6), np.float32)
    w, b = cp.asarray(_host((4, 6), np.float32)), cp.asarray(_host((4,), np.float32, 1))
    pre, out = extension.try_linear_forward(x, w, b, "relu")
    cp.empty((4,), np.float32).fill(np.nan)  # leave garbage in the pool where an unwritten array could land
    _, gbias = extension.linear_backward(cp.zeros((0, 4), np.float32), pre, out, True, "relu")
    np.testing.assert_array_equal(cp.asnumpy(gbias), np.zeros(4, np.float32))


def test_binding_rejects_bad_cupy_arrays(cp):
    a = cp.asarray(_host((4, 6), np.float32))
    with pytest.raises(ValueError, match="C- or F-contiguous"):
        extension.ops.matmul(a[:, ::2], cp.asarray(_host((3, 2), np.float32)), cp.empty((4, 2), np.float32), 0)
    with pytest.raises(ValueError, match="must be C-contiguous"):
        extension.ops.bias_act_forward(a.T, None, cp.empty((6, 4), np.float32), "relu", 0)
    with pytest.raises(TypeError, match="different dtypes"):
        extension.ops.matmul(a, cp.asarray(_host((6, 2), np.float64)), cp.empty((4, 2), np.float32), 0)


@pytest.mark.parametrize("act", [tt.nn.GELU, tt.nn.ReLU])
def test_library_uses_the_extension_for_linear_and_loss_on_gpu(cp, ext_spy, act):
    """One training step of Linear, activation, Linear and cross_entropy on cuda: every matmul, both
    bias + activation epilogues and the loss run in the extension, and the results are the CPU's."""
    tt.manual_seed(0)
    model = tt.nn.Sequential(tt.nn.Linear(20, 30), act(), tt.nn.Linear(30, 5))
    x = tt.randn(16, 20, requires_grad=True)
    y = tt.tensor(np.random.default_rng(0).integers(0, 5, 16))
    loss_cpu = F.cross_entropy(model(x), y)
    loss_cpu.backward()
    grads_cpu = [p.grad.copy() for p in model.parameters()] + [x.grad.copy()]

    model.zero_grad()
    model.to("cuda")
    xg = x.detach().to("cuda").requires_grad_(True)
    ext_spy.calls.clear()  # moving the model launched nothing, but count only the step
    loss_gpu = F.cross_entropy(model(xg), y.to("cuda"))
    loss_gpu.backward()

    assert ext_spy.counts() == {
        "matmul": 6,  # forward x @ w.T per layer; backward grad @ w and grad.T @ input per layer
        "bias_act_forward": 2,  # per Linear: bias (+ activation on the first) in one kernel
        "bias_act_backward": 2,
        "softmax_xent_forward": 1,
        "softmax_xent_backward": 1,
    }
    np.testing.assert_allclose(loss_gpu.item(), loss_cpu.item(), rtol=1e-5)
    for g_cpu, p in zip(grads_cpu, [*model.parameters(), xg]):
        np.testing.assert_allclose(cp.asnumpy(p.grad), g_cpu, rtol=1e-4, atol=1e-5)
