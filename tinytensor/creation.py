"""Functions that make tensors: tensor, zeros, ones, full, arange, randn, rand, *_like, DLPack."""

from __future__ import annotations

import math

import numpy as np

from . import random as _random
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


def _place(host, device):
    return transfer(host, parse_device(device)) if device is not None else host


def _float_dtype(dtype, fn):
    dtype = _resolve_dtype(dtype, fn) or np.dtype(DEFAULT_FLOAT)
    if not is_float(dtype):
        raise TypeError(f"{fn}: random samples need a floating-point dtype, got {dtype}")
    return dtype


def randn(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples, drawn on the host so a seed gives the same values on every device."""
    dtype = _float_dtype(dtype, "randn()")
    host = _random.generator().standard_normal(_shape(shape, "randn()"), dtype=np.float64).astype(dtype)
    return _finish(_place(host, device), requires_grad)


def rand(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1)."""
    dtype = _float_dtype(dtype, "rand()")
    host = _random.generator().random(_shape(shape, "rand()"), dtype=np.float64).astype(dtype)
    return _finish(_place(host, device), requires_grad)


def randint(low, high=None, size=(), dtype=None, device=None) -> Tensor:
    """Integers drawn uniformly from [low, high) (``randint(high, size)`` starts at 0), int64 by
    default, as PyTorch's ``randint``."""
    if high is None:
        low, high = 0, low
    low, high = (_number(v, "randint()", n) for v, n in ((low, "low"), (high, "high")))
    if not (isinstance(low, int) and isinstance(high, int)):
        raise TypeError(f"randint(): low and high must be ints, got {low!r} and {high!r}")
    if high <= low:
        raise ValueError(f"randint(): high ({high}) must be greater than low ({low})")
    dtype = _resolve_dtype(dtype, "randint()") or np.dtype(np.int64)
    shape = _shape((size,) if isinstance(size, (int, np.integer)) else tuple(size), "randint()")
    host = _random.generator().integers(low, high, shape).astype(dtype)
    return wrap(_place(host, device))


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


def randn_like(t: Tensor, dtype=None, device=None, requires_grad=False) -> Tensor:
    shape, dtype, device = _like(t, dtype, device)
    return randn(*shape, dtype=dtype, device=device, requires_grad=requires_grad)


def rand_like(t: Tensor, dtype=None, device=None, requires_grad=False) -> Tensor:
    shape, dtype, device = _like(t, dtype, device)
    return rand(*shape, dtype=dtype, device=device, requires_grad=requires_grad)


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
