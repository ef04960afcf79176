"""Where CuPy finds the CUDA runtime headers its kernels are compiled against, and whether they
compile: CuPy's own lookup (the compiler options it assembles before every NVRTC compile), then one
kernel of the kind CuPy generates, compiled with those options by NVRTC. Neither needs a GPU.

On a machine with only a driver there is no toolkit: the headers must come with the install
(nvidia-cuda-runtime-cuNN, under site-packages/nvidia/). Without them CuPy's first elementwise op
fails with "Failed to find CUDA headers".

    python ci/release/cupy_headers.py     # prints the facts as JSON; exit status 1 on a problem

Run in the environment to check, in a process of its own (CuPy caches the lookup), as a file: it
imports nothing of the project. The release rehearsal's fresh install, its installed-wheel tests
and the GPU check run it.
"""

from __future__ import annotations

import json
import re
import sys
import sysconfig
from pathlib import Path

# What CuPy's elementwise and reduction kernels include (cupy/carray.cuh includes cuda_fp16.h).
KERNEL = (
    "#include <cupy/complex.cuh>\n#include <cupy/carray.cuh>\n#include <cupy/atomics.cuh>\n"
    'extern "C" __global__ void k(CArray<float, 1, true, true> x) { x[0] = 1.0f; }\n'
)


def facts() -> dict:
    import cupy
    from cupy._core import core
    from cupy.cuda import nvrtc

    found: dict = {"cupy": cupy.__version__, "problems": []}
    options = list(core.assemble_cupy_compiler_options(()))
    includes = [o.removeprefix("-I") for o in options if o.startswith("-I")]
    found["include_dirs"] = includes
    runtime = [d for d in includes if (Path(d) / "cuda_runtime.h").is_file()]
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    if not runtime:
        found["problems"].append(f"no include directory CuPy assembles holds cuda_runtime.h: {includes}")
    else:
        headers = Path(runtime[0])
        found["runtime_headers"] = str(headers)
        version = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", (headers / "cuda_runtime_api.h").read_text())
        found["headers_cuda_version"] = int(version.group(1)) if version else None
        found["inside_environment"] = headers.resolve().is_relative_to(site)
        major = int(cupy.cuda.runtime.runtimeGetVersion()) // 1000
        if not found["inside_environment"]:
            found["problems"].append(f"the CUDA runtime headers come from {headers}, outside the environment ({site})")
        if found["headers_cuda_version"] is None or found["headers_cuda_version"] // 1000 != major:
            found["problems"].append(f"the headers are CUDA {found['headers_cuda_version']}, CuPy is built for {major}")
    program = nvrtc.createProgram(KERNEL, "k.cu", [], [])
    try:
        nvrtc.compileProgram(program, [*options, "-arch=compute_70"])
        found["compiled"] = b".entry k" in nvrtc.getPTX(program)
    except Exception as exc:  # noqa: BLE001 - NVRTCError, with the compiler's log beside it
        found["compiled"] = False
        found["problems"].append(f"NVRTC does not compile CuPy's kernel headers: {exc}: {nvrtc.getProgramLog(program)}")
    finally:
        nvrtc.destroyProgram(program)
    return found


if __name__ == "__main__":
    try:
        result = facts()
    except Exception as exc:  # noqa: BLE001 - e.g. CuPy's own "Failed to find CUDA headers"
        result = {"problems": [f"{type(exc).__name__}: {exc}"]}
    print(json.dumps(result))
    sys.exit(1 if result["problems"] else 0)
