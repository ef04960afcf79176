"""Pooling, padding, resizing and channel dropout beyond the op table (op_cases.py, which checks
values and gradients against PyTorch): the max pools' indices, exactly as PyTorch's; integer max
pooling; bad input, against PyTorch's errors; and dropout2d's randomness.

Errors: where PyTorch raises ValueError, TypeError or NotImplementedError tinytensor raises the
same; where PyTorch raises a bare RuntimeError for a bad size or shape, tinytensor raises
ValueError (``tt.ShapeError`` for shapes), as its other ops do. The key words are PyTorch's.
"""

import re
import warnings

import numpy as np
import pytest

import tinytensor as tt
from tinytensor.nn import functional as F


def _x(*shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ----------------------------------------------------------------------------- indices, as PyTorch's
INDEXED = [
    ("max_pool2d", dict(kernel_size=2), (2, 2, 5, 6)),
    ("max_pool2d", dict(kernel_size=3, stride=2, padding=1), (1, 3, 7, 6)),
    ("max_pool2d", dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(2, 1)), (1, 2, 6, 7)),
    ("max_pool2d", dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True), (2, 2, 6, 7)),
    ("max_pool2d", dict(kernel_size=2, stride=1), (2, 5, 4)),  # unbatched
    ("max_pool1d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), (2, 3, 8)),
    ("max_pool1d", dict(kernel_size=2, dilation=2), (3, 7)),  # unbatched
    ("adaptive_max_pool2d", dict(output_size=(3, 2)), (2, 2, 5, 7)),
    ("adaptive_max_pool2d", dict(output_size=2), (1, 2, 4, 6)),  # even windows: the plain pool
    ("adaptive_max_pool2d", dict(output_size=(None, 7)), (2, 3, 5)),  # unbatched, windows overlap
    ("adaptive_max_pool1d", dict(output_size=3), (2, 2, 7)),
    ("adaptive_max_pool1d", dict(output_size=4), (3, 9)),
]


@pytest.mark.parametrize("fn,kwargs,shape", INDEXED, ids=[f"{f}-{k}" for k, (f, _, _) in enumerate(INDEXED)])
def test_max_pool_indices_are_pytorchs(torch, fn, kwargs, shape, device):
    x = _x(*shape)
    out, idx = getattr(F, fn)(tt.tensor(x, device=device), **kwargs, return_indices=True)
    ref, ref_idx = getattr(torch.nn.functional, fn)(torch.tensor(x), **kwargs, return_indices=True)
    assert idx.numpy().dtype == np.int64 and idx.shape == tuple(ref_idx.shape) and idx.device == out.device
    np.testing.assert_array_equal(idx.numpy(), ref_idx.numpy())
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    assert not idx.requires_grad


def test_max_pool_result_forms(torch):
    x = tt.tensor(_x(1, 1, 4, 4), requires_grad=True)
    assert isinstance(F.max_pool2d(x, 2), tt.Tensor)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    assert out.requires_grad and out.shape == idx.shape == (1, 1, 2, 2)
    # the module-level form takes arrays, as the other nn.functional ops
    np.testing.assert_array_equal(F.max_pool2d(x.numpy(), 2).numpy(), out.numpy())
    # stride=[] is PyTorch's "the kernel size"
    assert F.max_pool2d(x, 2, stride=[]).shape == tuple(
        torch.nn.functional.max_pool2d(torch.zeros(1, 1, 4, 4), 2, []).shape
    )


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_max_pool_of_integers_is_pytorchs(torch, dtype):
    x = np.random.default_rng(0).integers(-50, 50, (2, 2, 5, 6)).astype(dtype)
    out, idx = F.max_pool2d(tt.tensor(x), 3, 2, 1, ceil_mode=True, return_indices=True)
    ref, ref_idx = torch.nn.functional.max_pool2d(torch.tensor(x), 3, 2, 1, ceil_mode=True, return_indices=True)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    # among equal integers the first, row by row, wins in both
    np.testing.assert_array_equal(idx.numpy(), ref_idx.numpy())


