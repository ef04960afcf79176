"""The extension's convolution, pooling and batch-norm statistics kernels, on a GPU (skipped, with the
reason, elsewhere): each against the CuPy path (the reference ``Backend`` bodies, run by a
``CupyBackend`` without the extension) and against PyTorch on the CPU, from host copies.

No matmul runs on CuPy here (a driver-only install has no CuPy cuBLAS): PyTorch on the host is the
oracle, and the CuPy path's bodies are copies, slices and sums.
"""

from __future__ import annotations

import numpy as np
import pytest

import tinytensor as tt
from tinytensor.cuda import extension
from tinytensor.windows import Window, window

pytestmark = pytest.mark.usefixtures("gpu_extension")

DTYPES = [np.float32, np.float64]

# (input height and width, kernel, stride, padding, dilation): odd sizes, rectangular kernels,
# strides above the kernel (gaps), padding on one axis only, dilation.
CONV_CASES = [
    ((7, 5), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((8, 8), (1, 1), (1, 1), (0, 0), (1, 1)),
    ((9, 6), (3, 2), (2, 1), (1, 0), (1, 1)),
    ((11, 13), (3, 3), (2, 3), (2, 1), (2, 1)),
    ((5, 5), (2, 2), (3, 3), (0, 0), (1, 1)),
    ((1, 9), (1, 3), (1, 2), (0, 1), (1, 3)),
    ((6, 7), (5, 4), (1, 2), (2, 2), (1, 1)),
]
# The same for pooling, with ceil_mode (PyTorch allows padding up to half the kernel).
POOL_CASES = [
    ((7, 5), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((7, 5), (2, 2), (2, 2), (0, 0), (1, 1), True),
    ((8, 9), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((8, 9), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((10, 7), (3, 2), (2, 3), (1, 0), (1, 1), True),
    ((5, 6), (3, 3), (1, 1), (1, 1), (1, 1), False),
    ((9, 9), (2, 3), (3, 2), (1, 1), (2, 2), True),  # dilated (max pooling only)
    ((2, 3), (2, 2), (1, 1), (1, 1), (1, 1), True),
]


def _host(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _tol(dtype, terms=1):
    """Rounding grows with the number of values a result sums."""
    value = 8 * max(terms, 1) * np.finfo(dtype).eps
    return dict(rtol=value, atol=value)


@pytest.fixture
def plain(cp):
    """The CuPy path: the library's CUDA backend without the extension, so each method runs its
    reference body on the array's device."""
    from tinytensor.cuda.backend import CupyBackend

    return CupyBackend(cp)


@pytest.fixture
def ours(cp):
    """The library's CUDA backend, which must use the extension's kernels on this GPU."""
    from tinytensor.devices import backend_of

    backend = backend_of(cp.zeros(1))
    if backend.ext is None or 0 not in backend.fused:
        pytest.fail(f"the extension is loaded but its kernels are not used on cuda:0 (fused: {set(backend.fused)})")
    return backend


def _conv_window(case) -> Window:
    (h, w), kernel, stride, padding, dilation = case
    return window("test", (h, w), kernel, stride, padding, dilation)


def _pool_window(case) -> Window:
    (h, w), kernel, stride, padding, dilation, ceil_mode = case
    return window("test", (h, w), kernel, stride, padding, dilation, ceil_mode)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_im2col_and_col2im_match_the_cupy_path_and_pytorch(cp, torch, plain, dtype, case):
    (h, w), kernel, stride, padding, dilation = case
    win = _conv_window(case)
    x_host = _host((2, 3, h, w), dtype)
    x = cp.asarray(x_host)

    cols = extension.try_im2col(x, win)
    assert cols.dtype == dtype and cols.shape == (2, 3, win.kh, win.kw, win.oh, win.ow)
    # a copy of the input's values: exactly the reference's, and torch's unfold in its layout
    np.testing.assert_array_equal(cp.asnumpy(cols), cp.asnumpy(plain.im2col(x, win)))
    unfold = torch.nn.functional.unfold(torch.from_numpy(x_host), kernel, dilation, padding, stride).numpy()
    np.testing.assert_array_equal(cp.asnumpy(cols).reshape(unfold.shape), unfold)
    filled = extension.try_im2col(x, win, -np.inf)
    np.testing.assert_array_equal(cp.asnumpy(filled), cp.asnumpy(plain.im2col(x, win, -np.inf)))

    g_host = _host(cols.shape, dtype, 1)
    g = cp.asarray(g_host)
    back = extension.try_col2im(g, win, h, w)
    assert back.dtype == dtype and back.shape == (2, 3, h, w)
    # the kernel sums the taps in the reference loop's order: the same bits
    np.testing.assert_array_equal(cp.asnumpy(back), cp.asnumpy(plain.col2im(g, win, h, w)))
    folded = torch.nn.functional.fold(
        torch.from_numpy(g_host.reshape(2, -1, win.oh * win.ow)), (h, w), kernel, dilation, padding, stride
    ).numpy()
    np.testing.assert_allclose(cp.asnumpy(back), folded, **_tol(dtype, win.kernel_area))


def test_col2im_is_deterministic_and_im2col_reads_strided_views(cp):
    win = _conv_window(CONV_CASES[3])
    base = cp.asarray(_host((2, 3, 11, 26), np.float32))
    x = base[:, :, :, ::2]  # not C-contiguous: copied first
    np.testing.assert_array_equal(
        cp.asnumpy(extension.try_im2col(x, win)), cp.asnumpy(extension.try_im2col(x.copy(), win))
    )
    g = cp.asarray(_host((2, 3, win.kh, win.kw, win.oh, win.ow), np.float32, 1))
    first = cp.asnumpy(extension.try_col2im(g, win, 11, 13))
    for _ in range(3):
        np.testing.assert_array_equal(cp.asnumpy(extension.try_col2im(g, win, 11, 13)), first)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool2d_and_its_gradient_match_the_cupy_path_and_pytorch(cp, torch, plain, dtype, case):
    (h, w), kernel, stride, padding, dilation, ceil_mode = case
    win = _pool_window(case)
    x_host = _host((2, 3, h, w), dtype)
    x = cp.asarray(x_host)
    out, argmax = extension.try_max_pool2d(x, win)
    assert out.dtype == dtype and argmax.dtype == np.int64 and out.shape == argmax.shape == (2, 3, win.oh, win.ow)

    ref_out, ref_argmax = plain.max_pool2d(x, win)
    np.testing.assert_array_equal(cp.asnumpy(out), cp.asnumpy(ref_out))
    np.testing.assert_array_equal(cp.asnumpy(argmax), cp.asnumpy(ref_argmax))
    tx = torch.from_numpy(x_host).requires_grad_(True)
    t_out, t_argmax = torch.nn.functional.max_pool2d(
        tx, kernel, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True
    )
    np.testing.assert_array_equal(cp.asnumpy(out), t_out.detach().numpy())
    np.testing.assert_array_equal(cp.asnumpy(argmax), t_argmax.numpy())

    g_host = _host(out.shape, dtype, 1)
    g = cp.asarray(g_host)
    grad = extension.try_max_pool2d_grad(g, argmax, h, w)
    assert grad.dtype == dtype and grad.shape == (2, 3, h, w)
    (t_grad,) = torch.autograd.grad(t_out, tx, torch.from_numpy(g_host))
    # overlapping windows may pick one position several times: a short sum, in any order
    tol = _tol(dtype, win.kernel_area)
    np.testing.assert_allclose(cp.asnumpy(grad), cp.asnumpy(plain.max_pool2d_grad(g, argmax, h, w)), **tol)
    np.testing.assert_allclose(cp.asnumpy(grad), t_grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool2d_follows_pytorch_on_ties_infinities_and_nan(cp, torch, dtype):
    """Equal values: the first position; padding never wins, even over -inf; a NaN always wins."""
    x_host = np.zeros((1, 2, 4, 4), dtype)
    x_host[0, 0, :2, :2] = -np.inf
    x_host[0, 1, 1, 2] = x_host[0, 1, 2, 2] = np.nan
    x = cp.asarray(x_host)
    for kernel, stride, padding in [((2, 2), (2, 2), (0, 0)), ((3, 3), (1, 1), (1, 1)), ((2, 2), (1, 1), (1, 1))]:
        win = window("test", (4, 4), kernel, stride, padding, (1, 1))
        out, argmax = extension.try_max_pool2d(x, win)
        t_out, t_argmax = torch.nn.functional.max_pool2d(
            torch.from_numpy(x_host), kernel, stride, padding, return_indices=True
        )
        np.testing.assert_array_equal(cp.asnumpy(out), t_out.numpy())
        np.testing.assert_array_equal(cp.asnumpy(argmax), t_argmax.numpy())


AVG_RULES = [(True, None), (False, None), (True, 3), (False, 5)]  # (count_include_pad, divisor_override)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("include_pad,divisor", AVG_RULES, ids=str)
@pytest.mark.parametrize("case", [c for c in POOL_CASES if c[4] == (1, 1)], ids=str)
def test_avg_pool2d_and_its_gradient_match_the_cupy_path_and_pytorch(
    cp, torch, plain, dtype, case, include_pad, divisor
):
    (h, w), kernel, stride, padding, _, ceil_mode = case
    win = _pool_window(case)
    x_host = _host((2, 3, h, w), dtype)
    x = cp.asarray(x_host)
    out = extension.try_avg_pool2d(x, win, include_pad, divisor)
    assert out.dtype == dtype and out.shape == (2, 3, win.oh, win.ow)
    tol = _tol(dtype, win.kernel_area)
    np.testing.assert_allclose(cp.asnumpy(out), cp.asnumpy(plain.avg_pool2d(x, win, include_pad, divisor)), **tol)
    tx = torch.from_numpy(x_host).requires_grad_(True)
    t_out = torch.nn.functional.avg_pool2d(
        tx, kernel, stride, padding, ceil_mode=ceil_mode, count_include_pad=include_pad, divisor_override=divisor
    )
    np.testing.assert_allclose(cp.asnumpy(out), t_out.detach().numpy(), **tol)

    g_host = _host(out.shape, dtype, 1)
    g = cp.asarray(g_host)
    grad = extension.try_avg_pool2d_grad(g, win, h, w, include_pad, divisor)
    assert grad.dtype == dtype and grad.shape == (2, 3, h, w)
    ref = plain.avg_pool2d_grad(g, win, h, w, include_pad, divisor)
    np.testing.assert_allclose(cp.asnumpy(grad), cp.asnumpy(ref), **tol)
    (t_grad,) = torch.autograd.grad(t_out, tx, torch.from_numpy(g_host))
    np.testing.assert_allclose(cp.asnumpy(grad), t_grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 7), (3, 2, 4, 5), (1, 1, 1, 1), (64, 8, 33, 17)], ids=str)
def test_batch_norm_stats_match_the_cupy_path_and_pytorch(cp, torch, plain, dtype, shape):
    # an offset far from zero: a one-pass E[x^2] - E[x]^2 in float32 would lose the variance
    x_host = (_host(shape, dtype) * 3 + 1000).astype(dtype)
    x = cp.asarray(x_host)
    mean, var = extension.try_batch_norm_stats(x)
    assert mean.dtype == var.dtype == dtype and mean.shape == var.shape == (shape[1],)
    axes = (0, *range(2, len(shape)))
    t_var, t_mean = torch.var_mean(torch.from_numpy(x_host.astype(np.float64)), dim=axes, unbiased=False)
    # summed in double: float32 results are the exact statistics rounded once; in float64 PyTorch's own
    # variance is the less exact one (off by some 1e-14 relative at this offset)
    tol = dict(rtol=4 * np.finfo(dtype).eps, atol=0) if dtype == np.float32 else dict(rtol=1e-12, atol=0)
    np.testing.assert_allclose(cp.asnumpy(mean), t_mean.numpy(), **tol)
    np.testing.assert_allclose(cp.asnumpy(var), t_var.numpy(), **tol)
    ref_mean, ref_var = plain.batch_norm_stats(x)
    loose = _tol(dtype, 64) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-4)  # CuPy sums in float32
    np.testing.assert_allclose(cp.asnumpy(mean), cp.asnumpy(ref_mean), **loose)
    np.testing.assert_allclose(cp.asnumpy(var), cp.asnumpy(ref_var), **loose)


def test_empty_and_unsupported_inputs_go_to_cupy(cp):
    """None (the caller then uses CuPy) for what the kernels do not take; empty outputs are fine."""
    win = _conv_window(CONV_CASES[0])
    assert extension.try_im2col(cp.zeros((2, 3, 7, 5), np.int64), win) is None
    assert extension.try_im2col(cp.zeros((3, 7, 5), np.float32), win) is None
    assert extension.try_batch_norm_stats(cp.zeros((0, 3, 2), np.float32)) is None
    assert extension.try_avg_pool2d(cp.zeros((1, 1, 9, 9), np.float32), _pool_window(POOL_CASES[6]), True, None) is None
    empty = extension.try_im2col(cp.zeros((0, 3, 7, 5), np.float32), win)
    assert empty.shape == (0, 3, win.kh, win.kw, win.oh, win.ow)
    grad = extension.try_max_pool2d_grad(cp.zeros((0, 2, 3, 3)), cp.zeros((0, 2, 3, 3), np.int64), 7, 7)
    assert grad.shape == (0, 2, 7, 7)


def test_the_binding_rejects_mismatched_arrays(cp):
    win = _conv_window(CONV_CASES[0])
    x = cp.zeros((2, 3, 7, 5), np.float32)
    with pytest.raises(ValueError, match="cols: expected shape"):
        extension.ops.im2col(x, cp.empty((2, 3, 3, 3, 7, 4), np.float32), tuple(win), 0.0, 0)
    with pytest.raises(TypeError, match="different dtypes"):
        extension.ops.im2col(x, cp.empty((2, 3, 3, 3, 7, 5), np.float64), tuple(win), 0.0, 0)
    with pytest.raises(TypeError, match="argmax: dtype"):
        extension.ops.max_pool2d_backward(x, cp.zeros(x.shape, np.int32), cp.empty_like(x), 0)
    with pytest.raises(ValueError, match="divisor: must not be zero"):
        extension.ops.avg_pool2d_forward(x, cp.empty((2, 3, 7, 5), np.float32), tuple(win), True, 0, 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_backend_runs_every_method_through_the_extension(cp, ext_spy, ours, dtype):
    x = cp.asarray(_host((2, 3, 9, 8), dtype))
    conv = window("test", (9, 8), (3, 3), (2, 1), (1, 1), (1, 1))
    pool = window("test", (9, 8), (3, 3), (2, 2), (1, 1), (1, 1), True)
    cols = ours.im2col(x, conv)
    ours.col2im(cols, conv, 9, 8)
    out, argmax = ours.max_pool2d(x, pool)
    ours.max_pool2d_grad(out, argmax, 9, 8)
    avg = ours.avg_pool2d(x, pool, True, None)
    ours.avg_pool2d_grad(avg, pool, 9, 8, False, None)
    ours.batch_norm_stats(x)
    assert ext_spy.counts() == {
        name: 1
        for name in (
            "im2col",
            "col2im",
            "max_pool2d_forward",
            "max_pool2d_backward",
            "avg_pool2d_forward",
            "avg_pool2d_backward",
            "batch_norm_stats",
        )
    }
    # each launched on the current stream (passed last)
    assert {args[-1] for _, args, _ in ext_spy.calls} == {cp.cuda.get_current_stream().ptr}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "stride,padding,dilation", [(1, 0, 1), (2, 1, 1), ((2, 1), (1, 2), (2, 1))], ids=["plain", "strided", "mixed"]
)
def test_conv2d_forward_and_backward_on_cuda_match_the_cpu(cp, ext_spy, dtype, stride, padding, dilation):
    """A whole conv2d through tinytensor: on cuda its windows go through the extension's im2col and
    col2im, and the output and every gradient equal the CPU's."""
    F = tt.nn.functional
    x_host, w_host, b_host = _host((3, 4, 11, 9), dtype, 1), _host((5, 4, 3, 2), dtype, 2), _host((5,), dtype, 3)
    g_host = None
    results = {}
    for device in ("cpu", "cuda"):
        x = tt.tensor(x_host, device=device, requires_grad=True)
        w = tt.tensor(w_host, device=device, requires_grad=True)
        b = tt.tensor(b_host, device=device, requires_grad=True)
        out = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation)
        if g_host is None:
            g_host = _host(tuple(out.shape), dtype, 4)
        out.backward(tt.tensor(g_host, device=device))
        results[device] = [t.numpy() for t in (out.detach(), x.grad, w.grad, b.grad)]
    counts = ext_spy.counts()
    assert counts["im2col"] >= 1 and counts["col2im"] >= 1, counts
    for name, cpu, gpu in zip(("out", "x.grad", "w.grad", "b.grad"), results["cpu"], results["cuda"]):
        # sums of up to a few hundred products that cancel: the rounding of the largest terms, absolute
        terms = 3 * 11 * 9 if name in ("w.grad", "b.grad") else 4 * 3 * 2
        value = 8 * terms * np.finfo(dtype).eps * max(float(np.abs(cpu).max()), 1.0)
        np.testing.assert_allclose(gpu, cpu, rtol=value, atol=value, err_msg=name)


def test_the_kernel_image_loads_every_new_kernel(cp):
    """kernel_image loads every kernel of the fatbin, these included: it succeeds on this GPU."""
    binary, ptx = extension.ops.kernel_image(cp.cuda.Device().id)
    assert binary > 0 or ptx > 0


@pytest.mark.parametrize("include_pad", [True, False])
def test_avg_pool2d_gradient_is_the_adjoint_of_the_forward(cp, include_pad):
    """<avg_pool(x), g> == <x, avg_pool_grad(g)> in float64, over every POOL_CASES shape without dilation."""
    for case in (c for c in POOL_CASES if c[4] == (1, 1)):
        (h, w) = case[0]
        win = _pool_window(case)
        x = cp.asarray(_host((1, 2, h, w), np.float64))
        g = cp.asarray(_host((1, 2, win.oh, win.ow), np.float64, 1))
        lhs = float((extension.try_avg_pool2d(x, win, include_pad, None) * g).sum())
        rhs = float((x * extension.try_avg_pool2d_grad(g, win, h, w, include_pad, None)).sum())
        assert abs(lhs - rhs) <= 1e-12 * max(1.0, abs(lhs)), (case, lhs, rhs)
