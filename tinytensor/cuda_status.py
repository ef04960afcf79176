"""Can the 'cuda' device be used? If not, exactly why, and what fixes it.

Probed once per process, lazily (importing tinytensor never imports CuPy). Two levels:
- ``device_usable``: CuPy imports, a driver new enough is loaded, a GPU is visible and NVRTC (which
  CuPy compiles its kernels with) loads. Then ``.to("cuda")`` works.
- ``HAS_CUDA``: all of that and the compiled extension ``tinytensor.cuda_ops`` imports, so GPU
  matmuls run in cuBLAS and the fused kernels are used.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass, field

from .errors import CudaUnavailableError

# Oldest Linux driver for each CUDA major (CUDA's minor-version compatibility).
MIN_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}


@dataclass
class Problem:
    what: str
    fix: str
    blocks_device: bool  # False: only the extension (HAS_CUDA) is affected


@dataclass
class CudaStatus:
    cupy_version: str | None = None
    cupy_cuda_version: int | None = None  # CUDA runtime CuPy was built with, e.g. 12080
    driver_version: int | None = None  # CUDA version the driver supports, e.g. 12040
    device_count: int = 0
    nvrtc_version: tuple | None = None
    extension_loaded: bool = False
    extension_cuda_version: int | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def device_usable(self) -> bool:
        return not any(p.blocks_device for p in self.problems)

    @property
    def has_cuda(self) -> bool:
        return not self.problems

    def reason(self) -> str | None:
        """Why HAS_CUDA is false (None when it is true): each problem with its fix."""
        if not self.problems:
            return None
        return "; ".join(f"{p.what} (fix: {p.fix})" for p in self.problems)


def version_text(v: int | None) -> str:
    return "unknown" if v is None else f"{v // 1000}.{(v % 1000) // 10}"


def _driver_version() -> tuple[int | None, str | None]:
    """The driver's CUDA version from libcuda.so.1 itself, or why it cannot be loaded."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return None, f"no NVIDIA driver: libcuda.so.1 cannot be loaded ({exc})"
    version = ctypes.c_int(0)
    rc = libcuda.cuDriverGetVersion(ctypes.byref(version))
    if rc != 0:
        return None, f"the NVIDIA driver does not answer: cuDriverGetVersion returned CUDA_ERROR {rc}"
    return version.value, None


def _probe() -> CudaStatus:
    status = CudaStatus()
    problems = status.problems
    driver, driver_error = _driver_version()
    status.driver_version = driver
    if driver_error:
        problems.append(Problem(driver_error, "install the NVIDIA driver (a CUDA toolkit is not needed)", True))

    try:
        import cupy  # noqa: F401 - presence is the point
    except ImportError as exc:
        problems.append(
            Problem(
                f"CuPy is not installed ({exc})",
                "pip install pytinytensor-cu12 (or cupy-cuda12x beside pytinytensor)",
                True,
            )
        )
        cupy = None
    if cupy is not None:
        status.cupy_version = cupy.__version__
        try:
            status.cupy_cuda_version = cupy.cuda.runtime.runtimeGetVersion()
        except Exception:  # noqa: BLE001 - recorded as unknown
            pass

    ext_cuda = _extension_probe(status)
    needed = [v for v in (status.cupy_cuda_version, ext_cuda) if v]
    if driver is not None and needed:
        major = max(v // 1000 for v in needed)
        if driver // 1000 < major:
            problems.append(
                Problem(
                    f"driver too old: it supports CUDA {version_text(driver)}, this install needs CUDA {major}.x",
                    f"update the NVIDIA driver to {MIN_DRIVER.get(major, 'a newer release')} or newer",
                    True,
                )
            )

    if cupy is not None and driver is not None:
        try:
            status.device_count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # noqa: BLE001 - CUDARuntimeError; message names the status
            problems.append(
                Problem(f"no usable CUDA device ({exc})", "check nvidia-smi and CUDA_VISIBLE_DEVICES", True)
            )
        else:
            if status.device_count == 0:
                problems.append(Problem("no CUDA device is visible", "check nvidia-smi and CUDA_VISIBLE_DEVICES", True))
    if cupy is not None:
        try:
            status.nvrtc_version = tuple(cupy.cuda.nvrtc.getVersion())
        except Exception as exc:  # noqa: BLE001 - DynamicLibNotFoundError and friends
            problems.append(
                Problem(
                    f"CuPy cannot load NVRTC, which compiles its GPU kernels ({type(exc).__name__}: {exc})",
                    "pip install nvidia-cuda-nvrtc-cu12 (pytinytensor-cu12 depends on it)",
                    True,
                )
            )
    return status


def _extension_probe(status: CudaStatus) -> int | None:
    from .backends import cuda_ext

    if cuda_ext.ops is None:
        status.problems.append(
            Problem(
                f"the CUDA extension is not available: {cuda_ext.unavailable_reason()}",
                cuda_ext.unavailable_fix(),
                False,
            )
        )
        return None
    status.extension_loaded = True
    status.extension_cuda_version = int(cuda_ext.ops.build_info()["cuda_runtime_version"])
    return status.extension_cuda_version


@functools.lru_cache(maxsize=1)
def cuda_status() -> CudaStatus:
    """The probe's result (cached for the process)."""
    return _probe()


def has_cuda() -> bool:
    return cuda_status().has_cuda


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
