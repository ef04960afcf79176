"""Questions about tensors answered with Python values: ``is_tensor``, ``allclose``, ``equal``,
``nelement`` and ``Tensor.type`` (``tensor_type``; given a dtype, it casts instead)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array_types import Array, DType
from ..backend import Backend
from ..devices import backend_of
from ..dtypes import numpy_dtype, resolve
from ..errors import ShapeError
from ..tensor import Tensor, plain_array
from .arith import combine_error

# PyTorch's legacy type names, which Tensor.type() returns and accepts
_TYPE_NAMES: dict[np.dtype[Any], str] = {
    np.dtype(np.float16): "HalfTensor",
    np.dtype(np.float32): "FloatTensor",
    np.dtype(np.float64): "DoubleTensor",
    np.dtype(np.int32): "IntTensor",
    np.dtype(np.int64): "LongTensor",
    np.dtype(np.bool_): "BoolTensor",
}
_DTYPE_OF_NAME = {name: dtype for dtype, name in _TYPE_NAMES.items()}
_DEVICE_PREFIX = {"cpu": "tinytensor.", "cuda": "tinytensor.cuda.", "strict": "tinytensor.strict."}


def is_tensor(obj: object) -> bool:
    """Whether ``obj`` is a tinytensor Tensor (a Parameter is one)."""
    return isinstance(obj, Tensor)


def _pair(fn: str, a: Tensor, other: object) -> tuple[Array, Array]:
    """The arrays of ``a`` and ``other`` (a Tensor or an array on ``a``'s device)."""
    y = other._data if isinstance(other, Tensor) else plain_array(other)
    if not (hasattr(y, "shape") and hasattr(y, "dtype")) or isinstance(y, np.generic):
        raise TypeError(f"{fn}(): argument 'other' must be a Tensor, got {type(other).__name__}")
    x = a._data
    if type(x) is not type(y) or backend_of(x).device(x) != backend_of(y).device(y):
        raise combine_error(fn, x, y)
    return x, y


_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2}


def _common(backend: Backend, x: Array, y: Array) -> tuple[Array, Array]:
    """``x`` and ``y`` in one dtype kind: the lower kind (bool < integer < float) is cast to the
    other's dtype, as PyTorch promotes (the array API refuses to compare across kinds)."""
    kx, ky = numpy_dtype(x.dtype).kind, numpy_dtype(y.dtype).kind
    if _KIND_RANK[kx] < _KIND_RANK[ky]:
        x = backend.astype(x, numpy_dtype(y.dtype))
    elif _KIND_RANK[ky] < _KIND_RANK[kx]:
        y = backend.astype(y, numpy_dtype(x.dtype))
    return x, y


def allclose(a: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether ``|a - other| <= atol + rtol * |other|`` everywhere (a bool).

    The tensors broadcast and must have one dtype, as in PyTorch; infinities must match exactly;
    NaNs count as equal only with ``equal_nan``."""
    x, y = _pair("allclose", a, other)
    if numpy_dtype(x.dtype) != numpy_dtype(y.dtype):
        raise TypeError(f"allclose(): the tensors have different dtypes ({x.dtype} and {y.dtype}); convert one")
    try:
        np.broadcast_shapes(tuple(x.shape), tuple(y.shape))
    except ValueError:
        raise ShapeError(f"allclose(): shapes {tuple(x.shape)} and {tuple(y.shape)} cannot be broadcast") from None
    backend = backend_of(x)
    xp = backend.xp
    kind = numpy_dtype(x.dtype).kind
    if kind == "b":
        return bool(xp.all(x == y))
    if kind != "f":  # integers compare exactly as float64 up to 2**53, far past any tolerance use
        x, y = backend.astype(x, np.float64), backend.astype(y, np.float64)
    finite = xp.logical_and(xp.isfinite(x), xp.isfinite(y))
    # infinities are compared by ==; the tolerance only applies where both are finite (no inf - inf)
    xf, yf = xp.where(finite, x, 0), xp.where(finite, y, 0)
    close = xp.where(finite, xp.abs(xf - yf) <= atol + rtol * xp.abs(yf), x == y)
    if equal_nan:
        close = xp.logical_or(close, xp.logical_and(xp.isnan(x), xp.isnan(y)))
    return bool(xp.all(close))


def equal(a: Tensor, other: Tensor) -> bool:
    """Whether ``a`` and ``other`` have the same shape and the same elements (NaN is never equal)."""
    x, y = _pair("equal", a, other)
    if tuple(x.shape) != tuple(y.shape):
        return False
    backend = backend_of(x)
    x, y = _common(backend, x, y)
    return bool(backend.xp.all(x == y))


def nelement(a: Tensor) -> int:
    """The number of elements (``numel()``)."""
    return a.numel()


def tensor_type(a: Tensor, dtype: str | DType | None = None, non_blocking: bool = False) -> str | Tensor:
    """The type name, e.g. ``'tinytensor.FloatTensor'``; given ``dtype``, the tensor cast to it.

    The names are PyTorch's legacy ones under tinytensor's prefix: ``'tinytensor.FloatTensor'``,
    ``'tinytensor.cuda.FloatTensor'`` on a GPU, ``'tinytensor.strict.FloatTensor'`` on a test
    device. ``dtype`` is any dtype ``to()`` takes, or such a name (``'torch.'`` prefix accepted);
    the tensor itself comes back when it has that dtype already. Unlike PyTorch's, a type name
    only casts: it never moves the tensor (use ``to(device)``). ``non_blocking`` has no effect."""
    if dtype is None:
        kind = backend_of(a._data).kind
        return _DEVICE_PREFIX[kind] + _TYPE_NAMES[numpy_dtype(a.dtype)]
    if isinstance(dtype, str) and dtype.endswith("Tensor"):
        prefix, _, name = dtype.rpartition(".")
        if prefix not in ("torch", "tinytensor") or name not in _DTYPE_OF_NAME:
            raise ValueError(
                f"type(): invalid type {dtype!r}: expected a dtype or one of "
                f"{', '.join(repr('tinytensor.' + n) for n in _DTYPE_OF_NAME)} (a type name sets the dtype only: "
                "move tensors between devices with .to())"
            )
        dtype = _DTYPE_OF_NAME[name]
    resolve(dtype, "type()")  # a dtype that is not one is reported as type()'s error
    return a.to(dtype=dtype)
