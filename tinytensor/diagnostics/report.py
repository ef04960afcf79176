"""Render the preflight facts for people (``--json`` prints the dict itself)."""

from __future__ import annotations


def _yes(flag) -> str:
    return "yes" if flag else "no"


def render(facts: dict) -> str:
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
    if cupy["installed"]:
        nvrtc = cupy.get("nvrtc") or f"NOT LOADABLE ({cupy.get('nvrtc_error')})"
        add(f"CuPy {cupy['version']} (CUDA runtime {cupy['cuda_runtime']}), NVRTC {nvrtc}")
    else:
        add(f"CuPy: not installed ({cupy['why_not']})")

    driver = facts["driver"]
    if driver.get("cuda_version"):
        verdict = "ok" if driver.get("ok") else "TOO OLD"
        need = f"; this install needs CUDA {driver['needs_cuda']} (driver >= {driver['minimum_driver']}): {verdict}"
        add(f"NVIDIA driver: supports CUDA {driver['cuda_version']}" + (need if driver.get("needs_cuda") else ""))
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
