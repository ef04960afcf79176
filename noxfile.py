#!/usr/bin/env -S uv run --script
# /// script
# dependencies = ["nox==2026.10.20", "uv==0.13.9"]
# ///
"""Test matrices and jobs. `nox -l` lists them; the sessions tagged `ci` are what CI runs
(`ci/tests.sh`, README).

Sessions install what they need into their own environments (uv when available). Interpreters
come from the machine: the release matrix's CPythons (buildsys/release_matrix.py) wherever they are
(PATH, pyenv); those absent are left out of the parametrization rather than failing.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox

# nox imports this file without putting its folder on sys.path (sessions run there, so `python -m
# ci....` needs nothing); the noxfile itself imports the ci package from the checkout.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from buildsys import release_matrix  # noqa: E402
from ci import pytest_summary  # noqa: E402
from ci.dev import torch_oracle  # noqa: E402

ROOT = Path(__file__).resolve().parent
ORACLE_PYTHON = "3.11"  # PyTorch 2.13's CPU wheel (the test oracle) exists here for 3.11
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
TEST_DEPS = nox.project.dependency_groups(PYPROJECT, "test")

nox.needs_version = ">=2025.2.9"  # default= on sessions, nox.project.dependency_groups
nox.options.default_venv_backend = "uv|virtualenv"
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")  # interpreters come from the machine


def _interpreters() -> list[str]:
    """Python versions present on this machine; puts pyenv installs on PATH so nox and uv find them."""
    found = []
    for version in release_matrix.PYTHONS:
        exe = f"python{version}"
        candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/{exe}")))
        for candidate in candidates:
            folder = str(Path(candidate).parent)
            if folder not in os.environ["PATH"].split(os.pathsep):
                os.environ["PATH"] = folder + os.pathsep + os.environ["PATH"]
        path = shutil.which(exe)
        if path and subprocess.run([path, "-c", "pass"], capture_output=True).returncode == 0:
            found.append(version)
    return found or [f"{sys.version_info[0]}.{sys.version_info[1]}"]


PYTHONS = _interpreters()


def _install_torch(session) -> bool:
    """PyTorch's CPU build as the test oracle (see ci/dev/torch_oracle.py), or a note that it is absent."""
    args = torch_oracle.install_args(f"cp{session.python.replace('.', '')}")
    if args is None:
        session.log(f"no PyTorch {torch_oracle.VERSION} CPU wheel for Python {session.python}: torch tests will skip")
        return False
    session.install(*args)
    return True


def _pytest(session, *args, expect: str, summary_name: str) -> dict | None:
    """Run pytest, then say plainly what was skipped (a session never passes by skipping all).
    None under ``--install-only``, where nothing runs."""
    summary = Path(session.create_tmp()) / f"{summary_name}.json"
    env = {**pytest_summary.env(summary), "TINYTENSOR_EXPECT_BACKEND": expect, "OPENBLAS_NUM_THREADS": "1"}
    # The pytest script (not `python -m`) keeps the source tree off sys.path: the installed package is tested.
    if session.run("pytest", *args, env=env) is None:  # --install-only
        return None
    result = pytest_summary.read(summary)
    if pytest_summary.nothing_ran(result):
        session.error(pytest_summary.nothing_ran(result))
    return result


def _report_gpu_part(session, result: dict | None) -> None:
    if result is None:  # --install-only
        return
    gpu = pytest_summary.gpu_skips(result)
    if gpu:
        total = sum(gpu.values())
        session.log(f"{result['passed']} passed; the GPU part was SKIPPED ({total} tests): {'; '.join(gpu)}")
    else:
        session.log(f"{result['passed']} passed, GPU part included ({result['skipped']} skipped for other reasons)")


@nox.session(python=PYTHONS[-1], tags=["ci"])
def lint(session):
    """Lint, formatting, strict types, spelling and the library's import layers.

    ruff (lint and format), mypy ([tool.mypy]), import-linter ([tool.importlinter]), codespell
    ([tool.codespell]) and mdformat (Markdown): the tools .pre-commit-config.yaml runs, at its pins;
    then sp-repo-review, the Scientific Python development guide's checks.
    """
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
    session.run("lint-imports", "--no-cache")  # its default cache would sit inside tinytensor/
    session.run("codespell")
    session.run("mdformat", "--check", *_markdown_files())
    # every check of the Scientific Python development guide passes or is ignored, with the reason,
    # in [tool.repo-review]
    session.run("repo-review", "--show", "err", ".")


# Markdown written by a generator, which formats it itself (ci/dev/operations_doc.py)
GENERATED_MARKDOWN = {"docs/operations.md"}


