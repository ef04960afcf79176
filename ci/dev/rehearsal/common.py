"""What every step of the rehearsal shares: the log, step timings and notes, running commands."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

from ci import commands
from ci.project_paths import CACHE, ROOT

__all__ = ["CACHE", "ROOT"]
HERE = ROOT / "ci" / "dev"
RELEASE = ROOT / "ci" / "release"  # what the release workflow runs, rehearsed here
TIMINGS: dict[str, float] = {}
NOTES: list[str] = []
SCRATCH: list[Path] = []  # environments a step made and the report does not need (gigabytes)
log = commands.logger("release-rehearsal")


@contextlib.contextmanager
def step(name: str):
    log(f"--- {name}")
    started = time.monotonic()
    try:
        yield
    finally:
        TIMINGS[name] = round(time.monotonic() - started, 1)
        log(f"--- {name}: {TIMINGS[name]} s")


def scratch(path: Path) -> Path:
    """`path`, to be removed when the rehearsal ends, passed or failed (remove_scratch)."""
    SCRATCH.append(path)
    return path


def remove_scratch() -> None:
    """The fresh installs hold torch, cupy and the CUDA libraries (3 GB): later CI sessions need the disk."""
    for path in SCRATCH:
        shutil.rmtree(path, ignore_errors=True)
    SCRATCH.clear()


def sh(command, *, capture: bool = False, tee: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """A command of the rehearsal (ci/commands.py: echoed, bounded by a timeout)."""
    return commands.run(command, log=log, capture=capture, tee=tee, **kwargs)


def python_tag(python: str) -> str:
    """cp311 for a Python 3.11 interpreter."""
    return sh(
        [python, "-c", "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')"], capture=True
    ).stdout.strip()


def pip_install(py: str, *args: str, **kwargs) -> None:
    sh([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args], **kwargs)


LOCKS = Path("ci") / "release" / "locks"  # relative to a source tree: the clone being released


def build_locked(source: Path) -> list[str]:
    """uv build's flags that install the build backend from the hash lock, and nothing unpinned."""
    return ["--build-constraints", str(source / LOCKS / "build.txt"), "--require-hashes"]
