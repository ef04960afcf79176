"""An installed pytinytensor-cu12 wheel on a machine with no CUDA toolkit: everything the GPU path
will load does load, from where it should, even with another CUDA on LD_LIBRARY_PATH.

Runs where the release rehearsal (or cibuildwheel's test step) sets TT_INSTALLED_WHEEL=1.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

if os.environ.get("TT_INSTALLED_WHEEL") != "1":
    pytest.skip(reason="an installed CUDA wheel (TT_INSTALLED_WHEEL=1): release rehearsal", allow_module_level=True)

import tinytensor  # noqa: E402
from tinytensor.backends import cuda_ext  # noqa: E402

PACKAGE = Path(tinytensor.__file__).resolve().parent
SITE = PACKAGE.parent
LIBS = next(SITE.glob("pytinytensor_cu*.libs"), None)

PROBE = """
import json, tinytensor.cuda_ops as ops
from tinytensor.diagnostics.libraries import loaded_cuda_libraries
print(json.dumps({"libs": loaded_cuda_libraries(), "runtime": ops.runtime_version(), "cublas": ops.cublas_version()}))
"""


def _probe(env_extra: dict | None = None) -> dict:
    env = dict(os.environ, **(env_extra or {}))
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=SITE.parent)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _assert_bundled(libs: dict) -> None:
    for name in ("cudart", "cublas", "cublasLt"):
        paths = libs.get(name, [])
        assert paths, f"{name} is not loaded: {libs}"
        for path in paths:
            assert Path(path).parent == LIBS, f"{name} loaded from {path}, not the wheel's {LIBS}"
            assert re.match(rf"lib{name}-[0-9a-f]{{8}}\.so", Path(path).name), path


def test_extension_loads_its_bundled_libraries():
    assert cuda_ext.ops is not None, cuda_ext.IMPORT_ERROR
    assert LIBS is not None and LIBS.is_dir(), f"no pytinytensor_cu*.libs beside {PACKAGE}"
    found = _probe()
    _assert_bundled(found["libs"])
    assert found["runtime"] // 1000 == cuda_ext.ops.build_info()["cuda_runtime_version"] // 1000


def test_nvrtc_loads_and_compiles_for_cupy():
    """CuPy compiles its kernels with NVRTC: it must load (from nvidia-cuda-nvrtc-cu12) and compile
    (NVRTC needs no GPU: this is the same call CuPy makes, minus the launch)."""
    import cupy
    from cupy.cuda import nvrtc

    assert nvrtc.getVersion()[0] == 12
    program = nvrtc.createProgram('extern "C" __global__ void k(float* x) { x[0] = 1.0f; }', "k.cu", [], [])
    try:
        nvrtc.compileProgram(program, ["-arch=compute_70"])
        assert b".entry k" in nvrtc.getPTX(program)
    finally:
        nvrtc.destroyProgram(program)
    from tinytensor.diagnostics.libraries import loaded_cuda_libraries

    nvrtc_paths = loaded_cuda_libraries().get("nvrtc", [])
    assert nvrtc_paths and all(str(SITE) in p for p in nvrtc_paths), nvrtc_paths
    assert cupy.__version__


def test_bundled_libraries_win_over_another_cuda_on_ld_library_path():
    """Another CUDA's libcudart (this machine's CUDA 13, the toolkit's own 12.x) on LD_LIBRARY_PATH
    must not replace the wheel's: the bundled names are hash-renamed and found by RPATH."""
    hostile = sorted(set(os.path.dirname(p) for p in glob.glob("/usr/local/cuda*/lib64/libcudart.so*")))
    cache = Path(os.environ.get("PYTINYTENSOR_CACHE", Path.home() / ".cache" / "pytinytensor"))
    hostile += [str(d) for d in cache.glob("cuda-12*/lib64") if d.is_dir()]
    if not hostile:
        pytest.skip(reason="no other CUDA libraries on this machine to put on LD_LIBRARY_PATH")
    found = _probe({"LD_LIBRARY_PATH": ":".join(hostile)})
    _assert_bundled(found["libs"])


def test_wheel_carries_no_driver_library():
    names = [p.name for p in LIBS.iterdir()]
    assert not [n for n in names if re.match(r"libcuda(-[0-9a-f]{8})?\.so|libnvidia-", n)], names
    assert any(n.startswith("libcudart-") for n in names), names
