"""Build from the sdist for real, once per toolchain fault, and check what each variant does.

pytinytensor (forgiving) must install CPU-only and name the cause, once; pytinytensor-cu12
(strict) must fail and name the cause and the fix, or build when everything is present. Each
build runs in a fresh virtual environment with its own isolated build environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from conftest import broken_copy

WARNING = "pytinytensor: WARNING: building CPU-only, without the CUDA extension: "
ARCHS = "75"  # one architecture keeps each compile short; the release builds the full list


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TINYTENSOR_", "CUDA_"))}
    env.update({"TINYTENSOR_CUDA_ARCHS": ARCHS, **extra})
    return env


def build_wheel(sdist: Path, work: Path, env: dict, uv_args=(), prepare=None) -> tuple[int, str, Path | None]:
    """(exit status, build output, wheel or None). The sdist is unpacked and built as a directory,
    which is how a named variant is built from it (pip refuses a renamed sdist file). ``uv_args``
    go to `uv build`; ``prepare(project)`` may change the unpacked tree first."""
    src = work / "src"
    with tarfile.open(sdist) as tar:
        tar.extractall(src, filter="data")
    project = next(src.iterdir())
    if prepare:
        prepare(project)
    out = work / "dist"
    proc = subprocess.run(["uv", "build", "--wheel", *uv_args, "-o", str(out), str(project)], capture_output=True,
                          text=True, env=env, timeout=1200)
    wheels = list(out.glob("*.whl")) if out.exists() else []
    return proc.returncode, proc.stdout + proc.stderr, (wheels[0] if wheels else None)


def install_and_describe(wheel: Path, work: Path) -> dict:
    """Install the wheel into a fresh venv and report what the installed package says about itself."""
    venv = work / "venv"
    subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    subprocess.run(["uv", "pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(wheel),
                    "--no-deps", "numpy"], check=True)
    probe = (
        "import json, tinytensor\n"
        "from tinytensor.cuda import extension, install\n"
        "info = dict(extension.ops.build_info()) if extension.ops else None\n"
        "print(json.dumps({'config': install.build_config(), 'build_info': info,\n"
        "                  'import_error': extension.IMPORT_ERROR, 'reason': tinytensor.cuda_unavailable_reason()}))\n"
    )
    out = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, cwd=work)
    assert out.returncode == 0, out.stderr
    return {**json.loads(out.stdout), "stderr": out.stderr}


def forgiving(sdist, work, env, cause_words, **build):
    """The pytinytensor build: succeeds CPU-only, warns once naming the cause, and records it.
    Returns the warning's line."""
    status, log, wheel = build_wheel(sdist, work, env, **build)
    assert status == 0, log
    assert log.count(WARNING) == 1, log
    warning = log[log.index(WARNING):].splitlines()[0]
    for word in cause_words:
        assert word in warning, warning
    described = install_and_describe(wheel, work)
    assert described["config"]["extension"] == "skipped"
    for word in cause_words:
        assert word in described["config"]["reason"]
        assert word in described["reason"]  # tinytensor.cuda_unavailable_reason() passes it on
    # pip hides the build's warning: the import repeats it, once, with the cause and the preflight
    assert described["stderr"].count("CpuOnlyBuildWarning") == 1, described["stderr"]
    assert described["config"]["reason"] in described["stderr"] and "python -m tinytensor" in described["stderr"]
    return warning


def strict_fails(sdist, work, env, cause_words, **build):
    """The pytinytensor-cu12 build: fails, naming the cause and the fix; produces no wheel.
    Returns the error's line."""
    status, log, wheel = build_wheel(sdist, work, dict(env, TINYTENSOR_CUDA_VARIANT="cu12"), **build)
    assert status != 0 and wheel is None, log
    error = "ERROR: cannot build the CUDA extension of pytinytensor-cu12"
    assert error in log, log
    assert "fix:" in log and "TINYTENSOR_BUILD_EXTENSION=0" in log, log
    for word in cause_words:
        assert word in log, log
    return log[log.index(error):].splitlines()[0]


def expect_fault(variant, sdist, work, env, cause_words, **build) -> str:
    """The variant's answer to a fault: pytinytensor falls back, pytinytensor-cu12 fails; its line."""
    check = forgiving if variant == "pytinytensor" else strict_fails
    return check(sdist, work, env, cause_words, **build)


