"""Collect the facts the preflight report shows, as one JSON-ready dict.

Every probe is defensive: on a machine with no GPU, no driver, no CuPy or no extension, the
matching section says so (and why) instead of raising.
"""

from __future__ import annotations

import platform
import sys

from .._version import __version__
from ..backends import cuda_ext
from ..cuda_status import MIN_DRIVER, cuda_status, version_text
from .archs import parse_list, support
from .libraries import loaded_cuda_libraries


def _extension_section() -> dict:
    config = cuda_ext.build_config()
    section = {"built": config.get("extension") == "built", "build_config": config}
    if cuda_ext.ops is None:
        section["loaded"] = False
        section["why_not"] = cuda_ext.unavailable_reason()
        return section
    section["loaded"] = True
    section["build_info"] = dict(cuda_ext.ops.build_info())
    section["runtime_version"] = cuda_ext.ops.runtime_version()
    try:
        section["cublas_loaded_version"] = cuda_ext.ops.cublas_version()
    except RuntimeError as exc:
        section["cublas_loaded_version"] = f"unknown ({exc})"
    return section


def _cupy_section() -> dict:
    try:
        import cupy
    except ImportError as exc:
        return {"installed": False, "why_not": str(exc)}
    section = {"installed": True, "version": cupy.__version__}
    try:
        section["cuda_runtime"] = version_text(cupy.cuda.runtime.runtimeGetVersion())
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        section["cuda_runtime"] = f"unknown ({exc})"
    try:
        section["nvrtc"] = ".".join(map(str, cupy.cuda.nvrtc.getVersion()))
    except Exception as exc:  # noqa: BLE001
        section["nvrtc"] = None
        section["nvrtc_error"] = f"{type(exc).__name__}: {exc}"
    return section


def _devices(status, extension: dict) -> list[dict]:
    if not status.device_count:
        return []
    import cupy

    info = extension.get("build_info", {})
    sass, ptx = parse_list(info.get("sass_archs", "")), parse_list(info.get("ptx_archs", ""))
    devices = []
    for index in range(status.device_count):
        props = cupy.cuda.runtime.getDeviceProperties(index)
        capability = props["major"] * 10 + props["minor"]
        entry = {
            "index": index,
            "name": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
            "compute_capability": f"{props['major']}.{props['minor']}",
            "memory_gib": round(props["totalGlobalMem"] / 2**30, 1),
        }
        if extension.get("loaded"):
            kind, detail = support(capability, sass, ptx)
            entry["extension_kernels"] = {"support": kind, "detail": detail}
            try:
                binary, ptx_version = cuda_ext.ops.kernel_image(index)
                entry["extension_kernels"]["loaded_image"] = {"binary_version": binary, "ptx_version": ptx_version}
            except RuntimeError as exc:
                entry["extension_kernels"]["loaded_image"] = f"error: {exc}"
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
    extension = _extension_section()
    config = extension["build_config"]
    report = {
        "package": {
            "distribution": config.get("distribution", "pytinytensor (source tree)"),
            "version": __version__,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
        },
        "backend": _backend(status),
        "has_cuda": status.has_cuda,
        "extension": extension,
        "cupy": _cupy_section(),
        "driver": {
            "cuda_version": version_text(status.driver_version) if status.driver_version else None,
            **_needed_driver(status),
        },
        "devices": _devices(status, extension),
        "loaded_libraries": loaded_cuda_libraries(),
        "problems": [{"what": p.what, "fix": p.fix, "blocks_gpu": p.blocks_device} for p in status.problems],
    }
    for device in report["devices"]:
        kernels = device.get("extension_kernels")
        jit_needs = status.extension_cuda_version
        if kernels and kernels["support"] == "ptx-jit" and (status.driver_version or 0) < (jit_needs or 0):
            report["problems"].append(
                {
                    "what": f"GPU {device['index']} runs the extension's kernels only by JIT-compiling PTX from "
                    f"CUDA {version_text(jit_needs)}, which this driver (CUDA {version_text(status.driver_version)}) "
                    "cannot do",
                    "fix": f"update the NVIDIA driver to one supporting CUDA {version_text(jit_needs)}",
                    "blocks_gpu": False,
                }
            )
        if kernels and kernels["support"] == "none":
            report["problems"].append(
                {
                    "what": f"GPU {device['index']} ({device['name']}, sm_{device['compute_capability']}): "
                    f"{kernels['detail']}",
                    "fix": "install a build that includes this architecture, or build from source with "
                    "TINYTENSOR_CUDA_ARCHS naming it",
                    "blocks_gpu": False,
                }
            )
    return report
