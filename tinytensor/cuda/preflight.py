"""``python -m tinytensor [--json]``: the preflight report (backend, extension, CuPy, driver, GPUs).

``collect`` reads the one probe (``cuda.status``) into a JSON-ready dict and ``render`` prints it
for people. Nothing here probes the machine again or adds problems of its own: ``HAS_CUDA`` and the
report cannot disagree. The only new observation is which CUDA libraries the process has loaded.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections.abc import Sequence
from typing import Any, TypeAlias

from .._version import __version__
from . import extension, install
from .arch_support import support
from .loaded_libraries import loaded_cuda_libraries
from .status import MIN_DRIVER, CudaStatus, cuda_status, version_text

# A section of the report, ready for JSON: its values are strings, numbers, flags, lists and sections.
Section: TypeAlias = dict[str, Any]


def _cuda_libs_section() -> Section | None:
    """The release wheel's CUDA library distribution: which one it needs, whether it loaded, and
    for which GPU architectures its cuBLAS has native kernels."""
    wanted = install.build_config().get("cuda_libs")
    if not wanted:
        return None
    section: Section = {
        "needs": f"{wanted['distribution']}=={wanted['version']}",
        "loaded": extension.CUDA_LIBS is not None,
    }
    if extension.CUDA_LIBS is None:
        section["why_not"] = extension.CUDA_LIBS_ERROR or extension.unavailable_reason()
        return section
    archs = extension.CUDA_LIBS["cublas_archs"]
    section.update(
        {
            "version": extension.CUDA_LIBS["version"],
            "cublas_sass": archs["sass"],
            "cublas_ptx": archs["ptx"],
            "sources": [lib["source"] for lib in extension.CUDA_LIBS["libraries"]],
        }
    )
    return section


def _extension_section(status: CudaStatus) -> Section:
    config = install.build_config()
    section: Section = {"built": config.get("extension") == "built", "build_config": config}
    libs = _cuda_libs_section()
    if libs:
        section["cuda_libs"] = libs
    if not status.extension_loaded:
        section["loaded"] = False
        section["why_not"] = extension.unavailable_reason()
        return section
    section["loaded"] = True
    section["build_info"] = status.extension_build_info
    section["runtime_version"] = status.extension_runtime_version
    ops = extension.ops  # not None: the probe loaded it
    try:
        section["cublas_loaded_version"] = ops.cublas_version() if ops is not None else "unknown (not loaded)"
    except Exception as exc:  # noqa: BLE001 - shown, not needed: the report must not fail on it
        section["cublas_loaded_version"] = f"unknown ({type(exc).__name__}: {exc})"
    return section


def _cupy_section(status: CudaStatus) -> Section:
    if status.cupy_version is None:  # "installed": a package named cupy is there, but it does not work
        return {"installed": status.cupy_installed, "works": False, "why_not": status.cupy_error}
    section: Section = {
        "installed": True,
        "works": True,
        "version": status.cupy_version,
        "cuda_runtime": version_text(status.cupy_cuda_version),
    }
    section["nvrtc"] = ".".join(map(str, status.nvrtc_version)) if status.nvrtc_version else None
    if status.nvrtc_error:
        section["nvrtc_error"] = status.nvrtc_error
    return section


def _devices(status: CudaStatus) -> list[Section]:
    if not status.device_usable:
        return []
    devices: list[Section] = []
    for device in status.devices:
        entry: Section = {
            "index": device.index,
            "name": device.name,
            "compute_capability": device.compute_capability,
            "memory_gib": device.memory_gib,
        }
        if extension.CUDA_LIBS is not None:  # does the bundled cuBLAS have native kernels for this GPU?
            archs = extension.CUDA_LIBS["cublas_archs"]
            kind, detail = support(device.capability, archs["sass"], archs["ptx"])
            entry["cublas_kernels"] = {
                "support": kind,
                "detail": detail,
                "version": extension.CUDA_LIBS["version"],
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


def _needed_driver(status: CudaStatus) -> Section:
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


def _backend(status: CudaStatus) -> dict[str, str]:
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


def collect() -> Section:
    """Everything ``python -m tinytensor`` reports."""
    status = cuda_status()
    extension = _extension_section(status)
    config = extension["build_config"]
    unrecorded = "damaged build record" if install.build_config_damage() else "source tree"
    return {
        "package": {
            "distribution": config.get("distribution") or f"pytinytensor ({unrecorded})",
            "version": __version__,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
        },
        "install": {
            "variants": [f"{name} {version}" for name, version in install.installed_variants()],
            "conflict": install.conflict(current=config.get("distribution")),
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


def _yes(flag: object) -> str:
    return "yes" if flag else "no"


def render(facts: Section) -> str:
    """``collect()``'s report as text for people (``python -m tinytensor``)."""
    lines: list[str] = []
    add = lines.append
    pkg = facts["package"]
    add(f"tinytensor preflight: {pkg['distribution']} {pkg['version']} (Python {pkg['python']}, {pkg['platform']})")
    if facts["install"]["conflict"]:
        add(f"INSTALL CONFLICT: {facts['install']['conflict']}")
    backend = facts["backend"]
    add(f"backend: {backend['active']} - {backend['why']}")
    add(f"HAS_CUDA: {facts['has_cuda']}")

    ext = facts["extension"]
    add("")
    add(f"extension tinytensor.cuda_ops: built {_yes(ext['built'])}, loaded {_yes(ext['loaded'])}")
    if ext.get("why_not"):
        add(f"  why not: {ext['why_not']}")
    libs = ext.get("cuda_libs")
    if libs and libs["loaded"]:
        add(
            f"  CUDA libraries: {libs['needs']} loaded; its cuBLAS has native kernels for "
            f"sm_{', sm_'.join(map(str, libs['cublas_sass']))} (PTX compute_{', compute_'.join(map(str, libs['cublas_ptx']))})"
        )
    elif libs:
        add(f"  CUDA libraries: {libs['needs']} NOT LOADED: {libs['why_not']}")
    info = ext.get("build_info")
    if info:
        add(
            f"  compiled against CUDA {info['cuda_version']} (runtime header {info['cuda_runtime_version']}), "
            f"cuBLAS {info['cublas_version']}"
        )
        ptx = f", PTX compute_{info['ptx_archs']}" if info["ptx_archs"] else ""
        add(f"  architectures: SASS sm_{info['sass_archs'].replace(';', ', sm_')}{ptx}")
        add(f"  nvcc: {info['nvcc']}; host compiler: {info['host_compiler']}; binding: {info['binding_compiler']}")
        add(f"  nvcc flags: {info['nvcc_flags']}")
        add(f"  runtime loaded: {ext['runtime_version']}, cuBLAS loaded: {ext.get('cublas_loaded_version')}")

    cupy = facts["cupy"]
    add("")
    if cupy.get("version"):
        nvrtc = cupy.get("nvrtc") or f"NOT LOADABLE ({cupy.get('nvrtc_error')})"
        add(f"CuPy {cupy['version']} (CUDA runtime {cupy['cuda_runtime']}), NVRTC {nvrtc}")
    elif cupy["installed"]:
        add(f"CuPy: DOES NOT WORK ({cupy['why_not']})")
    else:
        add(f"CuPy: not installed ({cupy['why_not']})")

    driver = facts["driver"]
    if driver.get("cuda_version"):
        need = ""
        if driver.get("needs_cuda"):  # nothing installed says which CUDA it needs without CuPy or the extension
            verdict = "ok" if driver.get("ok") else "TOO OLD"
            need = f"; this install needs CUDA {driver['needs_cuda']} (driver >= {driver['minimum_driver']}): {verdict}"
        add(f"NVIDIA driver: supports CUDA {driver['cuda_version']}{need}")
        add(f"  library: {driver['library']}")
    else:
        need = f" (this install needs a driver >= {driver['minimum_driver']})" if driver.get("minimum_driver") else ""
        add(f"NVIDIA driver: none found{need}")

    add("")
    if facts["devices"]:
        for dev in facts["devices"]:
            add(
                f"GPU {dev['index']}: {dev['name']}, compute capability {dev['compute_capability']}, "
                f"{dev['memory_gib']} GiB"
            )
            cublas = dev.get("cublas_kernels")
            if cublas:
                native = "native kernels" if cublas["support"] == "sass" else "NO native kernels"
                add(f"  cuBLAS {cublas['version']}: {native} ({cublas['detail']})")
            kernels = dev.get("extension_kernels")
            if kernels and kernels["loads"]:
                add(f"  extension kernels: {kernels['detail']}; driver loaded: {kernels['loaded_image']}")
            elif kernels:
                add(f"  extension kernels: DO NOT LOAD ({kernels['loaded_image']}); CuPy's kernels are used")
    else:
        add("GPUs: none usable")

    add("")
    add("CUDA libraries loaded by this process:")
    libs = facts["loaded_libraries"]
    if libs:
        for name, paths in sorted(libs.items()):
            for path in paths:
                add(f"  {name:9s} {path}")
    else:
        add("  none")

    add("")
    if facts["problems"]:
        add("problems, each with its fix:")
        for p in facts["problems"]:
            scope = "blocks the GPU" if p["blocks_gpu"] else "extension only"
            add(f"  - [{scope}] {p['what']}")
            add(f"    fix: {p['fix']}")
    else:
        add("no problems found")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tinytensor [--json]``: print the report; returns the exit status (0)."""
    parser = argparse.ArgumentParser(prog="python -m tinytensor", description="tinytensor preflight diagnostics")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    facts = collect()
    if args.json:
        json.dump(facts, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        print(render(facts))
    return 0
