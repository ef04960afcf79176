"""A damaged install is a problem with its fix, never a traceback, and the CPU path still works.

Each case lays out a real install in a temporary folder, put first on PYTHONPATH: a copy of the
tinytensor package with its build record (``_build_config.json``, read from the package folder),
the installer's ``.dist-info`` beside it, and where the build record names one, the CUDA library
distribution (``manifest.json``) and NVIDIA's NVRTC package with a ``libnvrtc.so.12`` compiled here,
found where the loader looks for them. One piece is damaged per case; ``import tinytensor``, a
backward pass on the CPU, ``HAS_CUDA``, ``cuda_unavailable_reason()`` and ``python -m tinytensor``
(and ``--json``, exit 0) are run against it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from checkout import from_checkout
from shared_library import compile_library

import tinytensor as tt

LIBS = from_checkout("buildsys.cuda_libs").LIBS[12]

_PACKAGE = Path(tt.__file__).resolve().parent
_DIST = "pytinytensor-cu12"

_PROBE = """\
import json
import tinytensor as tt

x = tt.tensor([1.0, 2.0, 3.0], requires_grad=True)
(x * x).sum().backward()
print(json.dumps({"grad": x.grad.tolist(), "has_cuda": tt.HAS_CUDA, "reason": tt.cuda_unavailable_reason()}))
"""


def _install(site: Path, record: str | bytes | dict) -> Path:
    """tinytensor as pip installs it into ``site``, with ``record`` as its build record."""
    package = site / "tinytensor"
    shutil.copytree(_PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "cuda_ops*", "_build_config.json"))
    path = package / "_build_config.json"
    if isinstance(record, bytes):
        path.write_bytes(record)
    else:
        path.write_text(record if isinstance(record, str) else json.dumps(record))
    dist_info = site / f"{_DIST.replace('-', '_')}-{tt.__version__}.dist-info"
    dist_info.mkdir()
    (dist_info / "INSTALLER").write_text("pip\n")
    return site


def _run(args: list[str], site: Path, cwd: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(site))
    env.pop("TINYTENSOR_DISABLE_CUDA_EXTENSION", None)  # the extension's loading is what is tested
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def _check(site: Path, tmp_path: Path, *marks: str) -> dict:
    """Everything a user would run against the install; returns the one problem whose text carries
    every mark. It concerns the extension alone: the CPU path works and HAS_CUDA is False."""
    facts = json.loads(_run(["-c", _PROBE], site, tmp_path))
    assert facts["grad"] == [2.0, 4.0, 6.0] and facts["has_cuda"] is False

    report = json.loads(_run(["-m", "tinytensor", "--json"], site, tmp_path))
    assert report["has_cuda"] is False and report["extension"]["loaded"] is False
    matching = [p for p in report["problems"] if all(m in p["what"] for m in marks)]
    assert len(matching) == 1, (marks, report["problems"])
    problem = matching[0]
    assert problem["blocks_gpu"] is False and problem["fix"]
    assert f"{problem['what']} (fix: {problem['fix']})" in facts["reason"]

    text = _run(["-m", "tinytensor"], site, tmp_path)
    assert "HAS_CUDA: False" in text
    assert f"[extension only] {problem['what']}\n    fix: {problem['fix']}" in text
    return problem


@pytest.mark.parametrize(
    "record,marks",
    [
        ('{"distribution": "pytinytensor-cu12", "extension": "bu', ["does not read", "JSONDecodeError"]),
        (b'{"reason": "\xff"}', ["does not read", "UnicodeDecodeError"]),
        ("[1, 2]", ["is not a build record", "JSON list, not an object"]),
        (
            {"distribution": _DIST, "extension": "built", "cuda_libs": LIBS.name},
            ["is not a build record", "'cuda_libs'"],
        ),
        (
            {"distribution": _DIST, "extension": "built", "cuda_libs": {"distribution": LIBS.name}},
            ["is not a build record", "'cuda_libs' has no 'module'"],
        ),
    ],
)
def test_a_damaged_build_record(record, marks, tmp_path):
    site = _install(tmp_path / "site", record)
    problem = _check(
        site, tmp_path, "the installed build record", str(site / "tinytensor" / "_build_config.json"), *marks
    )
    assert f"pip install --force-reinstall --no-deps {_DIST}=={tt.__version__}" in problem["fix"]
    report = json.loads(_run(["-m", "tinytensor", "--json"], site, tmp_path))
    assert report["package"]["distribution"] == "pytinytensor (damaged build record)"


_FALLBACK = {
    "distribution": "pytinytensor",
    "variant": "default",
    "mode": "auto",
    "extension": "skipped",
    "reason": "nvcc (CUDA 12 or newer) not found",
}


def _import_warnings(site: Path, tmp_path: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(site))
    proc = subprocess.run(
        [sys.executable, "-c", "import tinytensor"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_a_build_that_fell_back_to_cpu_only_warns_at_import(tmp_path):
    """pip shows the build's own warning only with -v: the import says it, once, with the cause."""
    site = _install(tmp_path / "site", _FALLBACK)
    stderr = _import_warnings(site, tmp_path)
    assert stderr.count("CpuOnlyBuildWarning") == 1, stderr
    for words in (
        "built without its CUDA extension",
        _FALLBACK["reason"],
        "python -m tinytensor",
        "TINYTENSOR_BUILD_EXTENSION=0",
    ):
        assert words in stderr, stderr


