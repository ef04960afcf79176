"""Import the checkout's own packages (buildsys, ci) in tests, with the checkout
on sys.path only while importing: left there, importlib.metadata would also read the checkout's
*.egg-info (tests/tooling/release checks an installed wheel's metadata)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def from_checkout(name: str) -> ModuleType:
    """Module `name` of the checkout (e.g. "ci.release.publish", "buildsys.cuda_libs")."""
    saved = list(sys.path)
    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = saved