def _markdown_files() -> list[str]:
    """The project's Markdown pages that mdformat keeps formatted (the same set as its pre-commit hook)."""
    pages = [*ROOT.glob("*.md"), *ROOT.glob("docs/**/*.md")]
    return sorted(
        p.relative_to(ROOT).as_posix() for p in pages if p.relative_to(ROOT).as_posix() not in GENERATED_MARKDOWN
    )


@nox.session(python=PYTHONS, tags=["ci"])
def tests_cpu(session):
    """The whole suite that applies to the package without CuPy and without the extension."""
    session.install(".", env={"TINYTENSOR_BUILD_EXTENSION": "0"})
    session.install(*TEST_DEPS)
    if session.python == ORACLE_PYTHON:
        _install_torch(session)
    result = _pytest(session, "tests", expect="cpu-only", summary_name="tests_cpu")
    _report_gpu_part(session, result)


@nox.session(python=ORACLE_PYTHON, tags=["ci"], default=False)
def tests_cupy(session):
    """The suite with CuPy installed and the extension not built.

    Without a GPU: install, import and reasons are checked, and the session says plainly that the
    GPU part was skipped and why.
    """
    session.install(".[cuda12]", env={"TINYTENSOR_BUILD_EXTENSION": "0"})
    session.install(*TEST_DEPS)
    _install_torch(session)
    result = _pytest(session, "tests", "--ignore=tests/tooling/build", expect="cupy-only", summary_name="tests_cupy")
    _report_gpu_part(session, result)


def _cuda_toolchain(session) -> dict[str, str]:
    """$CUDA_HOME (and $CUDAHOSTCXX) if set, else the project's pinned CUDA 12 toolchain and the host
    compiler it picked (installed on first use)."""
    if os.environ.get("CUDA_HOME"):
        return {k: os.environ[k] for k in ("CUDA_HOME", "CUDAHOSTCXX") if os.environ.get(k)}
    out = session.run_install(str(ROOT / "ci" / "release" / "install-cuda12.sh"), silent=True, external=True)
    if out is None:  # --no-install on a reused environment: the wheel build it is for is skipped too
        return {}
    exports = [line.removeprefix("export ").split("=", 1) for line in out.splitlines() if line.startswith("export ")]
    return dict(exports)


@nox.session(python=ORACLE_PYTHON, default=False)
def tests_gpu(session):
    """The GPU check: the built cu12 extension with CuPy, on a GPU.

    The op suite on the GPU, the kernels against CuPy, the digits example on cuda, diagnostics and
    GPU benchmarks (ci/release/gpu_check.py). Needs a GPU to run its GPU part; set
    TINYTENSOR_REQUIRE_GPU=1 on GPU machines so that skips fail.
    """
    variant = os.environ.get("TINYTENSOR_CUDA_VARIANT", "cu12")
    env = {**_cuda_toolchain(session), "TINYTENSOR_CUDA_VARIANT": variant}
    dist = Path(session.create_tmp()) / "dist"
    session.run_install("uv", "build", "--wheel", "-o", str(dist), str(ROOT), env=env, external=True)
    wheel = max(dist.glob(f"pytinytensor_{variant}-*.whl"), key=lambda p: p.stat().st_mtime)
    session.install(str(wheel))
    session.install(*TEST_DEPS)
    _install_torch(session)
    out = Path(session.create_tmp()) / "gpu-check"
    if session.run("python", "-m", "ci.release.gpu_check", "--out", str(out)) is None:  # --install-only
        return
    _report_gpu_part(session, pytest_summary.read(out / pytest_summary.FILE))


# What a GPU machine's environment holds for the offline GPU check (docs/maintainers/gpu-check.md), at the
# versions the rehearsal uses: CUDA 13's CuPy and NVRTC, the in-place build's pybind11 and
# setuptools, the tests' numpy, pytest and scikit-learn. The other test dependencies are the wheels
# ci/dev/gpu-wheels.sh downloads; PyTorch is optional (its tests skip).
GPU_MACHINE_PACKAGES = [
    "numpy==2.5.*",
    "pybind11",
    "setuptools",
    "pip",
    "pytest>=8",
    "scikit-learn",
    "cupy-cuda13x==14.2.*",
    "nvidia-cuda-nvrtc==13.0.88",
    "nvidia-cuda-runtime==13.0.*",  # the CUDA runtime headers CuPy compiles its kernels against
]
GPU_REHEARSAL_PYTHON = "3.12"  # the oldest numpy 2.5 supports; a newer one with `--force-python 3.X`


@nox.session(python=GPU_REHEARSAL_PYTHON, tags=["ci"], default=False)
def gpu_rehearsal(session):
    """The GPU check rehearsed without a GPU, on a CUDA 13 toolkit.

    ci/dev/gpu_rehearsal.py: fails if anything but the missing GPU goes wrong.
    `-- --cuda13-from-pip`: PyPI's CUDA 13 nvcc.
    """
    session.install(*GPU_MACHINE_PACKAGES)
    session.run("python", "-m", "ci.dev.gpu_rehearsal", *session.posargs)


