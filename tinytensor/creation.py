"""Functions that make tensors: tensor, zeros, ones, full, arange, linspace, eye, randn, rand, randint,
randperm, *_like, DLPack.

Random tensors are drawn on the host, from the global stream or a ``tt.Generator``, so one seed
gives the same values on every device.
"""

from __future__ import annotations

import math

import numpy as np

from . import random as _random
from .argcheck import int_at_least
from .devices import backend_for, backend_of, parse_device, transfer
from .dtypes import DEFAULT_FLOAT, is_float
from .dtypes import resolve as _resolve_dtype
from .errors import DeviceError
from .tensor import Tensor, as_array, wrap


def _shape(shape, fn: str = "shape") -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for n in shape:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
            raise ValueError(f"{fn}: a shape holds non-negative integers, got {tuple(shape)!r}")
    return tuple(int(n) for n in shape)


def _number(value, fn: str, name: str):
    if isinstance(value, (np.generic,)) and value.dtype.kind in "biuf":
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"{fn}: {name} must be a number, got {type(value).__name__}")
    return value


def _finish(data, requires_grad) -> Tensor:
    t = wrap(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (same rules as ``Tensor(...)``: Python bools, ints and
    floats become bool, int64 and float32; arrays and tensors keep their dtype)."""
    array = as_array(data, _resolve_dtype(dtype, "tensor()"), "tensor()")
    return _finish(_place(array, device), requires_grad)


def full(shape, value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ``shape`` filled with ``value``; the dtype follows the value as in PyTorch
    (a bool gives bool, an int int64, a float float32) unless ``dtype`` is given."""
    shape = _shape((shape,) if isinstance(shape, (int, np.integer)) else tuple(shape), "full()")
    value = _number(value, "full()", "fill_value")
    dev = parse_device(device or "cpu")
    if dtype is None:
        dtype = np.bool_ if isinstance(value, bool) else np.int64 if isinstance(value, int) else DEFAULT_FLOAT
    dtype = _resolve_dtype(dtype, "full()")
    if not is_float(dtype) and isinstance(value, float) and not (math.isfinite(value) and value == int(value)):
        raise ValueError(f"full(): fill_value {value!r} cannot be stored exactly in dtype {dtype}")
    return _finish(backend_for(dev).full_on(shape, value, dtype, dev[1]), requires_grad)


def zeros(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(_shape(shape, "zeros()"), 0.0, dtype=dtype, device=device, requires_grad=requires_grad)


def ones(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(_shape(shape, "ones()"), 1.0, dtype=dtype, device=device, requires_grad=requires_grad)


def arange(start, stop=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Like PyTorch: integer arguments give int64, any float argument gives float32."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_number(v, "arange()", n) for v, n in ((start, "start"), (stop, "end"), (step, "step")))
    if step == 0:
        raise ValueError("arange(): step must be nonzero")
    if not all(math.isfinite(v) for v in (start, stop, step)):
        raise ValueError(f"arange(): start, end and step must be finite, got {start}, {stop}, {step}")
    if (stop - start) * step < 0:
        raise ValueError(f"arange(): step {step} points away from end {stop} (start {start})")
    if dtype is None:
        is_int = all(isinstance(v, int) for v in (start, stop, step))
        dtype = np.int64 if is_int else DEFAULT_FLOAT
    host = np.arange(start, stop, step, dtype=_resolve_dtype(dtype, "arange()"))
    return _finish(_place(host, device), requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` values evenly spaced from ``start`` to ``end`` (both included), float32 by default.

    PyTorch's values, bit for bit: the first half counts up from ``start`` and the second half
    down from ``end`` (so both ends are exact), each value one fused multiply-add as PyTorch's
    kernels compute it; an integer dtype truncates them, as PyTorch does. ``start`` and ``end``
    may be numbers or one-element tensors.
    """
    fn = "linspace()"
    start, end = (_number(_item(v, fn, n), fn, n) for v, n in ((start, "start"), (end, "end")))
    steps = int_at_least(fn, "steps", steps, 0)
    dtype = _resolve_dtype(dtype, fn) or DEFAULT_FLOAT
    if dtype.kind == "b":
        raise TypeError(f"{fn}: dtype bool is not supported; use a float or integer dtype")
    if dtype.kind == "f":
        first, last = dtype.type(start), dtype.type(end)
        math_dtype = dtype
    else:
        if not all(math.isfinite(v) for v in (start, end)):
            raise ValueError(f"{fn}: start and end must be finite for dtype {dtype}, got {start} and {end}")
        info = np.iinfo(dtype)
        first, last = int(start), int(end)  # truncated to the dtype first, as PyTorch
        if not (info.min <= first <= info.max and info.min <= last <= info.max):
            raise ValueError(f"{fn}: start {start} or end {end} does not fit in {dtype}")
        math_dtype = np.dtype(np.float64)  # PyTorch steps through integer ranges in double
        first, last = math_dtype.type(first), math_dtype.type(last)
    if steps == 1:
        host = np.array([first]).astype(dtype)
    else:
        index = np.arange(steps)
        with np.errstate(invalid="ignore", over="ignore"):
            step = (last - first) / math_dtype.type(max(steps - 1, 1))
            up = _multiply_add(step, index.astype(math_dtype), first)
            down = _multiply_add(-step, (steps - 1 - index).astype(math_dtype), last)
        host = np.where(index < steps // 2, up, down).astype(dtype)
    return _finish(_place(host, device), requires_grad)


def _multiply_add(a, b, c):
    """``a * b + c`` rounded once, as the fused multiply-add PyTorch's compiled kernels use (float16,
    whose every operation PyTorch rounds, is computed plainly).

    numpy has no fma, so this is Boldo and Melquiond's emulation (2008): Dekker's exact product
    and Knuth's exact sum, the small parts added with rounding to odd, then one rounding to nearest.
    """
    dtype = b.dtype
    a, c = dtype.type(a), dtype.type(c)
    plain = a * b + c
    if dtype.itemsize < 4:
        return plain
    split = dtype.type(2 ** ((np.finfo(dtype).nmant + 2) // 2) + 1)  # Veltkamp's splitter

    def halves(x):
        scaled = split * x
        high = scaled - (scaled - x)
        return high, x - high

    product = a * b
    (a_high, a_low), (b_high, b_low) = halves(a), halves(b)
    product_error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    total = c + product
    virtual = total - c
    total_error = (c - (total - virtual)) + (product - virtual)
    small = total_error + product_error
    virtual = small - total_error
    small_error = (total_error - (small - virtual)) + (product_error - virtual)
    # round to odd: an inexact sum whose last bit is even moves to its odd neighbour
    bits = small.view(np.int64 if dtype.itemsize == 8 else np.int32)
    inexact_even = (small_error != 0) & ((bits & 1) == 0)
    small = np.where(inexact_even, np.nextafter(small, np.copysign(dtype.type(np.inf), small_error)), small)
    fused = total + small
    return np.where(np.isfinite(fused), fused, plain)  # near overflow, the splitting overflows first


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An ``n`` by ``m`` (default ``n``) matrix with ones on the diagonal, float32 by default."""
    n = int_at_least("eye()", "n", n, 0)
    m = n if m is None else int_at_least("eye()", "m", m, 0)
    host = np.eye(n, m, dtype=_resolve_dtype(dtype, "eye()") or DEFAULT_FLOAT)
    return _finish(_place(host, device), requires_grad)


def _item(value, fn: str, name: str):
    """A one-element tensor's number (PyTorch's linspace takes 0-d tensors for start and end)."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"{fn}: {name} must be a number or a one-element tensor, got shape {value.shape}")
        return value.item()
    return value


def _place(host, device):
    return transfer(host, parse_device(device)) if device is not None else host


def _float_dtype(dtype, fn):
    dtype = _resolve_dtype(dtype, fn) or np.dtype(DEFAULT_FLOAT)
    if not is_float(dtype):
        raise TypeError(f"{fn}: random samples need a floating-point dtype, got {dtype}")
    return dtype


def _rng(generator, device, fn: str):
    """The stream to draw from (``generator``'s or the global one), after checking ``device``."""
    kind = parse_device(device)[0] if device is not None else "cpu"
    return _random.rng_for(generator, kind, fn)


def randn(*shape, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples, drawn on the host so a seed gives the same values on every device."""
    dtype = _float_dtype(dtype, "randn()")
    rng = _rng(generator, device, "randn()")
    host = rng.standard_normal(_shape(shape, "randn()"), dtype=np.float64).astype(dtype)
    return _finish(_place(host, device), requires_grad)


def rand(*shape, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1)."""
    dtype = _float_dtype(dtype, "rand()")
    rng = _rng(generator, device, "rand()")
    host = rng.random(_shape(shape, "rand()"), dtype=np.float64).astype(dtype)
    return _finish(_place(host, device), requires_grad)


def randint(low=0, high=None, size=(), *, generator=None, dtype=None, device=None) -> Tensor:
    """Integers drawn uniformly from [low, high), int64 by default, as PyTorch's ``randint``:
    ``randint(high, size)`` and ``randint(low, high, size)``."""
    if isinstance(high, (tuple, list)) and size == ():  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    low, high = (_number(v, "randint()", n) for v, n in ((low, "low"), (high, "high")))
    if not (isinstance(low, int) and isinstance(high, int)):
        raise TypeError(f"randint(): low and high must be ints, got {low!r} and {high!r}")
    if high <= low:
        raise ValueError(f"randint(): high ({high}) must be greater than low ({low})")
    dtype = _resolve_dtype(dtype, "randint()") or np.dtype(np.int64)
    # the draw is int64, then cast: the range must fit both, never wrapping silently
    info = np.iinfo(dtype if dtype.kind == "i" else np.int64)
    lowest, highest = (0, 1) if dtype.kind == "b" else (int(info.min), int(info.max))
    if low < lowest or high - 1 > highest:
        raise ValueError(f"randint(): values in [{low}, {high}) do not fit in dtype {dtype}")
    shape = _shape((size,) if isinstance(size, (int, np.integer)) else tuple(size), "randint()")
    host = _rng(generator, device, "randint()").integers(low, high, shape).astype(dtype)
    return wrap(_place(host, device))


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of ``0 .. n-1``, int64 by default."""
    n = int_at_least("randperm()", "n", n, 0)
    dtype = _resolve_dtype(dtype, "randperm()") or np.dtype(np.int64)
    if dtype.kind == "b":
        raise TypeError("randperm(): dtype bool is not supported")
    largest = 2 ** (np.finfo(dtype).nmant + 1) if dtype.kind == "f" else int(np.iinfo(dtype).max)
    if n - 1 > largest:
        raise ValueError(f"randperm(): n {n} is too large for dtype {dtype} (values up to {largest} are exact)")
    host = _rng(generator, device, "randperm()").permutation(n).astype(dtype)
    return _finish(_place(host, device), requires_grad)


def uniform(shape, low, high, dtype=None, device=None) -> Tensor:
    """Uniform samples in [low, high) (used for layer initialization)."""
    dtype = _resolve_dtype(dtype) or np.dtype(DEFAULT_FLOAT)
    host = _random.generator().uniform(low, high, _shape((shape,))).astype(dtype)
    return wrap(_place(host, device))


def _like(t: Tensor, dtype, device):
    return t.shape, (dtype if dtype is not None else t.dtype), (device if device is not None else t.device)


def zeros_like(t: Tensor, dtype=None, device=None, requires_grad=False) -> Tensor:
    shape, dtype, device = _like(t, dtype, device)
    return full(shape, 0, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(t: Tensor, dtype=None, device=None, requires_grad=False) -> Tensor:
    shape, dtype, device = _like(t, dtype, device)
    return full(shape, 1, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(t: Tensor, value, dtype=None, device=None, requires_grad=False) -> Tensor:
    shape, dtype, device = _like(t, dtype, device)
    return full(shape, value, dtype=dtype, device=device, requires_grad=requires_grad)


def randn_like(t: Tensor, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``randn`` with ``t``'s shape, dtype and device unless given."""
    shape, dtype, device = _like(t, dtype, device)
    return randn(*shape, generator=generator, dtype=dtype, device=device, requires_grad=requires_grad)


def rand_like(t: Tensor, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``rand`` with ``t``'s shape, dtype and device unless given."""
    shape, dtype, device = _like(t, dtype, device)
    return rand(*shape, generator=generator, dtype=dtype, device=device, requires_grad=requires_grad)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``array`` (no copy)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy needs a numpy.ndarray, got {type(array).__name__}")
    return wrap(array)


# DLPack device types (dlpack.h): kDLCPU = 1, kDLCUDA = 2, kDLCUDAManaged = 13.
_DLPACK_CPU = 1
_DLPACK_CUDA = (2, 13)


def from_dlpack(obj) -> Tensor:
    """Zero-copy view of any DLPack producer (torch, CuPy, JAX, numpy) as a tensor."""
    name = type(obj).__name__
    if not hasattr(obj, "__dlpack_device__") or not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack(): {name} does not implement the DLPack protocol (__dlpack__, __dlpack_device__)")
    try:
        device_type, device_id = obj.__dlpack_device__()
        device_type, device_id = int(device_type), int(device_id)
    except Exception as exc:  # a producer's own bug: say whose
        raise TypeError(
            f"from_dlpack(): {name}.__dlpack_device__() must return (device type, device id), failed with {exc!r}"
        ) from None
    if device_type == _DLPACK_CPU:
        importer = np.from_dlpack
    elif device_type in _DLPACK_CUDA:
        importer = backend_for(("cuda", device_id)).xp.from_dlpack
    else:
        raise DeviceError(f"from_dlpack(): DLPack device type {device_type} is neither CPU (1) nor CUDA (2)")
    try:
        array = importer(obj)
    except (TypeError, ValueError, RuntimeError, BufferError, AttributeError) as exc:
        raise TypeError(f"from_dlpack(): {name} is not a valid DLPack producer: {exc}") from None
    return wrap(array)


def backend_name(t: Tensor) -> str:
    """Which array library holds the tensor: 'numpy', 'cupy' or 'array_api_strict'."""
    return backend_of(t._data).name
