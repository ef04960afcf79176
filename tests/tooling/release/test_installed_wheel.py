"""An installed pytinytensor-cu12 wheel on a machine with no CUDA toolkit: everything the GPU path
will load does load, from where it should (cudart and cuBLAS from pytinytensor-cu12-libs, NVRTC
from its pinned distribution, first), even with another CUDA on LD_LIBRARY_PATH or another cuBLAS
loaded into the global scope; allocators preloaded with LD_PRELOAD work; without that distribution,
or with another version of it, the library says so, naming both versions.

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
from tinytensor.cuda import extension, install  # noqa: E402

PACKAGE = Path(tinytensor.__file__).resolve().parent
SITE = PACKAGE.parent
CONFIG = install.build_config()
WANTED = CONFIG.get("cuda_libs") or {}
LIBS_PACKAGE = SITE / WANTED.get("module", "tinytensor_cu12_libs")
LIBS = LIBS_PACKAGE / "lib"

PROBE = """
import json, tinytensor.cuda_ops as ops
from tinytensor.cuda.loaded_libraries import loaded_cuda_libraries
print(json.dumps({"libs": loaded_cuda_libraries(), "runtime": ops.runtime_version(), "cublas": ops.cublas_version()}))
"""


# What tinytensor reports once the extension has been given its chance (no GPU needed).
REASON = """
import json, tinytensor
from tinytensor.cuda import extension
print(json.dumps({"loaded": extension.ops is not None, "reason": extension.unavailable_reason(),
                  "fix": extension.unavailable_fix()}))
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
    assert extension.ops is not None, extension.unavailable_reason()
    assert LIBS.is_dir(), f"no {LIBS}"
    found = _probe()
    _assert_from_libs_distribution(found["libs"])
    assert found["runtime"] // 1000 == extension.ops.build_info()["cuda_runtime_version"] // 1000
    through_tinytensor = _run(
        "import json\nfrom tinytensor.cuda import extension\n"
        "from tinytensor.cuda.loaded_libraries import loaded_cuda_libraries\n"
        "assert extension.ops is not None, extension.unavailable_reason()\n"
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


def test_the_library_distribution_is_data_only():
    assert not list(LIBS_PACKAGE.rglob("*.py")), "the loader belongs to tinytensor, not to the 580 MB wheel"
    assert sorted(p.name for p in LIBS_PACKAGE.iterdir() if p.name != "__pycache__") == ["lib", "manifest.json"]


def test_another_version_of_the_library_distribution_names_both(tmp_path):
    # A copy of the installed package's data that says it is another version, first on sys.path.
    impostor = tmp_path / WANTED["module"]
    impostor.mkdir()
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
    from tinytensor.cuda.loaded_libraries import loaded_cuda_libraries

    nvrtc_paths = loaded_cuda_libraries().get("nvrtc", [])
    assert nvrtc_paths and all(str(SITE) in p for p in nvrtc_paths), nvrtc_paths
    assert cupy.__version__


def test_cupy_compiles_against_the_cuda_runtime_headers_of_the_install():
    """CuPy compiles its elementwise and reduction kernels with NVRTC against the CUDA runtime headers.
    A machine with only a driver has no toolkit: CuPy's own lookup, with CUDA_PATH and CUDA_HOME
    unset, must find CUDA 12 headers inside this environment, and a kernel of CuPy's kind must compile
    with the options CuPy assembles (ci/release/cupy_headers.py; no GPU needed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_PATH", "CUDA_HOME")}
    script = Path(__file__).resolve().parents[3] / "ci" / "release" / "cupy_headers.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=SITE.parent)
    found = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {"problems": [proc.stderr]}
    assert proc.returncode == 0 and not found["problems"], found
    assert Path(found["runtime_headers"]).resolve().is_relative_to(SITE), found
    assert found["headers_cuda_version"] // 1000 == 12 and found["compiled"], found


def _project_cache() -> Path:
    """The project's cache folder, where the CUDA 12.4 toolchain of the build lives: the rehearsal
    passes it as PYTINYTENSOR_CACHE; otherwise ci/project_paths.py's rule."""
    cache = os.environ.get("PYTINYTENSOR_CACHE")
    if cache:
        return Path(cache)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytinytensor"


def test_bundled_libraries_win_over_another_cuda_on_ld_library_path():
    """Another CUDA's libcudart (a CUDA 13 toolkit's, or the CUDA 12 toolkit's own) on LD_LIBRARY_PATH
    must not replace ours: tinytensor loads them by path, and their names are our own."""
    hostile = sorted(set(os.path.dirname(p) for p in glob.glob("/usr/local/cuda*/lib64/libcudart.so*")))
    hostile += [str(d) for d in _project_cache().glob("cuda-12*/lib64") if d.is_dir()]
    if not hostile:
        pytest.skip(reason="no other CUDA libraries found to put on LD_LIBRARY_PATH")
    found = _probe({"LD_LIBRARY_PATH": ":".join(hostile)})
    _assert_from_libs_distribution(found["libs"])


def _other_cuda12() -> Path | None:
    """A folder with another CUDA 12 cudart and cuBLAS (a toolkit's, or the project's CUDA 12.4 toolchain)."""
    found = sorted(glob.glob("/usr/local/cuda-12*/lib64/libcublas.so.12")) + sorted(
        str(p) for p in _project_cache().glob("cuda-12*/lib64/libcublas.so.12")
    )
    return Path(found[0]).parent if found else None


def _preload_globally(folder: Path) -> str:
    """Python that loads another cudart and cuBLAS RTLD_GLOBAL, as PyTorch's libtorch_global_deps does."""
    return (
        "import ctypes, os\n"
        "for name in ('libcudart.so.12', 'libcublasLt.so.12', 'libcublas.so.12'):\n"
        f"    ctypes.CDLL(os.path.join({str(folder)!r}, name), mode=os.RTLD_GLOBAL)\n"
    )


def test_a_cublas_another_package_loaded_globally_does_not_answer():
    """Another cuBLAS in the global scope defines the same symbols; under NVIDIA's version names
    the extension's calls would bind to it (measured: 12.4's answered). Ours carry their own
    (TT_CUBLAS_12), so the library wheel's cuBLAS answers."""
    folder = _other_cuda12()
    if folder is None:
        pytest.skip(reason="no other CUDA 12 cuBLAS found to load first")
    preload = _preload_globally(folder)
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
        "import json\nfrom tinytensor.cuda import extension as c\n"
        "assert c.ops is not None, c.unavailable_reason()\nprint(json.dumps(c.ops.cublas_version()))",
        prelude=preload,
    )
    assert result == ours, f"cuBLAS {result} answered (the other is {other}), not {WANTED['version']}"


