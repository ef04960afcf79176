"""`wheel unpack` and `wheel pack` (the wheel project) with what makes a packed wheel reproducible:
fixed timestamps (SOURCE_DATE_EPOCH, which wheel pack honours) and file modes 0o644 or 0o755 whatever
the umask. wheel pack writes the entries in sorted order, the .dist-info last, and a new RECORD.
`auditwheel repair`, which unpacks and repacks a wheel, runs with the same settings (`reproducible`)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ci import commands

EPOCH = 315532800  # 1980-01-01, the earliest time a ZIP file can hold


log = commands.logger("wheel-files", sys.stderr)


def reproducible() -> dict:
    """subprocess arguments for a tool that writes a wheel: fixed timestamps, and a fixed umask (the
    folder entries auditwheel writes take their modes from the folders it unpacked)."""
    return {"env": dict(os.environ, SOURCE_DATE_EPOCH=str(EPOCH)), "umask": 0o022}


def _wheel(*args: str) -> None:
    command = [sys.executable, "-m", "wheel", *args]
    proc = commands.run(command, log=log, capture=True, check=False, **reproducible())
    if proc.returncode != 0:
        raise SystemExit(f"`wheel {' '.join(args)}` failed:\n{proc.stdout}{proc.stderr}")


def unpack(wheel: Path, dest: Path) -> Path:
    """`wheel unpack` (RECORD's hashes checked, executable bits kept) into `dest`; returns the tree."""
    _wheel("unpack", "--dest", str(dest), str(wheel))
    name, version = wheel.name.split("-")[:2]
    return dest / f"{name}-{version}"


def pack(tree: Path, dest: Path) -> Path:
    """`wheel pack` of `tree` into `dest` (named after its .dist-info and WHEEL's tags); returns the wheel."""
    for path in tree.rglob("*"):
        if path.is_file() and not path.is_symlink():
            path.chmod(0o755 if path.stat().st_mode & 0o111 else 0o644)
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        _wheel("pack", "--dest-dir", tmp, str(tree))
        (built,) = Path(tmp).glob("*.whl")
        return built.replace(dest / built.name)
