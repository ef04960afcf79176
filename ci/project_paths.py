"""Where the ci/ scripts (ci/release/, ci/dev/) find things: the repository, the cache folder outside
it (PYTINYTENSOR_CACHE, else $XDG_CACHE_HOME/pytinytensor, else ~/.cache/pytinytensor: the rule
ci/nox.sh and the shell scripts follow), and copies of the working tree."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(
    os.environ.get("PYTINYTENSOR_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytinytensor"
)


def link_or_copy(source: Path, dest: Path) -> Path:
    """``dest`` holding ``source``'s bytes: a hard link where both are on one file system (a
    library wheel is 0.5 GB, and the release steps each keep the file they were given), else a copy."""
    dest.unlink(missing_ok=True)
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)
    return dest


def copy_worktree(dest: Path) -> int:
    """Copy the working tree's files (tracked, and untracked ones git does not ignore) to ``dest``:
    what a commit would hold, uncommitted changes included. Returns how many files."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    count = 0
    for name in filter(None, dict.fromkeys(listed.split("\0"))):
        source = ROOT / name
        if source.is_symlink() or source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name, follow_symlinks=False)
            count += 1
    return count
