"""Dtypes: names, what Python data becomes (PyTorch's rules), and casts that never wrap silently.

Python data follows PyTorch: bools become bool, ints int64, floats (or a mix of ints and floats)
float32, the default float. Arrays keep their dtype. A cast to an integer dtype refuses NaN,
infinity and values out of the target's range instead of producing garbage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .array_types import Array, DType

if TYPE_CHECKING:  # checked_cast runs on the array's backend, a layer above
    from .backend import Backend

DEFAULT_FLOAT = np.dtype(np.float32)

NAMES: dict[str, type[np.generic]] = {
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "int32": np.int32,
    "int64": np.int64,
    "bool": np.bool_,
}
SUPPORTED = frozenset(np.dtype(t) for t in NAMES.values())

# What a Python scalar or nested list of one numpy kind becomes.
_PYTHON_KIND = {"b": np.dtype(np.bool_), "i": np.dtype(np.int64), "u": np.dtype(np.int64), "f": DEFAULT_FLOAT}


def numpy_dtype(dtype: DType) -> np.dtype:
    """The numpy dtype behind a numpy, CuPy or array_api_strict dtype."""
    resolved: np.dtype = np.dtype(getattr(dtype, "_np_dtype", dtype))
    return resolved


def resolve(dtype: object, fn: str = "dtype") -> np.dtype | None:
    """A numpy dtype from a name ("float32"), a numpy type or dtype, or an array_api_strict dtype.

    None stays None. Anything else, and dtypes tinytensor does not support, raise TypeError.
    """
    if dtype is None:
        return None
    if isinstance(dtype, bool) or isinstance(dtype, (int, float)):
        raise TypeError(
            f"{fn}: {dtype!r} is not a dtype (use e.g. 'float32' or 'int64'; requires_grad and device "
            "are keyword arguments)"
        )
    if isinstance(dtype, str):
        if dtype not in NAMES:
            raise TypeError(f"{fn}: unknown dtype {dtype!r}: expected one of {sorted(NAMES)}")
        return np.dtype(NAMES[dtype])
    try:
        resolved = numpy_dtype(dtype)
    except TypeError:
        raise TypeError(f"{fn}: {dtype!r} is not a dtype: expected one of {sorted(NAMES)}") from None
    if resolved not in SUPPORTED:
        raise TypeError(f"{fn}: dtype {resolved} is not supported: expected one of {sorted(NAMES)}")
    return resolved


# PyTorch's type categories: a higher category wins a mix regardless of size.
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}


def result_dtype(a: np.dtype, b: np.dtype, a_is_0d: bool = False, b_is_0d: bool = False) -> np.dtype:
    """The dtype of a binary op on two tensors of numpy dtypes ``a`` and ``b``, by PyTorch's rule.

    Categories bool < integer < float: a mix takes the higher category's dtype (int64 + float32
    gives float32; numpy would give float64). Within a category the wider dtype wins. A 0-d tensor
    counts like a number: it decides the dtype only when its category is higher than the other
    tensor's (float32 vector + float64 0-d gives float32; int vector + float64 0-d gives float64).
    """
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if a_is_0d != b_is_0d:
        dims, zero = (b, a) if a_is_0d else (a, b)
        return dims if _CATEGORY[dims.kind] >= _CATEGORY[zero.kind] else zero
    if ca != cb:
        return a if ca > cb else b
    return np.promote_types(a, b)


def is_float(dtype: DType) -> bool:
    """Whether ``dtype`` (numpy's, CuPy's or array_api_strict's) is a floating-point dtype."""
    return numpy_dtype(dtype).kind == "f"


def from_python(value: object, fn: str = "tensor()") -> np.ndarray:
    """A numpy array from a Python number or nested list, with PyTorch's dtype rules."""
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(
            f"{fn}: data must be a number, a nested list of numbers or an array, got {type(value).__name__}"
        )
    try:
        array = np.asarray(value)
    except ValueError as exc:
        raise ValueError(
            f"{fn}: data is ragged: nested lists must have the same length at each level ({exc})"
        ) from None
    except OverflowError:
        raise ValueError(f"{fn}: an integer in data does not fit in int64") from None
    kind = array.dtype.kind
    if kind == "O" and array.size and all(isinstance(v, int) for v in array.flat):
        raise ValueError(f"{fn}: an integer in data does not fit in int64")  # numpy keeps huge ints as objects
    if kind == "c":
        raise TypeError(f"{fn}: complex numbers are not supported (data {value!r:.60})")
    if kind not in _PYTHON_KIND:
        raise TypeError(
            f"{fn}: data must hold numbers or bools, got elements that numpy reads as {array.dtype} "
            f"(data {value!r:.60})"
        )
    if kind == "u" and array.size and int(array.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"{fn}: an integer in data does not fit in int64")
    return array.astype(_PYTHON_KIND[kind], copy=False)


def check_array_dtype(dtype: DType, fn: str) -> None:
    """Refuse arrays whose dtype tinytensor cannot compute with (complex, object, strings...)."""
    kind = numpy_dtype(dtype).kind
    if kind == "c":
        raise TypeError(f"{fn}: complex arrays are not supported (dtype {dtype})")
    if kind not in "biuf":
        raise TypeError(f"{fn}: arrays of dtype {dtype} are not supported: only numbers and bools")


def checked_cast(data: Array, dtype: npt.DTypeLike, backend: Backend, fn: str = "to()") -> Array:
    """``data`` cast to numpy dtype ``dtype`` on its own backend; refuses casts that would lose values.

    Float to integer: NaN, infinity and out-of-range values raise ValueError (numpy would give
    garbage). Integer narrowing: out-of-range values raise. Floats may overflow to infinity, as in
    PyTorch. Returns ``data`` itself when it already has the dtype.
    """
    target = np.dtype(dtype)
    source = numpy_dtype(data.dtype)
    if source == target:
        return data
    if target.kind in "iu" and data.size:
        xp = backend.xp
        info = np.iinfo(target)
        if source.kind == "f":
            if not bool(xp.all(xp.isfinite(data))):
                raise ValueError(f"{fn}: cannot convert NaN or infinity to {target}")
            if bool(xp.any(data <= info.min - 1)) or bool(xp.any(data >= info.max + 1)):
                raise ValueError(f"{fn}: values outside [{info.min}, {info.max}] do not fit in {target}")
        elif source.kind in "iu" and (np.iinfo(source).min < info.min or np.iinfo(source).max > info.max):
            if bool(xp.any(data < info.min)) or bool(xp.any(data > info.max)):
                raise ValueError(f"{fn}: values outside [{info.min}, {info.max}] do not fit in {target}")
    return backend.astype(data, target)
