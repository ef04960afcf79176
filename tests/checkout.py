"""Import the checkout's own modules (buildsys/, ci/release/, ci/dev/) in tests, with the checkout
on sys.path only while importing: left there, importlib.metadata would also read the checkout's
*.egg-info (tests/release checks an installed wheel's metadata)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def from_checkout(name: str, *folders: str) -> ModuleType:
    """Module `name`, found in the checkout's root or in `folders` (relative to it, e.g. "ci/release")."""
    saved = list(sys.path)
    sys.path[:0] = [str(ROOT), *(str(ROOT / f) for f in folders)]
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = saved
