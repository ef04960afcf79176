"""Devices: finding the backend of an array or a device, and moving arrays between devices.

Devices are named by strings or ``tt.device`` (``device_names``): ``"cpu"``, ``"cuda"`` /
``"cuda:N"``, and ``"strict:NAME"``, a fake device of ``array_api_strict`` that the CPU-only test
suite uses to catch device-placement bugs that would break on a GPU. ``backend_of(data)`` is one
dict lookup on ``type(data)``; the CuPy and array_api_strict backends are built on first use, so
importing tinytensor imports neither.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from .array_types import Array
from .backend import Backend
from .cuda.backend import CupyBackend
from .cuda.status import cuda_status, require_cuda
from .device_names import ParsedDevice, parse_device
from .errors import DeviceError
from .numpy_backend import NUMPY
from .strict_backend import StrictBackend

_BY_TYPE: dict[type, Backend] = {np.ndarray: NUMPY}


class _LazyBackends(TypedDict, total=False):
    """The backends built on first use (a plain dict at run time, typed per key)."""

    cupy: CupyBackend
    strict: StrictBackend


_lazy: _LazyBackends = {}


def backend_of(data: Array) -> Backend:
    """The backend for an array (numpy, cupy or array_api_strict)."""
    backend = _BY_TYPE.get(type(data))
    if backend is None:
        backend = _resolve(type(data))
    return backend


def _resolve(array_type: type) -> Backend:
    module = array_type.__module__.split(".")[0]
    backend: Backend
    if module == "cupy":
        backend = _cupy_backend()
    elif module == "array_api_strict":
        backend = _strict_backend()
    else:
        raise TypeError(
            f"tinytensor arrays must be numpy or cupy arrays, got {array_type.__module__}.{array_type.__name__}"
        )
    _BY_TYPE[array_type] = backend
    return backend


def _cupy_backend() -> CupyBackend:
    """The CuPy backend, with the extension where the one probe found it usable."""
    if "cupy" not in _lazy:
        import cupy

        from .cuda import extension  # loads the CUDA libraries: only once a CuPy array exists

        status = cuda_status()
        ext = extension if status.extension_loaded else None
        _lazy["cupy"] = CupyBackend(cupy, ext, status.fused_devices)
    return _lazy["cupy"]


def _strict_backend() -> StrictBackend:
    if "strict" not in _lazy:
        try:
            import array_api_strict
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise DeviceError(
                "the 'strict:' test devices need the array_api_strict package: pip install array-api-strict"
            ) from exc
        _lazy["strict"] = StrictBackend(array_api_strict)
    return _lazy["strict"]


def same_device(kind_index: ParsedDevice, data: Array) -> bool:
    """Whether ``data`` is on the parsed device (for ``"cuda"`` without an index: on any GPU)."""
    kind, index = kind_index
    backend = backend_of(data)
    if backend.kind != kind:
        return False
    if kind == "cuda":
        device_id: int = data.device.id
        return index is None or device_id == index
    if kind == "strict":
        return backend.device(data) == f"strict:{index}"
    return True


def backend_for(kind_index: ParsedDevice) -> Backend:
    """The backend that holds arrays of a parsed device; CUDA is checked for usability first."""
    kind, index = kind_index
    if kind == "cuda":
        require_cuda()
        count = cuda_status().device_count
        if isinstance(index, int) and index >= count:  # a CUDA index is an int or None
            visible = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
            raise DeviceError(
                f"device 'cuda:{index}' does not exist: {count} CUDA device{'s' if count != 1 else ''} "
                f"visible ({visible}; CUDA_VISIBLE_DEVICES decides which)"
            )
        return _cupy_backend()
    if kind == "strict":
        return _strict_backend()
    return NUMPY


def device_of(data: Array) -> ParsedDevice:
    """The parsed device (kind, index) that holds ``data``, as ``transfer`` takes it."""
    return parse_device(backend_of(data).device(data))


def transfer(data: Array, kind_index: ParsedDevice) -> Array:
    """Copy ``data`` to the parsed device; returns ``data`` itself when it is already there."""
    if same_device(kind_index, data):
        return data
    kind, index = kind_index
    target = backend_for(kind_index)
    source = backend_of(data)
    if source is target and kind == "cuda":
        with target.xp.cuda.Device(index):
            return target.xp.asarray(data)  # peer copy between GPUs
    return target.from_numpy(source.to_numpy(data), index)
