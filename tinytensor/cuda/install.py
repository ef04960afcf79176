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
from typing import Any, TypeAlias

_HERE = Path(__file__).resolve().parents[2]  # the folder this tinytensor was imported from
# pytinytensor, pytinytensor-cu12, -cu13 ... as installers name their metadata folders
_DIST_INFO = re.compile(r"^(pytinytensor(?:[-_]cu\d+)?)-([^-]+)\.dist-info$")


RECORD = "_build_config.json"
# The build record: a JSON object whose fields _FIELDS checks where tinytensor reads them.
BuildConfig: TypeAlias = dict[str, Any]

# What tinytensor reads of the record, with its type: one of another shape is damaged, not obeyed.
_FIELDS = {"distribution": str, "extension": str, "reason": str, "cuda_libs": dict}
_CUDA_LIBS_FIELDS = ("distribution", "module", "version")


def _shape_error(config: object) -> str | None:
    if not isinstance(config, dict):
        return f"it holds a JSON {type(config).__name__}, not an object"
    for name, kind in _FIELDS.items():
        if name in config and not isinstance(config[name], kind):
            return f"its {name!r} is {config[name]!r}, not a JSON {'string' if kind is str else 'object'}"
    libs = config.get("cuda_libs", {})
    for name in _CUDA_LIBS_FIELDS if libs else ():
        if not isinstance(libs.get(name), str):
            return f"its 'cuda_libs' has no {name!r} string"
    return None


def read_build_config() -> tuple[BuildConfig, str | None]:
    """(the build record setup.py wrote, None); ({}, None) where there is none (a source tree that
    was not built); ({}, what is wrong with it) where it is damaged. Never raises: it is read while
    tinytensor imports."""
    record = resources.files("tinytensor").joinpath(RECORD)
    try:
        config = json.loads(record.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON
        return {}, f"{record} does not read ({type(exc).__name__}: {exc})"
    shape = _shape_error(config)
    if shape:
        return {}, f"{record} is not a build record: {shape}"
    return config, None


def build_config() -> BuildConfig:
    """What setup.py recorded about this install (distribution, variant, why the extension was
    skipped); empty where there is no record or it is damaged (``build_config_damage`` says how)."""
    return read_build_config()[0]


def build_config_damage() -> tuple[str, str] | None:
    """(what is wrong, fix) where the build record is damaged; None where it reads or is absent."""
    why = read_build_config()[1]
    if why is None:
        return None
    found = installed_variants()
    if found:
        name, version = found[-1]
        fix = f"reinstall {name}, which writes it: pip install --force-reinstall --no-deps {name}=={version}"
    else:  # a source tree
        fix = "rebuild, which writes it: python setup.py build_ext --inplace (or pip install --force-reinstall pytinytensor-cu12)"
    return f"the installed build record {why}, so the CUDA extension is not used", fix


class CpuOnlyBuildWarning(UserWarning):
    """This install was built from source without its CUDA extension, because the build could not
    make it (pytinytensor's forgiving build): it works, on the CPU only."""


def fallback_message() -> str | None:
    """The import's warning where the build fell back to CPU-only; None otherwise.

    pip shows a build's output only with -v, so the build's own warning goes unseen. A user who
    builds from source (the CPU wheel needs no build) expects the extension; one who wants CPU-only
    asks for it (TINYTENSOR_BUILD_EXTENSION=0), which records no fallback and so never warns.
    """
    config = build_config()
    if config.get("mode") != "auto" or config.get("extension") != "skipped":
        return None
    return (
        f"{config.get('distribution', 'pytinytensor')} was built without its CUDA extension, so "
        f"tensors stay on the CPU: {config.get('reason', 'the build recorded no reason')}. "
        "`python -m tinytensor` shows what is missing. For the GPU, install pytinytensor-cu12 (a "
        "prebuilt wheel), or rebuild with a CUDA toolkit; to build CPU-only on purpose, and not see "
        "this again, rebuild with TINYTENSOR_BUILD_EXTENSION=0."
    )


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
