"""Atomic file writes: the target path holds either its old content or the complete new file.

The data goes to a temporary file in the target's own folder (so the final ``os.replace`` is a
rename within one file system, which POSIX and Windows make atomic), is flushed to disk, and only
then replaces the target. On any failure, including one raised midway by the writer, the
temporary file is removed and the target is left as it was.

The new file keeps the permission bits of the file it replaces (a private checkpoint stays
private); a new file gets what ``open()`` would give it, ``0o666`` less the umask.

A process killed mid-save (kill -9, power loss) cannot remove its temporary file, so the names say
who wrote them: ``.<name>.tt-tmp-<host>-<pid>-<random>`` (where that would be longer than a file name
may be, ``<name>`` is cut and a digest of the whole name follows it, so any name that the file
system takes can be saved to). Each save first removes the leftovers of
its own target whose writer is gone: same host and no such process any more, or (another host, or
a pid reused since) untouched for ``STALE_AFTER_S``. A live writer's file is never taken from it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import socket
import stat
import sys
import time
import zlib
from collections.abc import Callable
from typing import IO

TMP_MARK = ".tt-tmp-"
# A writer keeps touching its file; one untouched this long belongs to no running save.
STALE_AFTER_S = 24 * 3600
# The longest file name, in bytes, where the file system does not say (ext4, XFS, btrfs, APFS).
NAME_MAX = 255
# The longest tag after the mark: host (8) - pid (at most 10 digits) - random (8).
_TAG_MAX = 28


def write_atomically(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write(binary_file)`` on a temporary file, then move it onto ``path``."""
    path = os.fspath(path)
    folder, base = os.path.split(os.path.abspath(path))
    mode = _existing_mode(path)  # a name too long for the file system stops here, before the folder changes
    name_max = _name_max(folder)
    remove_stale_temporaries(folder, base, name_max)
    tmp = None
    try:
        # While it is written, the file is no more readable than the one it replaces.
        tmp, fd = _create_temporary(folder, base, 0o666 if mode is None else 0o600, name_max)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            if mode is not None:
                _chmod(fh.fileno(), tmp, mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    _sync_folder(folder)


def temporary_name(base: str, host: str | None = None, pid: int | None = None, name_max: int = NAME_MAX) -> str:
    """The name of a temporary file for target ``base``, written by ``pid`` on ``host`` (this process)."""
    pid = os.getpid() if pid is None else pid
    return f"{_prefix(base, name_max)}{host or _host()}-{pid}-{secrets.token_hex(4)}"


def _prefix(base: str, name_max: int) -> str:
    """How the temporary names of target ``base`` start: ``.<base>.tt-tmp-``, or, where the whole
    name could be longer than ``name_max`` bytes, ``.<base cut>~<digest of base>.tt-tmp-``."""
    prefix = f".{base}{TMP_MARK}"
    if len(os.fsencode(prefix)) + _TAG_MAX <= name_max:
        return prefix
    digest = hashlib.sha256(os.fsencode(base)).hexdigest()[:16]
    room = name_max - _TAG_MAX - len(TMP_MARK) - len(digest) - 2  # the leading "." and the "~"
    # cut in bytes; a character the cut splits is dropped whole
    kept = os.fsencode(base)[:room].decode(sys.getfilesystemencoding(), "ignore")
    return f".{kept}~{digest}{TMP_MARK}"


def _name_max(folder: str) -> int:
    """The longest file name ``folder``'s file system takes, in bytes."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (AttributeError, ValueError, OSError):  # no pathconf (Windows), or the folder does not say
        return NAME_MAX


def remove_stale_temporaries(folder: str, base: str, name_max: int = NAME_MAX) -> None:
    """Remove the temporary files of target ``base`` in ``folder`` whose writer is gone (best effort)."""
    prefix = _prefix(base, name_max)
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and _is_stale(entry, entry.name[len(prefix) :]):
                with contextlib.suppress(OSError):  # another save may have removed it first
                    os.unlink(entry.path)


def _is_stale(entry: os.DirEntry[str], tag: str) -> bool:
    host, _, rest = tag.partition("-")
    pid_text, _, _random = rest.partition("-")
    if not pid_text.isdigit():
        return False  # not a name this module makes: leave it alone
    try:
        untouched = time.time() - entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        return False
    if untouched > STALE_AFTER_S:
        return True
    return host == _host() and not _process_exists(int(pid_text))


def _process_exists(pid: int) -> bool:
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, and belongs to another user
        return True
    return True


def _host() -> str:
    # A short fixed-width tag: a pid means something only on the host that wrote it (shared folders).
    return f"{zlib.crc32(socket.gethostname().encode()):08x}"


def _existing_mode(path: str) -> int | None:
    """The permission bits of the file ``path`` will replace, or None when there is none."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return stat.S_IMODE(st.st_mode) & 0o777 if stat.S_ISREG(st.st_mode) else None


def _create_temporary(folder: str, base: str, mode: int, name_max: int) -> tuple[str, int]:
    # os.open with mode 0o666 lets the umask decide the permissions, as a plain open() would;
    # tempfile.mkstemp would make the saved file private (0o600).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = os.path.join(folder, temporary_name(base, name_max=name_max))
        try:
            return tmp, os.open(tmp, flags, mode)
        except FileExistsError:
            continue


def _chmod(fd: int, tmp: str, mode: int) -> None:
    if os.chmod in os.supports_fd:
        os.chmod(fd, mode)
    else:
        os.chmod(tmp, mode)


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
