"""Reading 1.x ``.tt`` files (pickles of dicts of numpy arrays) without ever running code from them.

The unpickler admits only the globals that rebuilding numpy (and pickled CuPy) arrays and plain
containers needs, each through a stand-in that checks its arguments, and refuses every other
global by name before importing or calling it; protocols 2 to 5 only, and the result is walked
once more so that nothing else comes back. docs/file-format.md lists the allowed globals.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict

import numpy as np

from .format import ARRAY_DTYPES, FileFormatError, UnsafePickleError

_REFUSAL = (
    "tinytensor never runs code from a file, so it reads a pickle only when it is a 1.x .tt file "
    "(numpy arrays in dicts, lists and tuples)"
)


def _checked_dtype(dtype) -> np.dtype:
    if not isinstance(dtype, np.dtype) or dtype.newbyteorder("=") not in ARRAY_DTYPES:
        what = dtype if isinstance(dtype, np.dtype) else repr(dtype)[:60]
        raise UnsafePickleError(f"refused an array of dtype {what}: {_REFUSAL}")
    return dtype


def _dtype(spec, align=False, copy=False):
    # The spec is a short code such as "f4" or "O8"; the byte order comes later from BUILD.
    if not isinstance(spec, str):
        raise UnsafePickleError(f"refused numpy.dtype({spec!r:.40}): {_REFUSAL}")
    return _checked_dtype(np.dtype(spec, bool(align), bool(copy)))


def _reconstruct(subtype, shape, typecode):
    # numpy pickles an array as _reconstruct(ndarray, (0,), b"b") followed by BUILD(state).
    if subtype is not np.ndarray:
        raise UnsafePickleError(f"refused to build an array of type {subtype!r:.60}: {_REFUSAL}")
    return np.ndarray(shape, dtype=np.uint8)  # __setstate__ (BUILD) sets the real dtype and data


def _frombuffer(buffer, dtype, shape, order):
    return np.frombuffer(buffer, dtype=_checked_dtype(dtype)).reshape(shape, order=order)


def _scalar(dtype, data=b""):
    _checked_dtype(dtype)
    if not isinstance(data, (bytes, bytearray)) or len(data) != dtype.itemsize:
        raise FileFormatError(f"a numpy scalar of dtype {dtype} with {len(data)!r:.20} bytes of data")
    return np.frombuffer(data, dtype=dtype)[0]


def _latin1_encode(text, encoding="utf-8"):
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise UnsafePickleError(f"refused _codecs.encode(..., {encoding!r:.20}): {_REFUSAL}")
    return text.encode("latin-1")


def _cupy_array_on_host(array, *args, **kwargs):
    # cupy.ndarray.__reduce__ is (cupy._core.core.array, (self.get(),)): a host numpy array.
    if type(array) is not np.ndarray:
        raise UnsafePickleError(f"refused a CuPy array built from {type(array).__name__}: {_REFUSAL}")
    return array


_ALLOWED = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): _dtype,
    ("collections", "OrderedDict"): OrderedDict,
    ("_codecs", "encode"): _latin1_encode,
    **{("builtins", c.__name__): c for c in (dict, list, tuple, set, frozenset, bytes, bytearray)},
    **{(f"{core}.multiarray", "_reconstruct"): _reconstruct for core in ("numpy._core", "numpy.core")},
    **{(f"{core}.multiarray", "scalar"): _scalar for core in ("numpy._core", "numpy.core")},
    **{(f"{core}.numeric", "_frombuffer"): _frombuffer for core in ("numpy._core", "numpy.core")},
    **{(f"{core}.core", "array"): _cupy_array_on_host for core in ("cupy._core", "cupy.core")},
}
_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}  # protocol 2 writes Python 2 names


class _AllowListUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        module = _PY2_MODULES.get(module, module)
        found = _ALLOWED.get((module, name))
        if found is None:
            raise UnsafePickleError(f"refused to load the global {module}.{name}: {_REFUSAL}")
        return found

    def persistent_load(self, pid):
        raise UnsafePickleError(f"refused a persistent id (an external object reference): {_REFUSAL}")


def read_legacy(path: str, fh):
    """The object in a 1.x ``.tt`` file, read from the open binary file ``fh``; ``path`` names it in errors."""
    try:
        obj = _AllowListUnpickler(fh).load()
    except UnsafePickleError as exc:
        raise UnsafePickleError(f"{path}: {exc}") from None
    except FileFormatError as exc:
        raise FileFormatError(f"{path}: corrupt 1.x .tt file (a pickle): {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any failure inside a damaged pickle is a damaged file
        raise FileFormatError(
            f"{path}: truncated or corrupt 1.x .tt file (a pickle): {type(exc).__name__}: {exc}"
        ) from None
    try:
        _check_contents(obj, "obj")
    except UnsafePickleError as exc:
        raise UnsafePickleError(f"{path}: {exc}") from None
    except RecursionError:
        raise FileFormatError(f"{path}: corrupt 1.x .tt file (a pickle): nested too deeply or cyclic") from None
    return obj


_CONTAINERS = (dict, OrderedDict, list, tuple, set, frozenset)
_SCALARS = (type(None), bool, int, float, str, bytes, bytearray)


def _check_contents(obj, where: str) -> None:
    """Everything in ``obj`` is a container, a plain scalar or a bool/integer/float numpy array or scalar."""
    kind = type(obj)
    if kind in _SCALARS:
        return
    if kind is np.ndarray or isinstance(obj, np.generic):
        if obj.dtype.newbyteorder("=") not in ARRAY_DTYPES:
            raise UnsafePickleError(f"refused {where}, an array of dtype {obj.dtype}: {_REFUSAL}")
        return
    if kind not in _CONTAINERS:
        raise UnsafePickleError(f"refused {where}, a {kind.__module__}.{kind.__qualname__}: {_REFUSAL}")
    items = obj.items() if isinstance(obj, dict) else enumerate(obj)
    for key, value in items:
        _check_contents(key, f"{where} key")
        _check_contents(value, f"{where}[{key!r}]")
