"""What is installed: the build record setup.py wrote, and the variants sharing this folder.

pytinytensor, pytinytensor-cu12 and a future -cu13 all install the same tinytensor/ files, so
installing a second one silently overwrites the first, and uninstalling either removes files the
other needs. Found at import (a warning) and in the preflight.
"""

from __future__ import annotations

import json
import os
import re
from importlib import resources
from pathlib import Path

_HERE = Path(__file__).resolve().parents[2]  # the folder this tinytensor was imported from
# pytinytensor, pytinytensor-cu12, -cu13 ... as installers name their metadata folders
_DIST_INFO = re.compile(r"^(pytinytensor(?:[-_]cu\d+)?)-([^-]+)\.dist-info$")


def build_config() -> dict:
    """What setup.py recorded about this install (distribution, variant, why the extension was skipped)."""
    try:
        text = resources.files("tinytensor").joinpath("_build_config.json").read_text()
    except (FileNotFoundError, OSError):
        return {}
    return json.loads(text)


class InstallConflictWarning(UserWarning):
    """More than one tinytensor distribution is installed over the same files."""


def installed_variants() -> list[tuple[str, str]]:
    """(name, version) of each variant installed where this tinytensor lives: one listing of that
    folder (run at every import, so no importlib.metadata, which alone costs ~20 ms to import)."""
    found: list[tuple[str, str]] = []
    try:
        entries = os.scandir(_HERE)
    except OSError:
        return found
    with entries:
        for entry in entries:
            match = _DIST_INFO.match(entry.name)
            # INSTALLER: written by pip and uv into what they install, never into a source tree's
            # *.egg-info build metadata (which a checkout that built both variants holds)
            if match and os.path.exists(os.path.join(entry.path, "INSTALLER")):
                found.append((match.group(1).replace("_", "-"), match.group(2)))
    return sorted(found)


def conflict(found: list[tuple[str, str]] | None = None, current: str | None = None) -> str | None:
    """What to say when two or more variants share this install, with the fix; None when one is.

    ``current`` is the distribution whose files are in place (the build record names it): the
    last one installed."""
    found = installed_variants() if found is None else found
    if len(found) < 2:
        return None
    names = [name for name, _ in found]
    listed = " and ".join(f"{name} {version}" for name, version in found)
    keep = current if current in names else names[-1]
    return (
        f"{listed} are installed together; they write the same tinytensor/ files, so the ones here are "
        f"{keep}'s (the last installed) and uninstalling any of them breaks the others. "
        f"Keep one: pip uninstall -y {' '.join(names)} && pip install {keep}"
    )
