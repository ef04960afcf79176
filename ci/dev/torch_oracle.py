"""Where PyTorch 2.13's CPU build (the test oracle) comes from, without ever fetching a CUDA build.

$TINYTENSOR_TORCH_INDEX (a CPU-only index, from CI configuration) if set; else a torch wheel for
this interpreter in pip's find-links (PIP_FIND_LINKS or pip's own configuration); else nothing,
and the torch comparisons skip with their reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

VERSION = "2.13.0"


def _pip_config(key: str) -> str:
    out = subprocess.run([sys.executable, "-m", "pip", "config", "get", key], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else ""


def install_args(python_tag: str) -> list[str] | None:
    """pip/uv install arguments for torch on an interpreter tagged e.g. "cp311", or None."""
    index = os.environ.get("TINYTENSOR_TORCH_INDEX")
    if index:
        return [f"torch=={VERSION}", "--index-url", index]
    links = os.environ.get("PIP_FIND_LINKS") or _pip_config("global.find-links")
    for folder in links.split():
        for wheel in sorted(Path(folder).glob(f"torch-{VERSION}*-{python_tag}-{python_tag}-*.whl")):
            return [str(wheel)]
    return None