def test_overlapping_windows_add_their_gradients(torch):
    x = _x(1, 1, 3, 3)
    x[0, 0, 1, 1] = 10.0  # the centre is every 2x2 window's maximum
    t = tt.tensor(x, requires_grad=True)
    F.max_pool2d(t, 2, stride=1).sum().backward()
    expected = np.zeros((1, 1, 3, 3))
    expected[0, 0, 1, 1] = 4.0
    np.testing.assert_array_equal(t.grad.numpy(), expected)


# ------------------------------------------------------ max pooling's corner cases, as PyTorch's
# The numpy backend pools windows of up to numpy_backend._POOL_STEPS positions in whole-array steps
# per position and larger ones along a copied axis ("copied" forces that path here); each against
# PyTorch's values (a zero's sign included), indices and gradients.
POOL_WINDOWS = [
    dict(kernel_size=2),  # LeNet's: the windows tile the input
    dict(kernel_size=3, stride=2, padding=1),  # overlapping, padded
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(2, 1)),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),  # the last windows reach past the input
    dict(kernel_size=(1, 3), stride=(1, 3), ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(3, 2), dilation=(1, 2)),  # dilated windows that do not overlap
    dict(kernel_size=9, stride=1, padding=4),  # 81 positions
]
POOL_VALUES = ["normal", "ties", "signed-zeros", "nan", "-inf", "all--inf"]


def _pool_input(kind, dtype, shape=(2, 3, 7, 8), seed=0):
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.standard_normal(shape).astype(dtype)
    x = rng.integers(-1, 2, shape).astype(dtype)  # three values: most windows tie
    if kind == "signed-zeros":
        x = np.where(rng.random(shape) < 0.5, -0.0, 0.0).astype(dtype)
    elif kind == "nan":
        x[rng.random(shape) < 0.3] = np.nan
    elif kind == "-inf":
        x[rng.random(shape) < 0.6] = -np.inf
    elif kind == "all--inf":
        x[...] = -np.inf  # every position ties with the padding
    return x


@pytest.fixture(params=["steps", "copied", "portable"])
def pool_path(request, monkeypatch):
    """The numpy backend's two forms, and the portable one that CuPy without the extension and the
    strict backend run (here on numpy arrays)."""
    if request.param == "copied":
        monkeypatch.setattr("tinytensor.numpy_backend._POOL_STEPS", 0)
    elif request.param == "portable":
        from tinytensor.backend import Backend
        from tinytensor.numpy_backend import NumpyBackend

        monkeypatch.setattr(NumpyBackend, "max_pool2d", Backend.max_pool2d)
    return request.param


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", POOL_VALUES)
@pytest.mark.parametrize("kwargs", POOL_WINDOWS, ids=[str(k) for k in range(len(POOL_WINDOWS))])
def test_max_pool_corner_cases_are_pytorchs(torch, pool_path, kwargs, kind, dtype):
    if pool_path == "portable" and kind in ("nan", "signed-zeros"):
        pytest.skip("the portable form's index is the first NaN (PyTorch's the last), its zero either sign")
    x = _pool_input(kind, dtype)
    t = tt.tensor(x, requires_grad=True)
    out, idx = F.max_pool2d(t, **kwargs, return_indices=True)
    ref_x = torch.tensor(x, requires_grad=True)
    ref, ref_idx = torch.nn.functional.max_pool2d(ref_x, **kwargs, return_indices=True)
    assert out.numpy().dtype == np.dtype(dtype) and idx.numpy().dtype == np.int64
    np.testing.assert_array_equal(idx.numpy(), ref_idx.numpy())
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())  # NaN where PyTorch has NaN
    np.testing.assert_array_equal(np.signbit(out.numpy()), np.signbit(ref.detach().numpy()))
    # each window's gradient goes to its maximum; where windows overlap, the gradients add up
    g = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
    out.backward(tt.tensor(g))
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(t.grad.numpy(), ref_x.grad.numpy(), rtol=1e-6 if dtype == "float32" else 1e-13)


