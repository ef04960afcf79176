"""Can the 'cuda' device be used? If not, exactly why, and what fixes it.

The one probe of the machine: ``HAS_CUDA``, the backend's choice of kernels and the preflight
report (``python -m tinytensor``) all read its result, so they cannot disagree. Probed once per
process, lazily (importing tinytensor never imports CuPy). The probe never raises: whatever CuPy,
the driver or a GPU does (SystemExit included; only KeyboardInterrupt goes through), each failure
becomes a problem, with its exception's type and message and a fix, so ``HAS_CUDA`` is False
rather than a traceback. Three levels:

- ``device_usable``: CuPy imports, a driver new enough is loaded, a GPU is visible and NVRTC (which
  CuPy compiles its kernels with) loads. Then ``.to("cuda")`` works.
- ``fused_devices``: the GPUs on which the extension's own kernels load (its cuBLAS matmuls run on
  every GPU; its fused kernels only where the fatbin has code the GPU and driver can run).
- ``HAS_CUDA``: all of the above with no problem at all: the extension is used everywhere.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TypeVar

from ..errors import CudaUnavailableError
from .arch_support import parse_list, support
from .loaded_libraries import loaded_cuda_libraries

# Oldest Linux driver for each CUDA major (CUDA's minor-version compatibility).
MIN_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}

# CUresult values a driver probe meets in practice (cuGetErrorName is itself absent from a stub).
_CU_ERRORS = {
    3: "CUDA_ERROR_NOT_INITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY",
    100: "CUDA_ERROR_NO_DEVICE",
    303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
    304: "CUDA_ERROR_OPERATING_SYSTEM",
    803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    999: "CUDA_ERROR_UNKNOWN",
}
_STUB_LIBRARY = 34

_R = TypeVar("_R")


@dataclass
class Problem:
    """One thing that stops CUDA (or only the compiled extension) from being used, and its fix."""

    what: str
    fix: str
    blocks_device: bool  # False: only the extension (HAS_CUDA) is affected


@dataclass
class Device:
    """A GPU the probe found, and whether the extension's kernels load on it."""

    index: int
    name: str
    capability: int  # e.g. 90 for compute capability 9.0
    memory_gib: float
    kernels: str | None = None  # how the extension's kernels run here: "sass", "ptx-jit" or "none"
    kernels_detail: str | None = None
    kernels_error: str | None = None  # why they do not load (None: they do)
    kernel_image: tuple[int, ...] | None = None  # (SASS arch, PTX version) the driver loaded

    @property
    def compute_capability(self) -> str:
        """``"major.minor"``, e.g. ``"9.0"``."""
        return f"{self.capability // 10}.{self.capability % 10}"


@dataclass
class CudaStatus:
    """What the probe found (``tt.cuda_status()``): versions, GPUs and every problem with its fix."""

    cupy_version: str | None = None
    cupy_error: str | None = None  # why it cannot be used
    cupy_installed: bool = False  # a package named cupy is there (it may still fail)
    cupy_cuda_version: int | None = None  # CUDA runtime CuPy was built with, e.g. 12080
    driver_version: int | None = None  # CUDA version the driver supports, e.g. 12040
    driver_library: str | None = None  # the libcuda.so.1 that was loaded
    device_count: int = 0
    devices: list[Device] = field(default_factory=list)
    nvrtc_version: tuple[int, ...] | None = None  # (major, minor)
    nvrtc_error: str | None = None
    extension_loaded: bool = False
    extension_cuda_version: int | None = None
    extension_build_info: dict[str, str | int] = field(default_factory=dict)  # the extension's build_info()
    extension_runtime_version: int | None = None  # of the libcudart the extension loaded
    problems: list[Problem] = field(default_factory=list)

    @property
    def device_usable(self) -> bool:
        """Whether tensors can go to ``"cuda"``: no problem blocks the device (the extension may still be missing)."""
        return not any(p.blocks_device for p in self.problems)

    @property
    def has_cuda(self) -> bool:
        """``tt.HAS_CUDA``: the GPU and the compiled extension are usable, with no problem at all."""
        return not self.problems

    @property
    def fused_devices(self) -> frozenset[int]:
        """Indices of the GPUs where the extension's fused kernels load."""
        if not self.extension_loaded:
            return frozenset()
        return frozenset(d.index for d in self.devices if d.kernels_error is None)

    def reason(self) -> str | None:
        """Why HAS_CUDA is false (None when it is true): each problem with its fix."""
        if not self.problems:
            return None
        return "; ".join(f"{p.what} (fix: {p.fix})" for p in self.problems)