@nox.session(python=ORACLE_PYTHON, tags=["ci"], default=False)
def build_faults(session):
    """Real builds from the sdist for each toolchain fault, in both variants."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "build-tests"))
    env = {"TT_BUILD_TESTS": "1"}
    _pytest_plain(session, "tests/tooling/build", "-v", env=env)


def _pytest_plain(session, *args, env):
    summary = Path(session.create_tmp()) / "summary.json"
    if session.run("pytest", *args, env={**env, **pytest_summary.env(summary)}) is None:  # --install-only
        return
    result = pytest_summary.read(summary)
    if pytest_summary.nothing_ran(result):
        session.error(pytest_summary.nothing_ran(result))
    skipped = f", {result['skipped']} skipped: {'; '.join(result['skip_reasons'])}" if result["skipped"] else ""
    session.log(f"{result['passed']} passed{skipped}")


@nox.session(python=ORACLE_PYTHON, default=False)
def bench(session):
    """Benchmarks: ratios against numpy and PyTorch in one process, on the GPU too if there is one."""
    session.install(".", env={"TINYTENSOR_BUILD_EXTENSION": "0"})
    _install_torch(session)
    env = {"OPENBLAS_NUM_THREADS": "1"}
    session.run("python", "benchmarks/bench_cpu.py", env=env)
    session.run("python", "benchmarks/bench_gpu.py", env=env)


@nox.session(python=ORACLE_PYTHON, tags=["ci"], default=False)
def release(session):
    """The release rehearsal, end to end: the main job.

    Both sdists, the CPU wheel, the library wheel and the per-Python cu12 wheels through the
    cibuildwheel configuration, checked, uploaded to a local index, installed fresh and tested.
    """
    # the `release` group from its hash lock (ci/release/locks/update.sh keeps it current; the rehearsal checks)
    session.install("--require-hashes", "-r", "ci/release/locks/release.txt")
    # ci/release/publish.py and placeholders.py against a real pypiserver with twine, the release table,
    # ci/release/upload_rules.py and ci/release/elf_versions.py (tests_cpu lacks their packages: they
    # are in the `release` group only)
    tests = [
        "tests/tooling/test_release_manifest_libs.py",
        "tests/tooling/test_publish.py",
        "tests/tooling/test_upload_rules.py",
        "tests/tooling/test_elf_versions.py",
    ]
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest", *tests)
    args = list(session.posargs)
    session.run("python", "-m", "ci.dev.rehearsal", *args, env={"PATH": f"{Path(session.bin)}:{os.environ['PATH']}"})


@nox.session(python=ORACLE_PYTHON, tags=["ci"], default=False)
def release_aarch64(session):
    """The aarch64 release files, rehearsed under emulation.

    The aarch64 library wheel and a per-Python wheel, built with [tool.cibuildwheel]'s hooks in an
    emulated Debian arm64 root filesystem, installed and tested there (qemu; root).
    """
    session.install("--require-hashes", "-r", "ci/release/locks/release.txt")
    session.run("python", "-m", "ci.dev.rehearsal.aarch64", *session.posargs)


# Sphinx 9 supports Python 3.13 and newer: the release matrix's newest (ci/nox.sh installs it where missing).
DOCS_PYTHON = release_matrix.PYTHONS[-1]


@nox.session(python=DOCS_PYTHON, tags=["ci"])
def docs(session):
    """Build the documentation site (docs/) into build/docs, nitpicky, with every warning an error."""
    session.install(".", env={"TINYTENSOR_BUILD_EXTENSION": "0"})
    session.install(*nox.project.dependency_groups(PYPROJECT, "docs"))
    out = ROOT / "build" / "docs"
    shutil.rmtree(out, ignore_errors=True)  # a clean build: no page survives from an earlier one
    session.run("sphinx-build", "-W", "--keep-going", "-n", "-b", "html", "docs", str(out), *session.posargs)
    session.log(f"the site is in {out}; open {out / 'index.html'}")


@nox.session(python=PYTHONS[-1], tags=["ci"], default=False)
def workflows(session):
    """Checks of the GitHub workflows, the cibuildwheel configuration and pre-commit's.

    zizmor --offline, check-jsonschema (GitHub workflows; cibuildwheel's schema for its config),
    and cibuildwheel's build identifiers against the intended list.
    """
    session.install(*nox.project.dependency_groups(PYPROJECT, "workflows"))
    session.run("python", "-m", "ci.dev.check_workflows")


if __name__ == "__main__":  # `python noxfile.py -s lint`, or `uv run noxfile.py` (the script block above)
    nox.main()