BINDING = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)' \[([^\]]+)\]")


def test_every_cuda_symbol_binds_inside_our_files_with_another_cuda_loaded_globally():
    """Every reference our files make to a CUDA symbol (the extension's to cudart and cuBLAS,
    cuBLAS's to cuBLASLt, and each library's to itself) is bound, all at once (LD_BIND_NOW), to the
    library wheel's copy, while another CUDA 12's cudart and cuBLAS sit in the global scope. The
    loader's own log (LD_DEBUG=bindings) says where each went."""
    folder = _other_cuda12()
    if folder is None:
        pytest.skip(reason="no other CUDA 12 cudart and cuBLAS found to load first")
    env = dict(os.environ, LD_BIND_NOW="1", LD_DEBUG="bindings")
    code = (
        _preload_globally(folder)
        + "import tinytensor.cuda.extension as c\nassert c.ops is not None, c.unavailable_reason()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=SITE.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours = {str(LIBS / name) for name in WANTED["libraries"]} | {str(p) for p in PACKAGE.glob("cuda_ops*.so")}
    ours_versions = {f"TT_{n.split('-')[0].removeprefix('lib').upper()}_12" for n in WANTED["libraries"]}
    wrong, counted = [], 0
    for source, target, symbol, version in BINDING.findall(proc.stderr):
        if source in ours and version in ours_versions:
            counted += 1
            if target not in ours:
                wrong.append(f"{Path(source).name}: {symbol}@{version} -> {target}")
        elif source in ours and target.startswith(str(folder)):
            wrong.append(f"{Path(source).name}: {symbol}@{version} -> {target}")
    assert not wrong, "bound to another CUDA: " + "; ".join(wrong[:10])
    # the extension's and cuBLAS's references were seen, so the check above had something to hold
    assert counted > 100, f"only {counted} bindings of our symbol versions were logged: {proc.stderr[-2000:]}"


def test_nvrtc_is_loaded_by_path_from_its_distribution_before_cublas():
    """cuBLASLt opens libnvrtc.so.12 by name for some kernels: tinytensor loads the pinned one first."""
    env = dict(os.environ, LD_DEBUG="files")
    proc = subprocess.run(
        [sys.executable, "-c", "import tinytensor.cuda.extension"],
        capture_output=True,
        text=True,
        env=env,
        cwd=SITE.parent,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    opened = re.findall(r"file=(\S+) \[\d+\];\s+(?:dynamically loaded|needed) by", proc.stderr)
    nvrtc = [i for i, f in enumerate(opened) if Path(f).name == "libnvrtc.so.12"]
    cublas = [i for i, f in enumerate(opened) if Path(f).name.startswith("libcublas")]
    assert nvrtc and cublas and nvrtc[0] < cublas[0], opened
    assert Path(opened[nvrtc[0]]).parent == SITE / "nvidia" / "cuda_nvrtc" / "lib", opened[nvrtc[0]]
    import importlib.metadata as md

    required = next(r for r in md.requires(WANTED["distribution"]) or [] if r.startswith("nvidia-cuda-nvrtc-cu12"))
    assert re.fullmatch(r"nvidia-cuda-nvrtc-cu12\s*(<13,>=12\.0|>=12\.0,<13)", required), required
    assert md.version("nvidia-cuda-nvrtc-cu12").startswith("12."), md.version("nvidia-cuda-nvrtc-cu12")


ALLOCATORS = {
    "jemalloc": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "tcmalloc": "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
}


@pytest.mark.parametrize("allocator", sorted(ALLOCATORS))
def test_a_preloaded_allocator_works(allocator):
    """Serving machines preload jemalloc or tcmalloc. A library bound with RTLD_DEEPBIND would free
    with glibc's allocator what the preloaded one allocated ("free(): invalid pointer"); nothing
    of ours is: import, HAS_CUDA, the reason and the preflight must all run to the end."""
    library = os.environ.get(f"TT_{allocator.upper()}", ALLOCATORS[allocator])
    if not Path(library).is_file():
        pytest.skip(reason=f"{allocator} is not installed here ({library}; Debian: libjemalloc2, libtcmalloc-minimal4)")
    env = dict(os.environ, LD_PRELOAD=library)
    code = "import tinytensor as tt\nprint(tt.HAS_CUDA, tt.cuda_unavailable_reason())"
    for command in ([sys.executable, "-c", code], [sys.executable, "-m", "tinytensor"]):
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=SITE.parent)
        assert proc.returncode == 0, f"{command[1:]} with {allocator} exited {proc.returncode}: {proc.stderr[-2000:]}"
    probe = subprocess.run(
        [sys.executable, "-c", "import tinytensor.cuda.extension as c; print(c.ops is not None)"],
        capture_output=True, text=True, env=dict(env, LD_DEBUG="files"), cwd=SITE.parent,
    )  # fmt: skip
    assert probe.stdout.strip() == "True" and library in probe.stderr, "the allocator was not preloaded"


def test_no_driver_library_is_installed():
    names = [p.name for p in LIBS.iterdir()]
    assert not [n for n in names if re.match(r"libcuda[-.]|libnvidia-", n)], names
    assert sorted(names) == sorted(WANTED["libraries"]), names
