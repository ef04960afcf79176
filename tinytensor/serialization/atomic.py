"""Atomic file writes: the target path holds either its old content or the complete new file.

The data goes to a temporary file in the target's own folder (so the final ``os.replace`` is a
rename within one file system, which POSIX and Windows make atomic), is flushed to disk, and only
then replaces the target. On any failure, including one raised midway by the writer, the
temporary file is removed and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import secrets


def write_atomically(path, write) -> None:
    """Call ``write(binary_file)`` on a temporary file, then move it onto ``path``."""
    path = os.fspath(path)
    folder, base = os.path.split(os.path.abspath(path))
    tmp, fd = _create_temporary(folder, base)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(folder)


def _create_temporary(folder: str, base: str) -> tuple[str, int]:
    # os.open with mode 0o666 lets the umask decide the permissions, as a plain open() would;
    # tempfile.mkstemp would make the saved file private (0o600).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = os.path.join(folder, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue


def _sync_folder(folder: str) -> None:
    """Make the rename itself durable (POSIX); best effort, as not every system allows it."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
