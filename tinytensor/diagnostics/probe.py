"""The preflight report's facts, as one JSON-ready dict, read from the one probe (``cuda_status``).

Nothing here probes the machine again or adds problems of its own: ``HAS_CUDA`` and the report
cannot disagree. The only new observation is which CUDA libraries the process has loaded.
"""

from __future__ import annotations

import platform
import sys

from .. import cuda_extension, install_check
from .._version import __version__
from ..cuda_status import MIN_DRIVER, cuda_status, version_text
from .archs import support
from .libraries import loaded_cuda_libraries


def _cuda_libs_section() -> dict | None:
    """The release wheel's CUDA library distribution: which one it needs, whether it loaded, and
    for which GPU architectures its cuBLAS has native kernels."""
    wanted = cuda_extension.build_config().get("cuda_libs")
    if not wanted:
        return None
    section = {
        "needs": f"{wanted['distribution']}=={wanted['version']}",
        "loaded": cuda_extension.CUDA_LIBS is not None,
    }
    if cuda_extension.CUDA_LIBS is None:
        section["why_not"] = cuda_extension.CUDA_LIBS_ERROR or cuda_extension.unavailable_reason()
        return section
    archs = cuda_extension.CUDA_LIBS["cublas_archs"]
    section.update(
        {
            "version": cuda_extension.CUDA_LIBS["version"],
            "cublas_sass": archs["sass"],
            "cublas_ptx": archs["ptx"],
            "sources": [lib["source"] for lib in cuda_extension.CUDA_LIBS["libraries"]],
        }
    )
    return section


def _extension_section(status) -> dict:
    config = cuda_extension.build_config()
    section = {"built": config.get("extension") == "built", "build_config": config}
    libs = _cuda_libs_section()
    if libs:
        section["cuda_libs"] = libs
    if not status.extension_loaded:
        section["loaded"] = False
        section["why_not"] = cuda_extension.unavailable_reason()
        return section
    section["loaded"] = True
    section["build_info"] = status.extension_build_info
    section["runtime_version"] = cuda_extension.ops.runtime_version()
    try:
        section["cublas_loaded_version"] = cuda_extension.ops.cublas_version()
    except RuntimeError as exc:
        section["cublas_loaded_version"] = f"unknown ({exc})"
    return section


def _cupy_section(status) -> dict:
    if status.cupy_version is None:
        return {"installed": False, "why_not": status.cupy_error}
    section = {
        "installed": True,
        "version": status.cupy_version,
        "cuda_runtime": version_text(status.cupy_cuda_version),
    }
    section["nvrtc"] = ".".join(map(str, status.nvrtc_version)) if status.nvrtc_version else None
    if status.nvrtc_error:
        section["nvrtc_error"] = status.nvrtc_error
    return section


def _devices(status) -> list[dict]:
    if not status.device_usable:
        return []
    devices = []
    for device in status.devices:
        entry = {
            "index": device.index,
            "name": device.name,
            "compute_capability": device.compute_capability,
            "memory_gib": device.memory_gib,
        }
        if cuda_extension.CUDA_LIBS is not None:  # does the bundled cuBLAS have native kernels for this GPU?
            archs = cuda_extension.CUDA_LIBS["cublas_archs"]
            kind, detail = support(device.capability, archs["sass"], archs["ptx"])
            entry["cublas_kernels"] = {
                "support": kind,
                "detail": detail,
                "version": cuda_extension.CUDA_LIBS["version"],
            }
        if device.kernels is not None:
            entry["extension_kernels"] = {
                "support": device.kernels,
                "detail": device.kernels_detail,
                "loads": device.kernels_error is None,
                "loaded_image": device.kernel_image
                if device.kernels_error is None
                else f"error: {device.kernels_error}",
            }
        devices.append(entry)
    return devices


def _needed_driver(status) -> dict:
    majors = [v // 1000 for v in (status.cupy_cuda_version, status.extension_cuda_version) if v]
    if not majors:
        return {"needs": None}
    major = max(majors)
    ok = status.driver_version is not None and status.driver_version // 1000 >= major
    return {
        "needs_cuda": f"{major}.x",
        "minimum_driver": MIN_DRIVER.get(major),
        "driver_supports": version_text(status.driver_version) if status.driver_version else None,
        "ok": ok,
    }


def _backend(status) -> dict:
    if status.has_cuda:
        return {"active": "cuda", "why": "CuPy, a usable GPU and the compiled extension are all present"}
    slow = sorted({d.index for d in status.devices} - status.fused_devices)
    if status.device_usable and status.extension_loaded and slow:
        return {
            "active": "cuda (extension partly)",
            "why": "matmuls run in the extension's cuBLAS everywhere; on GPU "
            + ", ".join(map(str, slow))
            + " its fused kernels cannot load, so CuPy's kernels are used there",
        }
    if status.device_usable:
        return {
            "active": "cuda (CuPy only)",
            "why": "the GPU works through CuPy; the extension is missing, so matmuls use CuPy's cuBLAS "
            "and the fused kernels are not used",
        }
    blocking = [p.what for p in status.problems if p.blocks_device]
    return {"active": "cpu", "why": "; ".join(blocking)}


def collect() -> dict:
    """Everything ``python -m tinytensor`` reports."""
    status = cuda_status()
    extension = _extension_section(status)
    config = extension["build_config"]
    return {
        "package": {
            "distribution": config.get("distribution", "pytinytensor (source tree)"),
            "version": __version__,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
        },
        "install": {
            "variants": [f"{name} {version}" for name, version in install_check.installed_variants()],
            "conflict": install_check.conflict(current=config.get("distribution")),
        },
        "backend": _backend(status),
        "has_cuda": status.has_cuda,
        "extension": extension,
        "cupy": _cupy_section(status),
        "driver": {
            "cuda_version": version_text(status.driver_version) if status.driver_version else None,
            "library": status.driver_library,
            **_needed_driver(status),
        },
        "devices": _devices(status),
        "loaded_libraries": loaded_cuda_libraries(),
        "problems": [{"what": p.what, "fix": p.fix, "blocks_gpu": p.blocks_device} for p in status.problems],
    }
