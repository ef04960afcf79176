"""The summary tests/conftest.py writes where TT_PYTEST_SUMMARY points ({"passed", "failed",
"skipped", "skip_reasons": {reason: count}}): one place for its variable, its file name and what
the nox sessions, the GPU check and the release rehearsal make of it."""

from __future__ import annotations

import json
from pathlib import Path

ENV = "TT_PYTEST_SUMMARY"
FILE = "pytest-summary.json"


def env(path: Path) -> dict[str, str]:
    """The environment variable that makes the test run write its summary to `path`."""
    return {ENV: str(path)}


def read(path: Path) -> dict | None:
    """The summary, or None where the run did not get far enough to write one."""
    return json.loads(path.read_text()) if path.exists() else None


def nothing_ran(result: dict) -> str | None:
    """Why a run that passed nothing is a failure (a session never passes by skipping all)."""
    if result["passed"]:
        return None
    return f"no test ran: all {result['skipped']} skipped ({'; '.join(result['skip_reasons'])})"


def gpu_skips(result: dict) -> dict[str, int]:
    """The skip reasons that are a missing GPU (or CUDA), with their counts."""
    return {r: n for r, n in result["skip_reasons"].items() if "CUDA" in r or "GPU" in r}