def test_max_pool_tie_and_nan_rules():
    """Among equal values the first, row by row, wins; a NaN is its window's maximum, and of
    several NaNs the last wins (PyTorch's kernels: a later value wins where it is greater or NaN);
    a window that starts in the padding never picks the padding, even where all it holds is -inf."""
    nan, inf = np.nan, np.inf
    x = np.array([[[[1.0, 3.0, nan, 5.0], [3.0, 3.0, 5.0, nan]]]])
    out, idx = F.max_pool2d(tt.tensor(x), 2, return_indices=True)
    assert idx.tolist() == [[[[1, 7]]]] and out.numpy()[0, 0, 0, 0] == 3.0 and np.isnan(out.numpy()[0, 0, 0, 1])
    out, idx = F.max_pool2d(tt.tensor(np.full((1, 1, 3, 3), -inf)), 2, stride=2, padding=1, return_indices=True)
    assert idx.tolist() == [[[[0, 1], [3, 4]]]] and out.tolist() == [[[[-inf, -inf], [-inf, -inf]]]]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
@pytest.mark.parametrize("kwargs", POOL_WINDOWS, ids=[str(k) for k in range(len(POOL_WINDOWS))])
def test_max_pool_of_integers_at_their_limits_is_pytorchs(torch, pool_path, kwargs, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(2)
    x = rng.integers(0, 3, (2, 2, 7, 8)).astype(dtype)
    x[rng.random(x.shape) < 0.5] = info.min  # as low as the padding: ties with it
    x[0, 0] = info.min  # a whole plane of them
    x[1, 1, :2] = info.max
    out, idx = F.max_pool2d(tt.tensor(x), **kwargs, return_indices=True)
    ref, ref_idx = torch.nn.functional.max_pool2d(torch.tensor(x), **kwargs, return_indices=True)
    assert out.numpy().dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    np.testing.assert_array_equal(idx.numpy(), ref_idx.numpy())


def test_empty_batch_pools_to_an_empty_batch(torch):
    for fn, args in [("max_pool2d", (2,)), ("avg_pool2d", (2,)), ("adaptive_avg_pool2d", ((3, 2),))]:
        out = getattr(F, fn)(tt.zeros(0, 2, 5, 5), *args)
        ref = getattr(torch.nn.functional, fn)(torch.zeros(0, 2, 5, 5), *args)
        assert out.shape == tuple(ref.shape), fn
    assert F.adaptive_max_pool2d(tt.zeros(2, 3, 4, 5), (0, 2)).shape == (2, 3, 0, 2)


# --------------------------------------------------------------------------------------- bad input
def _t(*shape, dtype="float32"):
    return tt.zeros(*shape, dtype=dtype)


# (id, tinytensor call, PyTorch call, tinytensor's error type, PyTorch's key words, or None where its
# message has nothing to compare (it then only has to fail too))
BAD = [
    ("max2d-2d-input", lambda F, T: F.max_pool2d(T(5, 5), 2), tt.ShapeError, r"3D.* or 4D"),
    ("max2d-5d-input", lambda F, T: F.max_pool2d(T(1, 1, 1, 5, 5), 2), tt.ShapeError, r"3D.* or 4D"),
    ("max2d-kernel-too-big", lambda F, T: F.max_pool2d(T(1, 2, 5, 5), 6), ValueError, "Output size is too small"),
    ("max2d-pad-over-half", lambda F, T: F.max_pool2d(T(1, 2, 5, 5), 3, padding=2), ValueError, r"pad should be .*half of"),
    ("max2d-pad-dilated", lambda F, T: F.max_pool2d(T(1, 2, 9, 9), 3, padding=2, dilation=2), ValueError, r"half of"),
    ("max2d-kernel-0", lambda F, T: F.max_pool2d(T(1, 2, 5, 5), 0), ValueError, None),
    ("max2d-stride-0", lambda F, T: F.max_pool2d(T(1, 2, 5, 5), 2, stride=0), ValueError, "stride"),
    ("max2d-dilation-0", lambda F, T: F.max_pool2d(T(1, 2, 5, 5), 2, dilation=0), ValueError, "dilation"),
    ("max2d-negative-pad", lambda F, T: F.max_pool2d(T(1, 2, 5, 5), 2, padding=-1), ValueError, "pad"),
    ("max2d-kernel-3-tuple", lambda F, T: F.max_pool2d(T(1, 2, 5, 5), (2, 2, 2)), ValueError, "kernel_size"),
    ("max2d-kernel-float", lambda F, T: F.max_pool2d(T(1, 2, 5, 5), 2.0), TypeError, "kernel_size"),
    ("max2d-empty-channels", lambda F, T: F.max_pool2d(T(2, 0, 5, 5), 2), tt.ShapeError, None),
    ("max2d-bool", lambda F, T: F.max_pool2d(T(1, 1, 4, 4, dtype="bool"), 2), TypeError, None),
    ("max1d-4d-input", lambda F, T: F.max_pool1d(T(1, 1, 1, 5), 2), tt.ShapeError, r"2D.* or 3D"),
    ("max1d-pad-over-half", lambda F, T: F.max_pool1d(T(1, 1, 5), 2, padding=2), ValueError, r"at most half of"),
    ("max1d-kernel-too-big", lambda F, T: F.max_pool1d(T(1, 1, 2), 3), ValueError, None),
    ("avg2d-divisor-0", lambda F, T: F.avg_pool2d(T(1, 2, 4, 4), 2, divisor_override=0), ValueError, "divisor must be not zero"),
    ("avg2d-divisor-float", lambda F, T: F.avg_pool2d(T(1, 2, 4, 4), 2, divisor_override=1.5), TypeError, "divisor_override"),
    ("avg2d-pad-over-half", lambda F, T: F.avg_pool2d(T(1, 2, 5, 5), 2, padding=2), ValueError, r"pad should be .*half of"),
    ("avg1d-4d-input", lambda F, T: F.avg_pool1d(T(1, 1, 1, 5), 2), tt.ShapeError, None),
    ("adaptive-2d-input", lambda F, T: F.adaptive_avg_pool2d(T(5, 5), 2), tt.ShapeError, r"3D.* or 4D"),
    ("adaptive-negative", lambda F, T: F.adaptive_avg_pool2d(T(1, 2, 4, 4), -1), ValueError, "greater than or equal to 0"),
    ("adaptive-3-tuple", lambda F, T: F.adaptive_avg_pool2d(T(1, 2, 4, 4), (1, 2, 3)), ValueError, "output_size"),
    ("adaptive-empty-height", lambda F, T: F.adaptive_avg_pool2d(T(1, 3, 0, 5), 2), tt.ShapeError, "non-zero"),
    ("adaptive-max-int", lambda F, T: F.adaptive_max_pool2d(T(1, 1, 4, 4, dtype="int64"), 2), TypeError, None),
    ("adaptive1d-4d-input", lambda F, T: F.adaptive_avg_pool1d(T(1, 3, 5, 5), 2), tt.ShapeError, None),
    ("pad-odd-length", lambda F, T: F.pad(T(2, 3, 4), (1, 2, 3)), ValueError, "Padding length must be divisible by 2"),
    ("pad-too-long", lambda F, T: F.pad(T(2, 3), (1,) * 6), ValueError, "less than or equal to two times the input"),
    ("pad-float-amount", lambda F, T: F.pad(T(2, 3), (1.0, 1)), TypeError, "tuple of ints"),
    ("pad-none", lambda F, T: F.pad(T(2, 3), None), TypeError, "tuple of ints"),
    ("pad-crop-too-much", lambda F, T: F.pad(T(1, 1, 5), (-3, -3)), ValueError, None),
    ("pad-unknown-mode", lambda F, T: F.pad(T(1, 2, 3), (1, 1), mode="wrap"), NotImplementedError, "Unrecognised padding mode"),
    (
        "pad-reflect-too-much",
        lambda F, T: F.pad(T(2, 3, 4, 5), (0, 0, 4, 0), mode="reflect"),
        ValueError,
        "Padding size should be less than the corresponding input dimension",
    ),
    ("pad-reflect-2-on-4d", lambda F, T: F.pad(T(2, 3, 4, 5), (1, 1), mode="reflect"), NotImplementedError, r"Padding size 2 is not supported for 4D input"),
    ("pad-reflect-1d", lambda F, T: F.pad(T(5), (1, 1), mode="reflect"), NotImplementedError, r"Padding size 2 is not supported for 1D input"),
    ("pad-reflect-value", lambda F, T: F.pad(T(1, 2, 5), (1, 1), mode="reflect", value=1.0), ValueError, "doesn't take in value argument"),
    ("pad-circular-twice", lambda F, T: F.pad(T(1, 2, 5), (6, 0), mode="circular"), ValueError, "wrapping around more than once"),
    ("pad-replicate-empty", lambda F, T: F.pad(T(1, 1, 0), (1, 1), mode="replicate"), tt.ShapeError, None),
    ("pad-replicate-to-nothing", lambda F, T: F.pad(T(1, 1, 5), (-3, -2), mode="replicate"), ValueError, "too small"),
    ("interp-size-and-scale", lambda F, T: F.interpolate(T(1, 1, 4, 4), size=3, scale_factor=2), ValueError, "only one of size or scale_factor should be defined"),
    ("interp-neither", lambda F, T: F.interpolate(T(1, 1, 4, 4)), ValueError, "either size or scale_factor should be defined"),
    ("interp-size-length", lambda F, T: F.interpolate(T(1, 1, 4, 4), size=(3, 7, 2)), ValueError, "same number of spatial dimensions"),
    ("interp-scale-length", lambda F, T: F.interpolate(T(1, 1, 4, 4), scale_factor=(2, 2, 2)), ValueError, "same number of spatial dimensions"),
    ("interp-align-nearest", lambda F, T: F.interpolate(T(1, 1, 4, 4), scale_factor=2, align_corners=False), ValueError, "align_corners option can only be set"),
    ("interp-bilinear-3d", lambda F, T: F.interpolate(T(2, 3, 4), scale_factor=2, mode="bilinear"), NotImplementedError, "Got 3D input, but bilinear mode needs 4D input"),
    ("interp-linear-4d", lambda F, T: F.interpolate(T(1, 1, 4, 4), scale_factor=2, mode="linear"), NotImplementedError, "Got 4D input, but linear mode needs 3D input"),
    ("interp-unknown-mode", lambda F, T: F.interpolate(T(1, 1, 4, 4), scale_factor=2, mode="cubic"), NotImplementedError, "cubic"),
    ("interp-2d-input", lambda F, T: F.interpolate(T(3, 4), scale_factor=2), NotImplementedError, r"Only 3D, 4D and 5D input"),
    ("interp-size-0", lambda F, T: F.interpolate(T(1, 1, 4, 5), size=0), ValueError, "sizes should be greater than 0"),
    ("interp-scale-too-small", lambda F, T: F.interpolate(T(1, 1, 4, 5), scale_factor=0.1), ValueError, "sizes should be greater than 0"),
    ("interp-empty-channels", lambda F, T: F.interpolate(T(1, 0, 2, 2), scale_factor=2), ValueError, None),
    ("interp-recompute-with-size", lambda F, T: F.interpolate(T(1, 1, 4, 4), size=3, mode="bilinear", recompute_scale_factor=True), ValueError, "recompute_scale_factor is not meaningful with an explicit size"),
    ("interp-size-float", lambda F, T: F.interpolate(T(1, 1, 4, 4), size=2.5), TypeError, None),
    ("interp-scale-str", lambda F, T: F.interpolate(T(1, 1, 4, 4), scale_factor="2"), TypeError, None),
    ("dropout2d-p", lambda F, T: F.dropout2d(T(2, 3, 4, 4), 1.5), ValueError, "dropout probability has to be between 0 and 1"),
    ("dropout2d-1d-input", lambda F, T: F.dropout2d(T(5), 0.5), tt.ShapeError, "Feature dropout requires at least 2 dimensions"),
]  # fmt: skip


def _torch_zeros(torch):
    names = {"float32": torch.float32, "int64": torch.int64, "bool": torch.bool}
    return lambda *shape, dtype="float32": torch.zeros(*shape, dtype=names[dtype])


@pytest.mark.parametrize("call,exc,words", [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_bad_input_fails_as_in_pytorch(torch, call, exc, words):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dropout2d's deprecation warning for 1-D input, in both
        with pytest.raises(exc) as ours:
            call(F, _t)
        with pytest.raises((RuntimeError, ValueError, TypeError, NotImplementedError, IndexError)) as theirs:
            call(torch.nn.functional, _torch_zeros(torch))
    # PyTorch's ValueError, TypeError and NotImplementedError are ours too, but for its '"op" not
    # implemented for <dtype>', a TypeError here (as every dtype refusal); its RuntimeError is a ValueError
    dtype_refusal = theirs.type is NotImplementedError and "not implemented for" in str(theirs.value)
    if dtype_refusal:
        assert exc is TypeError
    elif theirs.type in (ValueError, TypeError, NotImplementedError):
        assert issubclass(exc, theirs.type), f"PyTorch raises {theirs.type.__name__}, tinytensor {exc.__name__}"
    if words is not None:
        assert re.search(words, str(ours.value)), str(ours.value)
        assert re.search(words, str(theirs.value)), str(theirs.value)
    assert re.match(r"^\w+\(", str(ours.value)), f"the message does not name the function: {ours.value}"


def test_where_tinytensor_refuses_what_pytorch_runs():
    """PyTorch's CPU kernels average integers (rounding) and resize uint8 images; here average
    pooling and resizing take floating-point input only, with a TypeError that says so."""
    with pytest.raises(TypeError, match=r"avg_pool2d\(\): expected a floating-point input, got dtype int64"):
        F.avg_pool2d(tt.zeros(1, 1, 4, 4, dtype="int64"), 2)
    with pytest.raises(TypeError, match=r"interpolate\(\): the input must be floating point"):
        F.interpolate(tt.zeros(1, 1, 2, 2, dtype="int32"), scale_factor=2)
    with pytest.raises(NotImplementedError, match="antialias"):
        F.interpolate(tt.zeros(1, 1, 4, 4), scale_factor=0.5, mode="bilinear", antialias=True)


@pytest.mark.parametrize(
    "fn,shape,kwargs",
    [
        ("max_pool2d", (1, 1, 1, 5), dict(kernel_size=2, padding=1, dilation=2)),  # rows -1 and 1 of 1
        ("max_pool1d", (1, 2, 4), dict(kernel_size=2, stride=3, padding=1, dilation=5)),
        ("max_pool2d", (1, 1, 6, 2), dict(kernel_size=(1, 2), stride=(1, 2), padding=(0, 1), dilation=(1, 3))),
    ],
)
def test_a_window_of_padding_alone_is_refused(torch, fn, shape, kwargs):
    """Only dilation can leave a window between the taps or in the padding (PyTorch pools it to -inf
    and an index outside the input, which its backward then writes through); here it is a
    ValueError that names the window."""
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    with pytest.raises(ValueError, match=rf"{fn}\(\): the window at output position \d+ .* covers no input element"):
        getattr(F, fn)(tt.tensor(x), **kwargs)


def test_ceil_mode_takes_a_kernel_wider_than_the_input(torch):
    """With ceil_mode, PyTorch rounds a window wider than the padded input up to one output."""
    x = np.random.default_rng(0).standard_normal((2, 3, 2, 2)).astype(np.float32)
    for fn in ("max_pool2d", "avg_pool2d"):
        ours = getattr(F, fn)(tt.tensor(x), 3, 2, ceil_mode=True)
        theirs = getattr(torch.nn.functional, fn)(torch.tensor(x), 3, 2, ceil_mode=True)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
        assert ours.shape == (2, 3, 1, 1)


def test_pad_keeps_the_dtype_and_casts_the_value(torch):
    for dtype, tdtype, value in [
        ("int64", torch.int64, 2.7),
        ("bool", torch.bool, 1.0),
        ("float64", torch.float64, None),
    ]:
        x = np.array([1, 0, 1]).astype(dtype)
        out = F.pad(tt.tensor(x), (1, 2), value=value)
        ref = torch.nn.functional.pad(torch.tensor(x, dtype=tdtype), (1, 2), value=value)
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out.numpy(), ref.numpy())
    # no padding: the input's values, a new tensor
    x = tt.ones(2, 3)
    assert F.pad(x, ()).tolist() == x.tolist()


# ----------------------------------------------------------------------------------------- dropout2d
def test_dropout2d_zeros_whole_channels_and_scales_the_rest(device):
    tt.manual_seed(0)
    x = tt.tensor(np.ones((8, 16, 3, 2)), device=device, requires_grad=True)
    out = F.dropout2d(x, 0.25)
    values = out.numpy()
    planes = values.reshape(8, 16, -1)
    # each (sample, channel) plane is all 0 or all 1 / (1 - p)
    assert np.all(planes == planes[:, :, :1])
    assert set(np.unique(values).tolist()) == {0.0, 1.0 / 0.75}
    dropped = np.mean(planes[:, :, 0] == 0)
    assert 0.1 < dropped < 0.4  # 128 channels at p=0.25
    out.backward(tt.tensor(np.full((8, 16, 3, 2), 2.0), device=device))
    np.testing.assert_array_equal(x.grad.numpy(), values * 2.0)  # the same mask, the same scale
    assert out.device == x.device == x.grad.device


def test_dropout2d_same_seed_same_mask_and_pass_through():
    x = tt.ones(2, 5, 2, 2)
    tt.manual_seed(3)
    first = F.dropout2d(x).numpy()
    tt.manual_seed(3)
    np.testing.assert_array_equal(F.dropout2d(x).numpy(), first)
    assert F.dropout2d(x, 0.5, training=False) is x
    assert F.dropout2d(x, 0.0) is x
    y = tt.tensor(np.full((2, 3, 2, 2), 5.0), requires_grad=True)
    zeroed = F.dropout2d(y, 1.0)
    np.testing.assert_array_equal(zeroed.numpy(), 0.0)
    zeroed.sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), 0.0)


