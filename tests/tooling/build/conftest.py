"""Fixtures for the build tests: the sdist, real toolkits, and broken copies of them.

These tests build for real (nvcc, a C++ compiler, fresh virtual environments) and take minutes,
so they run in `nox -s build_faults` (which sets TT_BUILD_TESTS=1) rather than with the unit
tests. Toolkits: the project's pinned CUDA 12 from ci/release/install-cuda12.sh, and a CUDA 13 toolkit
without cuBLAS at /usr/local/cuda, completed with PyPI's cuBLAS 13 wheel (tests that need it skip
without it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from checkout import from_checkout

ROOT = Path(__file__).resolve().parents[3]
cuda13 = from_checkout("ci.dev.cuda13")  # cuBLAS 13 from PyPI, shared with the GPU rehearsal


if os.environ.get("TT_BUILD_TESTS") != "1":
    pytest.skip(reason="the build tests run in `nox -s build_faults` (TT_BUILD_TESTS=1)", allow_module_level=True)


@pytest.fixture(scope="session")
def sdist(tmp_path_factory) -> Path:
    """The sdist of this checkout (or $TT_SDIST), which every build here starts from."""
    if os.environ.get("TT_SDIST"):
        return Path(os.environ["TT_SDIST"])
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run(["uv", "build", "--sdist", "-o", str(out), str(ROOT)], check=True, capture_output=True)
    return next(out.glob("pytinytensor-*.tar.gz"))


@pytest.fixture(scope="session")
def cu12_sdist(tmp_path_factory) -> Path:
    """The pytinytensor-cu12 sdist of this checkout: it records its variant (buildsys/variant.py)."""
    out = tmp_path_factory.mktemp("sdist-cu12")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TINYTENSOR_")}
    subprocess.run(["uv", "build", "--sdist", "-o", str(out), str(ROOT)], check=True, capture_output=True,
                   env=dict(env, TINYTENSOR_CUDA_VARIANT="cu12"))
    return next(out.glob("pytinytensor_cu12-*.tar.gz"))


@pytest.fixture(scope="session")
def cuda12() -> Path:
    """The pinned CUDA 12 toolchain (installed on first use, reused after)."""
    out = subprocess.run([str(ROOT / "ci" / "release" / "install-cuda12.sh")], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1].split("=", 1)[1])


@pytest.fixture(scope="session")
def cuda13_parts() -> tuple[Path, Path]:
    """(the CUDA 13 toolkit at /usr/local/cuda, a folder holding PyPI's cuBLAS 13) or skip."""
    local = Path("/usr/local/cuda")
    version = subprocess.run([str(local / "bin" / "nvcc"), "--version"], capture_output=True, text=True)
    if version.returncode != 0 or "release 13." not in version.stdout:
        pytest.skip(reason="no CUDA 13 toolkit at /usr/local/cuda")
    root = cuda13.cublas()
    return local, root / "nvidia" / "cu13"


def broken_copy(toolkit: Path, dest: Path, remove: list[str]) -> Path:
    """A copy of ``toolkit`` (symlinks to its files) without the entries in ``remove`` (glob patterns)."""
    shutil.copytree(toolkit, dest, symlinks=True)
    for pattern in remove:
        matches = list(dest.glob(pattern))
        assert matches, f"nothing matches {pattern} in {toolkit}"
        for path in matches:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    return dest
