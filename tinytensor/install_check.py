"""Two variants in one environment: pytinytensor, pytinytensor-cu12 and a future -cu13 all install
the same tinytensor/ files, so installing a second one silently overwrites the first, and
uninstalling either removes files the other needs. Found at import (a warning) and in the preflight.
"""

from __future__ import annotations

import importlib.metadata as metadata
from pathlib import Path

VARIANTS = ("pytinytensor", "pytinytensor-cu12", "pytinytensor-cu13")
_HERE = Path(__file__).resolve().parent.parent  # the folder this tinytensor was imported from


class InstallConflictWarning(UserWarning):
    """More than one tinytensor distribution is installed over the same files."""


def installed_variants() -> list[tuple[str, str]]:
    """(name, version) of each variant installed where this tinytensor lives (about 0.5 ms)."""
    found = []
    for name in VARIANTS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        # INSTALLER: written by pip and uv into what they install, never into a source tree's
        # *.egg-info build metadata (which a checkout that built both variants holds)
        if dist.read_text("INSTALLER") is not None and Path(str(dist.locate_file(""))).resolve() == _HERE:
            found.append((name, dist.version))
    return found


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
