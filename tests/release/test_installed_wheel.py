"""An installed pytinytensor-cu12 wheel on a machine with no CUDA toolkit: everything the GPU path
will load does load, from where it should (cudart and cuBLAS from pytinytensor-cu12-libs), even
with another CUDA on LD_LIBRARY_PATH; without that distribution, or with another version of it,
the library says so, naming both versions.

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
from tinytensor import cuda_extension  # noqa: E402

PACKAGE = Path(tinytensor.__file__).resolve().parent
SITE = PACKAGE.parent
CONFIG = cuda_extension.build_config()
WANTED = CONFIG.get("cuda_libs") or {}
LIBS_PACKAGE = SITE / WANTED.get("module", "tinytensor_cu12_libs")
LIBS = LIBS_PACKAGE / "lib"

PROBE = """
import json, tinytensor.cuda_ops as ops
from tinytensor.diagnostics.libraries import loaded_cuda_libraries
print(json.dumps({"libs": loaded_cuda_libraries(), "runtime": ops.runtime_version(), "cublas": ops.cublas_version()}))
"""


# What tinytensor reports once the extension has been given its chance (no GPU needed).
REASON = """
import json, tinytensor
from tinytensor import cuda_extension
print(json.dumps({"loaded": cuda_extension.ops is not None, "reason": cuda_extension.unavailable_reason(),
                  "fix": cuda_extension.unavailable_fix()}))
"""


def _run(code: str, env_extra: dict | None = None, prelude: str = "") -> dict:
    env = dict(os.environ, **(env_extra or {}))
    proc = subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, env=env, cwd=SITE.parent
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _probe(env_extra: dict | None = None) -> dict:
    return _run(PROBE, env_extra)


def _assert_from_libs_distribution(libs: dict) -> None:
    for name in ("cudart", "cublas", "cublasLt"):
        paths = libs.get(name, [])
        assert paths, f"{name} is not loaded: {libs}"
        for path in paths:
            assert Path(path).parent == LIBS, f"{name} loaded from {path}, not {WANTED.get('distribution')}'s {LIBS}"
            assert Path(path).name == f"lib{name}-tinytensor.so.12", path


def test_the_wheel_names_its_library_distribution_and_carries_no_cuda():
    assert WANTED.get("distribution") == "pytinytensor-cu12-libs", CONFIG
    assert not list(SITE.glob("pytinytensor_cu*.libs")), "auditwheel grafted libraries into the per-Python wheel"
    import importlib.metadata as md

    assert f"{WANTED['distribution']}=={WANTED['version']}" in (md.requires("pytinytensor-cu12") or [])
    assert md.version(WANTED["distribution"]) == WANTED["version"]


def test_extension_loads_the_libraries_of_the_library_distribution():
    assert cuda_extension.ops is not None, cuda_extension.unavailable_reason()
    assert LIBS.is_dir(), f"no {LIBS}"
    found = _probe()
    _assert_from_libs_distribution(found["libs"])
    assert found["runtime"] // 1000 == cuda_extension.ops.build_info()["cuda_runtime_version"] // 1000
    through_tinytensor = _run(
        "import json\nfrom tinytensor import cuda_extension\n"
        "from tinytensor.diagnostics.libraries import loaded_cuda_libraries\n"
        "assert cuda_extension.ops is not None, cuda_extension.unavailable_reason()\n"
        "print(json.dumps(loaded_cuda_libraries()))"
    )
    _assert_from_libs_distribution(through_tinytensor)


def test_without_the_library_distribution_the_reason_names_it():
    # As if it were not installed: Python's own way to make an import fail (sys.modules[name] = None).
    blocked = f"import sys\nsys.modules[{WANTED['module']!r}] = None\n"
    found = _run(REASON, prelude=blocked)
    need = f"{WANTED['distribution']}=={WANTED['version']}"
    assert not found["loaded"]
    assert need in found["reason"] and "not installed" in found["reason"], found
    assert f'pip install "{need}"' in found["fix"], found


def test_another_version_of_the_library_distribution_names_both(tmp_path):
    # A real copy of the installed package that says it is another version, first on sys.path.
    impostor = tmp_path / WANTED["module"]
    impostor.mkdir()
    (impostor / "__init__.py").write_text((LIBS_PACKAGE / "__init__.py").read_text())
    manifest = json.loads((LIBS_PACKAGE / "manifest.json").read_text())
    manifest["version"] = "12.0.0.1"
    (impostor / "manifest.json").write_text(json.dumps(manifest))
    (impostor / "lib").symlink_to(LIBS)
    found = _run(REASON, {"PYTHONPATH": str(tmp_path)})
    assert not found["loaded"]
    assert WANTED["version"] in found["reason"] and "12.0.0.1" in found["reason"], found


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
    must not replace ours: tinytensor loads them by path, and their names are our own."""
    hostile = sorted(set(os.path.dirname(p) for p in glob.glob("/usr/local/cuda*/lib64/libcudart.so*")))
    cache = Path(os.environ.get("PYTINYTENSOR_CACHE", Path.home() / ".cache" / "pytinytensor"))
    hostile += [str(d) for d in cache.glob("cuda-12*/lib64") if d.is_dir()]
    if not hostile:
        pytest.skip(reason="no other CUDA libraries on this machine to put on LD_LIBRARY_PATH")
    found = _probe({"LD_LIBRARY_PATH": ":".join(hostile)})
    _assert_from_libs_distribution(found["libs"])