def version_text(v: int | None) -> str:
    """A CUDA version number as text: 12040 -> ``"12.4"``; None -> ``"unknown"``."""
    return "unknown" if v is None else f"{v // 1000}.{(v % 1000) // 10}"


def driver_problem(rc: int, library: str | None) -> str:
    """What a failing cuDriverGetVersion means, naming the library that answered."""
    where = f" loaded from {library}" if library else ""
    if rc == _STUB_LIBRARY:
        return (
            f"libcuda.so.1{where} is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), "
            "not the NVIDIA driver: it exists only so that programs link"
        )
    name = _CU_ERRORS.get(rc, "an unlisted CUresult")
    return f"the NVIDIA driver{where} does not answer: cuDriverGetVersion returned {rc} ({name})"


def driver_fix(rc: int, library: str | None) -> str:
    """The fix for ``driver_problem(rc, library)``."""
    if rc == _STUB_LIBRARY:
        folder = library.rsplit("/", 1)[0] if library else "the toolkit's lib64/stubs folder"
        return (
            f"take {folder} off LD_LIBRARY_PATH and /etc/ld.so.conf.d; in a container, start it with the "
            "NVIDIA Container Toolkit (docker run --gpus all) so that the host's driver is mounted"
        )
    return "check nvidia-smi; reinstall or reload the NVIDIA driver (a CUDA toolkit is not needed)"


def _error(exc: BaseException) -> str:
    """An exception as a user reports it: its type and message."""
    return f"{type(exc).__name__}: {exc}"