@pytest.mark.parametrize(
    "record",
    [
        {**_FALLBACK, "mode": "0", "reason": "a CPU-only build was requested (TINYTENSOR_BUILD_EXTENSION=0)"},
        {"distribution": "pytinytensor", "variant": "default", "mode": "auto", "extension": "built"},
    ],
    ids=["cpu-only-on-purpose", "built"],
)
def test_no_import_warning_without_a_fallback(record, tmp_path):
    site = _install(tmp_path / "site", record)
    assert "Warning" not in _import_warnings(site, tmp_path)


# NVRTC as the loader checks it: nvrtcVersion gives the CUDA major of its soname (libnvrtc.so.12),
# any minor (the requirement is a range within the major)
_NVRTC = {
    "works": "int nvrtcVersion(int *major, int *minor) { *major = 12; *minor = 6; return 0; }\n",
    "another_major": "int nvrtcVersion(int *major, int *minor) { *major = 13; *minor = 0; return 0; }\n",
    # a file under NVRTC's name that is not it (truncated, or another library)
    "no_version_symbol": "int nvrtcGetNumSupportedArchs(int *n) { *n = 0; return 0; }\n",
}


@pytest.fixture(scope="module")
def nvrtc_libraries(tmp_path_factory) -> dict[str, Path]:
    """{name: libnvrtc.so.12 built from that body}, compiled with the system's C compiler."""
    return {
        name: compile_library(tmp_path_factory.mktemp(f"nvrtc_{name}"), "libnvrtc.so.12", body)
        for name, body in _NVRTC.items()
    }


def _release_install(site: Path, nvrtc_library: Path, **manifest_changes) -> Path:
    """A release wheel's install: its build record names the CUDA library distribution, installed
    beside it (data only) with NVIDIA's NVRTC package, at the paths its manifest.json gives."""
    record = {
        "distribution": _DIST,
        "extension": "built",
        "cuda_libs": {"distribution": LIBS.name, "module": LIBS.module, "version": LIBS.version, "cuda_major": 12},
    }
    _install(site, record)
    libs = site / LIBS.module
    (libs / "lib").mkdir(parents=True)
    manifest = {
        "distribution": LIBS.name,
        "version": LIBS.version,
        "nvrtc": LIBS.nvrtc_manifest,
        "libraries": [],
        "cublas_archs": {"sass": [90], "ptx": [90]},
    }
    manifest.update(manifest_changes)
    (libs / "manifest.json").write_text(json.dumps({k: v for k, v in manifest.items() if v is not None}))
    package, file = LIBS.nvrtc
    nvrtc_package = site.joinpath(*package.split("."))
    (nvrtc_package / file).parent.mkdir(parents=True)
    (nvrtc_package / "__init__.py").write_text("")
    shutil.copy(nvrtc_library, nvrtc_package / file)
    return site


def test_an_nvrtc_without_nvrtcversion(nvrtc_libraries, tmp_path):
    site = _release_install(tmp_path / "site", nvrtc_libraries["no_version_symbol"])
    library = site.joinpath(*LIBS.nvrtc[0].split("."), LIBS.nvrtc[1])
    problem = _check(site, tmp_path, str(library), "is not NVRTC: it has no nvrtcVersion")
    assert problem["fix"] == f'pip install --force-reinstall "{LIBS.nvrtc_requirement}"'


def test_an_nvrtc_of_another_cuda_major(nvrtc_libraries, tmp_path):
    site = _release_install(tmp_path / "site", nvrtc_libraries["another_major"])
    problem = _check(site, tmp_path, f"{LIBS.nvrtc_requirement} is required, but NVRTC 13.0 is installed")
    assert problem["fix"] == f'pip install --force-reinstall "{LIBS.nvrtc_requirement}"'


@pytest.mark.parametrize(
    "changes,marks,which",
    [
        ({"libraries": None}, ["does not read", "KeyError: 'libraries'"], "manifest"),
        ({"cublas_archs": {"sass": [90]}}, ["does not read", "KeyError: 'ptx'"], "manifest"),
        # read only while loading NVRTC: the loader's own catch-all names it
        ({"nvrtc": LIBS.nvrtc_requirement}, ["is installed, but is damaged", "TypeError"], None),
    ],
)
def test_a_library_distribution_with_a_damaged_manifest(changes, marks, which, nvrtc_libraries, tmp_path):
    site = _release_install(tmp_path / "site", nvrtc_libraries["works"], **changes)
    where = [str(site / LIBS.module / "manifest.json")] if which else []
    problem = _check(site, tmp_path, LIBS.requirement, *where, *marks)
    assert problem["fix"] == f'pip install --force-reinstall "{LIBS.requirement}"'


def test_the_release_install_loads_when_nothing_is_broken(nvrtc_libraries, tmp_path):
    """The control: the loader finds and loads the distribution and NVRTC laid out as above, so each
    case fails for its one damaged piece alone (the extension itself is not built here)."""
    site = _release_install(tmp_path / "site", nvrtc_libraries["works"])
    report = json.loads(_run(["-m", "tinytensor", "--json"], site, tmp_path))
    assert report["extension"]["cuda_libs"]["loaded"] is True
    assert report["package"]["distribution"] == _DIST
    # what is left for the extension is its own file, which a source tree does not have
    assert report["extension"]["why_not"] == (
        "the build recorded it as built, but the tinytensor.cuda_ops file is missing from the install"
    )