def test_a_cublas_another_package_loaded_globally_does_not_answer():
    """PyTorch's libtorch_global_deps loads its cuBLAS RTLD_GLOBAL, with the same symbol and version
    names as ours: without RTLD_DEEPBIND the extension's calls would bind to it (measured: 12.4's
    answered). They must reach the library wheel's cuBLAS."""
    cache = Path(os.environ.get("PYTINYTENSOR_CACHE", Path.home() / ".cache" / "pytinytensor"))
    found = sorted(glob.glob("/usr/local/cuda-12*/lib64/libcublas.so.12")) + sorted(
        str(p) for p in cache.glob("cuda-12*/lib64/libcublas.so.12")
    )
    if not found:
        pytest.skip(reason="no other CUDA 12 cuBLAS on this machine to load first")
    folder = Path(found[0]).parent
    preload = (
        "import ctypes, os\n"
        f"for name in ('libcublasLt.so.12', 'libcublas.so.12'):\n"
        f"    ctypes.CDLL(os.path.join({str(folder)!r}, name), mode=os.RTLD_GLOBAL)\n"
    )
    # the other cuBLAS's version (MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL), as the extension reports one
    other = _run(
        "import ctypes, json\nlib = ctypes.CDLL('libcublas.so.12')\nparts = []\n"
        "for prop in (0, 1, 2):\n    v = ctypes.c_int()\n    lib.cublasGetProperty(prop, ctypes.byref(v))\n"
        "    parts.append(v.value)\nprint(json.dumps(parts[0] * 10000 + parts[1] * 100 + parts[2]))",
        prelude=preload,
    )
    major, minor, patch = (int(part) for part in WANTED["version"].split(".")[:3])
    ours = major * 10000 + minor * 100 + patch
    if other == ours:
        pytest.skip(reason=f"the other cuBLAS in {folder} is our version too: the test could not tell them apart")
    result = _run(
        "import json\nfrom tinytensor import cuda_extension as c\n"
        "assert c.ops is not None, c.unavailable_reason()\nprint(json.dumps(c.ops.cublas_version()))",
        prelude=preload,
    )
    assert result == ours, f"cuBLAS {result} answered (the other is {other}), not {WANTED['version']}"


def test_no_driver_library_is_installed():
    names = [p.name for p in LIBS.iterdir()]
    assert not [n for n in names if re.match(r"libcuda[-.]|libnvidia-", n)], names
    assert sorted(names) == sorted(WANTED["libraries"]), names