def _driver(status: CudaStatus) -> None:
    """The driver's CUDA version from libcuda.so.1 itself, or the problem that stops it."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        status.problems.append(
            Problem(
                f"no NVIDIA driver: libcuda.so.1 cannot be loaded ({exc})",
                "install the NVIDIA driver (a CUDA toolkit is not needed)",
                True,
            )
        )
        return
    paths = loaded_cuda_libraries().get("cuda", [])
    status.driver_library = paths[0] if paths else None
    try:
        get_version = libcuda.cuDriverGetVersion
    except AttributeError as exc:  # some other library named libcuda.so.1, found first
        library = status.driver_library or "libcuda.so.1"
        folder = library.rsplit("/", 1)[0] if "/" in library else "its folder"
        status.problems.append(
            Problem(
                f"{library} is not the NVIDIA driver: it has no cuDriverGetVersion ({_error(exc)})",
                f"take {folder} off LD_LIBRARY_PATH and /etc/ld.so.conf.d (or remove that file) so that the "
                "driver's libcuda.so.1 is found; install the NVIDIA driver if there is none",
                True,
            )
        )
        return
    version = ctypes.c_int(0)
    rc = get_version(ctypes.byref(version))
    if rc != 0:
        status.problems.append(
            Problem(driver_problem(rc, status.driver_library), driver_fix(rc, status.driver_library), True)
        )
        return
    status.driver_version = version.value


_REINSTALL_CUPY = (
    "reinstall CuPy for this machine's CUDA, one CuPy package only: pip install --force-reinstall cupy-cuda12x "
    "(cupy-cuda13x for CUDA 13); python -c 'import cupy' shows the whole error"
)


def _where(module: str) -> str:
    """Where ``module`` would be imported from, for a message (its spec's origin or folder)."""
    try:
        spec = importlib.util.find_spec(module)
    except Exception:  # noqa: BLE001 - only a detail of the message
        return module
    if spec is None:
        return module
    if spec.origin and os.path.isfile(spec.origin):  # a package's __init__.py: name its folder
        is_init = os.path.basename(spec.origin) == "__init__.py"
        return os.path.dirname(spec.origin) if is_init else spec.origin
    return next(iter(spec.submodule_search_locations or []), module)  # a namespace package


def _cupy(status: CudaStatus) -> ModuleType | None:
    """The imported CuPy, or None with the problem that stops it."""
    try:
        import cupy
    except ModuleNotFoundError as exc:
        if exc.name != "cupy":  # CuPy is there, one of its own imports is not
            _cupy_broken(status, exc)
            return None
        status.cupy_error = str(exc)
        status.problems.append(
            Problem(
                f"CuPy is not installed ({exc})",
                "pip install pytinytensor-cu12 (or cupy-cuda12x beside pytinytensor)",
                True,
            )
        )
        return None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a broken CuPy raises anything on import, SystemExit included
        _cupy_broken(status, exc)
        return None
    status.cupy_installed = True
    version = getattr(cupy, "__version__", None)
    if not isinstance(version, str):  # e.g. a folder named cupy ahead of the real one on sys.path
        where = _where("cupy")
        status.cupy_error = f"the cupy imported from {where} has no __version__"
        status.problems.append(
            Problem(
                f"the cupy module imported from {where} is not CuPy: it has no __version__",
                f"if {where} is not your CuPy (a folder named cupy shadows it), rename it or take its folder off "
                f"sys.path; otherwise {_REINSTALL_CUPY}",
                True,
            )
        )
        return None
    status.cupy_version = version
    try:
        status.cupy_cuda_version = cupy.cuda.runtime.runtimeGetVersion()
    except Exception:  # noqa: BLE001 - recorded as unknown
        pass
    module: ModuleType = cupy  # untyped to checkers: CuPy ships no type information
    return module


def _cupy_broken(status: CudaStatus, exc: BaseException) -> None:
    status.cupy_installed = True
    status.cupy_error = _error(exc)
    status.problems.append(
        Problem(f"CuPy at {_where('cupy')} does not import ({status.cupy_error})", _REINSTALL_CUPY, True)
    )


def _extension(status: CudaStatus) -> None:
    from . import extension  # importing it loads the CUDA libraries: only when CUDA is asked about

    if extension.ops is None:
        status.problems.append(
            Problem(
                f"the CUDA extension is not available: {extension.unavailable_reason()}",
                extension.unavailable_fix(),
                False,
            )
        )
        return
    info = dict(extension.ops.build_info())
    try:
        runtime = int(extension.ops.runtime_version())
    except Exception as exc:  # noqa: BLE001 - RuntimeError naming the CUDA error: its libcudart is broken
        status.problems.append(
            Problem(
                f"the CUDA extension's runtime does not answer (cudaRuntimeGetVersion: {_error(exc)}), "
                "so the extension is not used",
                "python -m tinytensor lists the libcudart this process loaded: reinstall the package it comes "
                "from (pytinytensor-cu12-libs, or the CUDA toolkit the extension was built with)",
                False,
            )
        )
        return
    status.extension_cuda_version = int(info["cuda_runtime_version"])
    status.extension_runtime_version = runtime
    status.extension_build_info = info
    status.extension_loaded = True  # last: an extension whose build_info or runtime fails is not used


def _driver_new_enough(status: CudaStatus) -> None:
    needed = [v for v in (status.cupy_cuda_version, status.extension_cuda_version) if v]
    if status.driver_version is None or not needed:
        return
    major = max(v // 1000 for v in needed)
    if status.driver_version // 1000 < major:
        status.problems.append(
            Problem(
                f"driver too old: it supports CUDA {version_text(status.driver_version)}, "
                f"this install needs CUDA {major}.x",
                f"update the NVIDIA driver to {MIN_DRIVER.get(major, 'a newer release')} or newer",
                True,
            )
        )


def _devices(status: CudaStatus, cupy: ModuleType) -> None:
    try:
        status.device_count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - CUDARuntimeError; its message names the status
        status.problems.append(
            Problem(
                f"no usable CUDA device: getDeviceCount failed ({_error(exc)})",
                "check nvidia-smi and CUDA_VISIBLE_DEVICES",
                True,
            )
        )
        return
    if status.device_count == 0:
        status.problems.append(Problem("no CUDA device is visible", "check nvidia-smi and CUDA_VISIBLE_DEVICES", True))
    for index in range(status.device_count):
        try:
            props = cupy.cuda.runtime.getDeviceProperties(index)
            name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
            device = Device(
                index, name, props["major"] * 10 + props["minor"], round(props["totalGlobalMem"] / 2**30, 1)
            )
        except Exception as exc:  # noqa: BLE001 - CUDARuntimeError, or an answer without the fields read
            status.problems.append(
                Problem(
                    f"GPU {index} does not answer a query of its properties (getDeviceProperties: {_error(exc)})",
                    "check the GPU with nvidia-smi (one in a failed state needs a reset or a reboot); "
                    "CUDA_VISIBLE_DEVICES can leave it out",
                    True,
                )
            )
            continue
        status.devices.append(device)


def _kernels(status: CudaStatus) -> None:
    """Load the extension's kernels on every GPU now, so a missing architecture or a driver that
    cannot JIT the PTX is found here (the backend then uses CuPy's kernels there), not at first use."""
    from . import extension

    info = status.extension_build_info
    sass, ptx = parse_list(info.get("sass_archs", "")), parse_list(info.get("ptx_archs", ""))
    for device in status.devices:
        device.kernels, device.kernels_detail = support(device.capability, sass, ptx)
        device.kernel_image, device.kernels_error = extension.load_kernels(device.index)
        if device.kernels_error is None:
            continue
        if device.kernels == "none":
            fix = (
                f"install a build whose architectures include sm_{device.capability}, or build from source "
                f"with TINYTENSOR_CUDA_ARCHS={device.capability}"
            )
        elif device.kernels == "ptx-jit":
            fix = (
                f"update the NVIDIA driver to one supporting CUDA {version_text(status.extension_cuda_version)}, "
                "which can JIT-compile the extension's PTX"
            )
        else:
            fix = "report it with the output of python -m tinytensor --json"
        status.problems.append(
            Problem(
                f"the extension's kernels cannot run on GPU {device.index} ({device.name}, compute capability "
                f"{device.compute_capability}; {device.kernels_detail}): {device.kernels_error}; tinytensor uses "
                "CuPy's kernels there instead of the fused ones",
                fix,
                False,
            )
        )


def _nvrtc(status: CudaStatus, cupy: ModuleType) -> None:
    try:
        status.nvrtc_version = tuple(cupy.cuda.nvrtc.getVersion())
    except Exception as exc:  # noqa: BLE001 - DynamicLibNotFoundError and friends
        status.nvrtc_error = _error(exc)
        status.problems.append(
            Problem(
                f"CuPy cannot load NVRTC, which compiles its GPU kernels ({status.nvrtc_error})",
                "pip install nvidia-cuda-nvrtc-cu12 (pytinytensor-cu12 depends on it)",
                True,
            )
        )


def _step(status: CudaStatus, what: str, blocks_device: bool, check: Callable[..., _R], *args: object) -> _R | None:
    """Run one check of the probe; whatever it raises beyond the failures it reports itself becomes
    a problem too, so the probe never raises (a SystemExit from a library included); only the user's
    KeyboardInterrupt goes through."""
    try:
        return check(status, *args)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a broken stack can raise anything; the user gets it as text
        status.problems.append(
            Problem(
                f"the CUDA probe failed while checking {what} ({_error(exc)})",
                "report it with the output of python -m tinytensor --json",
                blocks_device,
            )
        )
        return None


def _probe() -> CudaStatus:
    status = CudaStatus()
    _step(status, "the NVIDIA driver", True, _driver)
    cupy = _step(status, "CuPy", True, _cupy)
    _step(status, "the CUDA extension", False, _extension)
    _step(status, "the driver's CUDA version", True, _driver_new_enough)
    if cupy is not None and status.driver_version is not None:
        _step(status, "the GPUs", True, _devices, cupy)
        if status.extension_loaded and status.device_usable:
            _step(status, "the extension's kernels on each GPU", False, _kernels)
    if cupy is not None:
        _step(status, "NVRTC", True, _nvrtc, cupy)
    return status


@functools.lru_cache(maxsize=1)
def cuda_status() -> CudaStatus:
    """The probe's result (cached for the process)."""
    return _probe()


def cuda_unavailable_reason() -> str | None:
    """Why ``HAS_CUDA`` is False, with fixes; None when it is True."""
    return cuda_status().reason()


def require_cuda() -> None:
    """Raise CudaUnavailableError naming every blocking problem, unless the device is usable."""
    status = cuda_status()
    if status.device_usable:
        return
    blocking = [p for p in status.problems if p.blocks_device]
    others = [p for p in status.problems if not p.blocks_device]
    message = "the 'cuda' device cannot be used: " + "; ".join(f"{p.what} (fix: {p.fix})" for p in blocking)
    if others:  # e.g. the extension: not needed for the device, but the user will want it next
        message += "; also: " + "; ".join(p.what for p in others)
    raise CudaUnavailableError(message)