def test_dropout2d_reads_3d_input_as_n_c_l_with_pytorchs_warnings(torch):
    tt.manual_seed(1)
    with pytest.warns(UserWarning, match="assuming that channel-wise 1D dropout behavior is desired") as ours:
        out = F.dropout2d(tt.ones(6, 8, 5), 0.5).numpy()
    assert ours[0].filename == __file__  # the warning points at the caller
    assert np.all(out == out[:, :, :1]) and {0.0, 2.0} == set(np.unique(out).tolist())  # a mask per (row, column)
    with pytest.warns(UserWarning, match="assuming that channel-wise 1D dropout behavior is desired"):
        torch.nn.functional.dropout2d(torch.ones(6, 8, 5), 0.5)
    for shape in [(3, 5), (1, 2, 3, 4, 5)]:
        with pytest.warns(UserWarning, match=rf"Received a {len(shape)}-D input to dropout2d, which is deprecated"):
            F.dropout2d(tt.ones(*shape), 0.5)
        with pytest.warns(UserWarning, match=rf"Received a {len(shape)}-D input to dropout2d, which is deprecated"):
            torch.nn.functional.dropout2d(torch.ones(*shape), 0.5)


def test_dropout2d_in_place():
    x = tt.ones(4, 6, 2, 2)
    version = getattr(x, "_version", [0])[0]
    tt.manual_seed(2)
    assert F.dropout2d(x, 0.5, inplace=True) is x
    assert set(np.unique(x.numpy()).tolist()) == {0.0, 2.0}
    assert x._version[0] != version  # a change graphs that saved x can see
    leaf = tt.ones(2, 3, 2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"dropout2d\(inplace=True\).*cannot be changed in place"):
        F.dropout2d(leaf, 0.5, inplace=True)
    with tt.no_grad():
        assert F.dropout2d(leaf, 0.5, inplace=True) is leaf
    with pytest.raises(TypeError, match=r"dropout2d\(\): the input must be floating point"):
        F.dropout2d(tt.ones(2, 3, 2, 2, dtype="int64"), 0.5)