VARIANTS = ["pytinytensor", "pytinytensor-cu12"]


FAULTS = {
    # name: (files removed from the CUDA 12 toolkit, words the cause must contain)
    "no nvcc": (["bin/nvcc"], ["nvcc", "not found", "no bin/nvcc"]),
    "no libcudart": (["lib64/libcudart*"], ["libcudart (CUDA 12) not found", "no libcudart.so.12"]),
    "no libcublas": (["lib64/libcublas.so*"], ["libcublas (CUDA 12) not found", "no libcublas.so.12"]),
    "compile error": (["include/cuda_fp16.h"], ["nvcc failed", "cuda_fp16.h"]),
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("variant", VARIANTS)
def test_toolchain_fault(fault, variant, sdist, cuda12, tmp_path):
    removed, words = FAULTS[fault]
    toolkit = broken_copy(cuda12, tmp_path / "cuda", removed)
    env = _env(CUDA_HOME=str(toolkit), TINYTENSOR_CUDA_SEARCH="CUDA_HOME")
    expect_fault(variant, sdist, tmp_path, env, words)


def _with_cuda12(cuda12, **extra) -> dict:
    """The environment of a build whose CUDA 12 toolkit is complete, so that the fault is elsewhere."""
    return _env(CUDA_HOME=str(cuda12), TINYTENSOR_CUDA_SEARCH="CUDA_HOME", **extra)


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_compiler_on_path(variant, sdist, cuda12, tmp_path):
    """A machine without gcc/g++: PATH holds only Python (the nox environment's) and uv."""
    path = os.pathsep.join([str(Path(sys.executable).parent), str(Path(shutil.which("uv")).parent)])
    assert not any(shutil.which(cc, path=path) for cc in ("gcc", "g++", "c++", "cc"))
    words = ["no C/C++ compiler", "(the binding's C++ compiler: $CXX)", "gcc (nvcc's host compiler: $CUDAHOSTCXX)"]
    expect_fault(variant, sdist, tmp_path, _with_cuda12(cuda12, PATH=path), words)


@pytest.mark.parametrize("variant", VARIANTS)
def test_compiler_variables_naming_nothing(variant, sdist, cuda12, tmp_path):
    cxx, host = tmp_path / "no-such-c++", tmp_path / "no-such-gcc"
    env = _with_cuda12(cuda12, CXX=str(cxx), CUDAHOSTCXX=str(host))
    words = [f"{cxx} (the binding's C++ compiler: $CXX) and {host} (nvcc's host compiler: $CUDAHOSTCXX)"]
    expect_fault(variant, sdist, tmp_path, env, words)


@pytest.mark.parametrize("variant", VARIANTS)
def test_missing_pybind11(variant, sdist, cuda12, tmp_path):
    """pybind11 comes from pyproject's build requirements; without build isolation it can be absent."""
    venv = tmp_path / "build-env"  # setuptools, and no pybind11
    subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    subprocess.run(
        ["uv", "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "setuptools>=70"], check=True
    )
    uv_args = ["--no-build-isolation", "--python", str(venv / "bin" / "python")]
    words = ["pybind11 is not importable by the building Python", "No module named 'pybind11'"]
    expect_fault(variant, sdist, tmp_path, _with_cuda12(cuda12), words, uv_args=uv_args)


HANGS = {
    # name: what the fake nvcc does before it hangs (its version queries answered by the real one, or not)
    "nvcc hangs": "",
    "nvcc hangs compiling": 'case "$1" in --version|--list-gpu-code) exec "{real}" "$@";; esac\n',
}
HANG_WORDS = {"nvcc hangs": ["bin/nvcc does not run"], "nvcc hangs compiling": ["nvcc failed"]}


@pytest.mark.parametrize("hang", list(HANGS))
@pytest.mark.parametrize("variant", VARIANTS)
def test_hanging_nvcc_is_stopped(hang, variant, sdist, cuda12, tmp_path):
    """A copy of the toolkit whose nvcc starts a one-hour sleep and waits for it: the build stops
    it after TINYTENSOR_BUILD_TIMEOUT seconds, with everything it started, and names the cause."""
    toolkit = broken_copy(cuda12, tmp_path / "cuda", ["bin/nvcc"])
    pids = tmp_path / "hung.pids"
    script = HANGS[hang].format(real=cuda12 / "bin" / "nvcc") + f'sleep 3600 &\necho $! >>"{pids}"\nwait\n'
    (toolkit / "bin" / "nvcc").write_text("#!/bin/sh\n" + script)
    (toolkit / "bin" / "nvcc").chmod(0o755)
    env = _env(CUDA_HOME=str(toolkit), TINYTENSOR_CUDA_SEARCH="CUDA_HOME", TINYTENSOR_BUILD_TIMEOUT="5")
    words = HANG_WORDS[hang] + ["did not finish within 5 s (TINYTENSOR_BUILD_TIMEOUT)"]
    started = time.monotonic()
    expect_fault(variant, sdist, tmp_path, env, words)
    assert time.monotonic() - started < 90  # the sleep would take an hour
    assert pids.read_text().split()
    for pid in pids.read_text().split():  # the sleep nvcc started is gone (or a zombie awaiting init)
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z", pid


BUILD_TEMP = f"build/temp.{sysconfig.get_platform()}-{sys.implementation.cache_tag}"  # setuptools' build_temp


def _block_build_temp(project: Path) -> None:
    """build_temp made unwritable: read-only where permissions bind; for root, whom they do not
    bind, a file stands where the folder must be."""
    temp = project / BUILD_TEMP
    temp.parent.mkdir()
    if os.geteuid() == 0:
        temp.write_text("")
    else:
        temp.mkdir(mode=0o555)


@pytest.mark.parametrize("variant", VARIANTS)
def test_unwritable_build_folder(variant, sdist, cuda12, tmp_path):
    words = [f"cannot write to the build folder {tmp_path}/src/", BUILD_TEMP]
    expect_fault(variant, sdist, tmp_path, _with_cuda12(cuda12), words, prepare=_block_build_temp)


@pytest.mark.parametrize("var", ["CUDA_HOME", "CUDA_PATH"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_missing_cuda_home_is_named_never_passed_over(var, variant, sdist, tmp_path):
    """The default search: a folder that does not exist must not hand over to /usr/local/cuda."""
    missing = tmp_path / "no-such-cuda"
    line = expect_fault(variant, sdist, tmp_path, _env(**{var: str(missing)}), [f"${var}={missing} does not exist"])
    assert "/usr/local/cuda" not in line and "looked in" not in line, line


def test_cuda13_refused_by_the_cu12_build(sdist, cuda13_parts, tmp_path):
    local, _ = cuda13_parts
    env = _env(TINYTENSOR_CUDA_SEARCH=str(local))
    strict_fails(sdist, tmp_path, env, [f"{local}/bin/nvcc (release 13.0, not 12.x: refused)"])


def test_incomplete_cuda13_makes_the_forgiving_build_cpu_only(sdist, cuda13_parts, tmp_path):
    local, _ = cuda13_parts  # a CUDA 13 toolkit without cuBLAS
    forgiving(sdist, tmp_path, _env(TINYTENSOR_CUDA_SEARCH=str(local)), ["libcublas (CUDA 13) not found"])


def _built(described, cuda_version, distribution):
    assert described["import_error"] is None
    config, info = described["config"], described["build_info"]
    assert config["extension"] == "built" and config["distribution"] == distribution
    assert info["cuda_version"] == cuda_version and info["sass_archs"] == ARCHS
    assert info["variant"] == distribution


def test_all_present_cu12_builds_and_reports_time_and_size(sdist, cuda12, tmp_path):
    env = _env(CUDA_HOME=str(cuda12), TINYTENSOR_CUDA_SEARCH="CUDA_HOME", TINYTENSOR_CUDA_VARIANT="cu12")
    status, log, wheel = build_wheel(sdist, tmp_path, env)
    assert status == 0, log
    assert wheel.name.startswith("pytinytensor_cu12-")
    assert "built tinytensor.cuda_ops in " in log and " MB (" in log  # build time and size
    assert WARNING not in log
    _built(install_and_describe(wheel, tmp_path), "12.4", "pytinytensor-cu12")


def test_all_present_forgiving_build_uses_cuda12(sdist, cuda12, tmp_path):
    env = _env(CUDA_HOME=str(cuda12), TINYTENSOR_CUDA_SEARCH="CUDA_HOME")
    status, log, wheel = build_wheel(sdist, tmp_path, env)
    assert status == 0 and WARNING not in log, log
    _built(install_and_describe(wheel, tmp_path), "12.4", "pytinytensor")


def test_forgiving_build_against_complete_cuda13(sdist, cuda13_parts, tmp_path):
    local, cublas = cuda13_parts
    env = _env(TINYTENSOR_CUDA_SEARCH=f"{local},{cublas}")
    status, log, wheel = build_wheel(sdist, tmp_path, env)
    assert status == 0 and WARNING not in log, log
    _built(install_and_describe(wheel, tmp_path), "13.0", "pytinytensor")


def test_explicit_cpu_only_opt_out_of_the_cu12_build(sdist, tmp_path):
    env = _env(TINYTENSOR_CUDA_VARIANT="cu12", TINYTENSOR_BUILD_EXTENSION="0", TINYTENSOR_CUDA_SEARCH="CUDA_HOME")
    status, log, wheel = build_wheel(sdist, tmp_path, env)
    assert status == 0, log
    assert "WARNING: building pytinytensor-cu12 WITHOUT its CUDA extension" in log
    described = install_and_describe(wheel, tmp_path)
    assert described["config"]["extension"] == "skipped" and "TINYTENSOR_BUILD_EXTENSION=0" in described["reason"]


def test_cpu_only_rebuild_does_not_ship_a_stale_extension(sdist, cuda12, tmp_path):
    """Building again in the same tree (build/ reused) without CUDA must not package the old .so."""
    env = _env(CUDA_HOME=str(cuda12), TINYTENSOR_CUDA_SEARCH="CUDA_HOME")
    status, log, first = build_wheel(sdist, tmp_path, env)
    assert status == 0 and "built tinytensor.cuda_ops" in log, log
    project = next((tmp_path / "src").iterdir())
    out = tmp_path / "again"
    proc = subprocess.run(["uv", "build", "--wheel", "-o", str(out), str(project)], capture_output=True, text=True,
                          env=_env(TINYTENSOR_BUILD_EXTENSION="0"))
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(next(out.glob("*.whl"))) as wheel:
        assert not [n for n in wheel.namelist() if n.endswith(".so")], wheel.namelist()
    with zipfile.ZipFile(first) as wheel:
        assert [n for n in wheel.namelist() if n.endswith(".so")]


def test_unknown_variant_is_refused(sdist, tmp_path):
    status, log, wheel = build_wheel(sdist, tmp_path, _env(TINYTENSOR_CUDA_VARIANT="cu11"))
    assert status != 0 and wheel is None
    assert "ERROR: TINYTENSOR_CUDA_VARIANT='cu11': expected one of 'cu12', 'cu13'" in log


def test_sdist_is_reproducible(sdist, tmp_path):
    """Two sdists built from the same commit, in two fresh clones, are byte-identical."""
    root = Path(__file__).resolve().parents[3]
    digests = []
    for name in ("a", "b"):
        clone = tmp_path / name
        subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
        (clone / "README.md").touch()  # different mtimes must not matter
        out = tmp_path / f"{name}-dist"
        subprocess.run(["uv", "build", "--sdist", "-o", str(out), str(clone)], check=True, capture_output=True)
        digests.append(next(out.glob("*.tar.gz")).read_bytes())
    assert digests[0] == digests[1]


# ---------------------------------------------------------------------------- the cu12 sdist
# What `pip install pytinytensor-cu12 --no-binary pytinytensor-cu12` does: build that sdist with no
# variable set. It must build the strict variant, or fail naming why.
def _sdist_metadata(sdist: Path) -> str:
    with tarfile.open(sdist) as tar:
        return tar.extractfile(f"{sdist.name[: -len('.tar.gz')]}/PKG-INFO").read().decode()


def test_cu12_sdist_names_its_own_project(cu12_sdist, sdist):
    assert "\nName: pytinytensor-cu12\n" in _sdist_metadata(cu12_sdist)
    assert "\nName: pytinytensor\n" in _sdist_metadata(sdist)


def test_cu12_sdist_builds_the_strict_variant_with_no_variable(cu12_sdist, cuda12, tmp_path):
    env = _env(CUDA_HOME=str(cuda12), TINYTENSOR_CUDA_SEARCH="CUDA_HOME")  # no TINYTENSOR_CUDA_VARIANT
    status, log, wheel = build_wheel(cu12_sdist, tmp_path, env)
    assert status == 0 and WARNING not in log, log
    assert wheel.name.startswith("pytinytensor_cu12-")
    _built(install_and_describe(wheel, tmp_path), "12.4", "pytinytensor-cu12")


def test_cu12_sdist_without_cuda12_fails_naming_why(cu12_sdist, tmp_path):
    status, log, wheel = build_wheel(cu12_sdist, tmp_path, _env())  # no CUDA 12 toolchain on the search path
    assert status != 0 and wheel is None, log
    assert "ERROR: cannot build the CUDA extension of pytinytensor-cu12" in log and "fix:" in log, log
    assert WARNING not in log  # never a silent CPU-only pytinytensor-cu12


def test_cu12_sdist_refuses_another_variant(cu12_sdist, tmp_path):
    status, log, wheel = build_wheel(cu12_sdist, tmp_path, _env(TINYTENSOR_CUDA_VARIANT="cu13"))
    assert status != 0 and wheel is None, log
    assert "this is the pytinytensor-cu12 sdist, which builds only pytinytensor-cu12" in log, log


def test_cu12_sdist_is_reproducible(cu12_sdist, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINYTENSOR_")}
    subprocess.run(["uv", "build", "--sdist", "-o", str(tmp_path), str(Path(__file__).resolve().parents[3])],
                   check=True, capture_output=True, env=dict(env, TINYTENSOR_CUDA_VARIANT="cu12"))
    again = next(tmp_path.glob("pytinytensor_cu12-*.tar.gz"))
    assert again.read_bytes() == cu12_sdist.read_bytes()


# ---------------------------------------------------------------------------- two variants in one place
def test_two_variants_installed_together_are_named_with_the_fix(sdist, cu12_sdist, tmp_path):
    """pytinytensor and pytinytensor-cu12 write the same tinytensor/ files: the second install
    overwrites the first without a word from pip, so tinytensor says so at import and in the
    preflight, naming both and what to uninstall. (Both built CPU-only: the files are the point.)"""
    cpu_only = _env(TINYTENSOR_BUILD_EXTENSION="0")
    wheels = []
    for name, source in (("plain", sdist), ("cu12", cu12_sdist)):
        status, log, wheel = build_wheel(source, tmp_path / name, cpu_only)
        assert status == 0, log
        wheels.append(wheel)
    venv = tmp_path / "venv"
    python = str(venv / "bin" / "python")
    subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    for wheel in wheels:  # one after the other, as a user would
        subprocess.run(["uv", "pip", "install", "-q", "--python", python, "--no-deps", str(wheel), "numpy"], check=True)
    version = wheels[0].name.split("-")[1]
    fix = "pip uninstall -y pytinytensor pytinytensor-cu12 && pip install pytinytensor-cu12"

    imported = subprocess.run([python, "-c", "import tinytensor"], capture_output=True, text=True, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "InstallConflictWarning" in imported.stderr, imported.stderr
    assert f"pytinytensor {version} and pytinytensor-cu12 {version} are installed together" in imported.stderr
    assert fix in imported.stderr

    report = subprocess.run([python, "-m", "tinytensor"], capture_output=True, text=True, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "INSTALL CONFLICT:" in report.stdout and fix in report.stdout, report.stdout

    subprocess.run(["uv", "pip", "uninstall", "-q", "--python", python, "pytinytensor"], check=True)
    subprocess.run(["uv", "pip", "install", "-q", "--python", python, "--no-deps", "--reinstall", str(wheels[1])],
                   check=True)
    clean = subprocess.run([python, "-W", "error", "-c", "import tinytensor"], capture_output=True, text=True,
                           cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr  # one variant: no warning
