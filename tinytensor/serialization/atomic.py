"""Atomic file writes: the target path holds either its old content or the complete new file.

The data goes to a temporary file in the target's own folder (so the final ``os.replace`` is a
rename within one file system, which POSIX and Windows make atomic), is flushed to disk, and only
then replaces the target. On any failure, including one raised midway by the writer, the
temporary file is removed and the target is left as it was.

The new file keeps the permission bits of the file it replaces (a private checkpoint stays
private); a new file gets what ``open()`` would give it, ``0o666`` less the umask.

A process killed mid-save (kill -9, power loss) cannot remove its temporary file, so each save
first removes the leftovers of its own target whose writer is surely gone, and never a live
writer's, even one in another container or PID namespace sharing the folder, or on another host.
The names say who wrote them: ``.<name>.tt-tmp-<kernel>-<pidns>-<pid>-<random>`` (where that would
be longer than a file name may be, ``<name>`` is cut and a digest of the whole name follows it, so
any name that the file system takes can be saved to). ``<kernel>`` tags the running kernel (Linux's
``boot_id``, the same in every container on it, new at each boot) and ``<pidns>`` the writer's
PID namespace (``/proc/self/ns/pid``); both are ``00000000`` where unknown (other systems). A
leftover goes when

- its writer ran on this kernel in this PID namespace and no process has its pid: the pid was the
  writer's in the namespace where ``os.kill`` looks it up (the hostname proves neither: containers
  share one, and a pid seen from another namespace names another process, or none);
- its writer ran on this kernel in another PID namespace (another container, ``unshare --pid``)
  and an exclusive ``flock`` on the file is granted at once. The writer holds that lock from just
  after creating the file until the file is closed, after the rename: flock locks belong to the
  open file in the kernel, whatever the namespaces, and go when it is closed, however the writer
  ends (a child it forked meanwhile keeps it: the file then goes by age). This needs no lock
  shared between hosts: on NFS (where Linux emulates flock with byte-range locks on the server,
  or keeps it local with ``nolock`` or ``local_lock=flock``) and on SMB, processes on one kernel
  see each other's locks either way. Where the writer could not lock
  (the file system refused it, e.g. ``ENOLCK`` without an NFS lock daemon), its file is renamed
  ``...-<random>-u`` and this rule does not apply to it;
- or (another kernel, a reused pid, an older version's name, another system) it was untouched for
  ``STALE_AFTER_S``: a host's pid or lock says nothing on another, so age is the only proof there.

A remover unlinks a file only while it holds that file's lock and the name still leads to it; a
writer that cannot take its lock at once, or then finds its file no longer has its name, starts
again with a new one. So a remover that comes between the writer's create and lock costs a retry,
never a save.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import stat
import sys
import time
from collections.abc import Callable
from functools import cache
from typing import IO

try:
    import fcntl
except ImportError:  # Windows: no locks, so leftovers go by age only there
    fcntl = None  # type: ignore[assignment]

TMP_MARK = ".tt-tmp-"
# A writer keeps touching its file; one untouched this long belongs to no running save.
STALE_AFTER_S = 24 * 3600
# The longest file name, in bytes, where the file system does not say (ext4, XFS, btrfs, APFS).
NAME_MAX = 255
# The longest tag after the mark: kernel (8) - pidns (8) - pid (at most 10 digits) - random (8) -u.
_TAG_MAX = 39
UNKNOWN = "00000000"
UNLOCKED = "-u"
_TAG = re.compile(r"([0-9a-f]{8})-([0-9a-f]{8})-([0-9]+)-[0-9a-f]{8}(-u)?")
# Names of versions that tagged the hostname: ``<host>-<pid>-<random>``; they go by age.
_OLD_TAG = re.compile(r"[^-]*-[0-9]+-.*")


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
            if os.name == "posix":  # renamed while open, so the writer's lock outlives the name
                os.replace(tmp, path)
                tmp = None
        if tmp is not None:  # Windows renames no open file
            os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    _sync_folder(folder)


def temporary_name(
    base: str,
    kernel: str | None = None,
    pidns: str | None = None,
    pid: int | None = None,
    name_max: int = NAME_MAX,
) -> str:
    """The name of a temporary file for target ``base``, written by ``pid`` in PID namespace
    ``pidns`` on ``kernel`` (by default, this process's: see the module's docstring)."""
    pid = os.getpid() if pid is None else pid
    return f"{_prefix(base, name_max)}{kernel or _kernel()}-{pidns or _pid_namespace()}-{pid}-{secrets.token_hex(4)}"


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
    """Remove the temporary files of target ``base`` in ``folder`` whose writer is surely gone
    (best effort: a file that cannot be judged or removed stays)."""
    prefix = _prefix(base, name_max)
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(prefix):
                with contextlib.suppress(OSError):  # another save may have removed it first
                    _remove_if_stale(entry, entry.name[len(prefix) :])


def _remove_if_stale(entry: os.DirEntry[str], tag: str) -> None:
    ours = _TAG.fullmatch(tag)
    if ours is None and _OLD_TAG.fullmatch(tag) is None:
        return  # not a name this module makes: leave it alone
    if time.time() - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER_S:
        os.unlink(entry.path)
        return
    if ours is None or _kernel() == UNKNOWN or ours[1] != _kernel():
        return  # written on another kernel: a pid or a lock here says nothing about its writer
    _, pidns, pid, unlocked = ours.groups()
    if pidns == _pid_namespace() != UNKNOWN:
        if not _process_exists(int(pid)):
            os.unlink(entry.path)
    elif unlocked is None and entry.is_file(follow_symlinks=False):
        _remove_if_unlocked(entry.path)


def _remove_if_unlocked(path: str) -> None:
    """Remove ``path`` if no process holds its lock, checking under the lock that the name still
    leads to the file locked (a writer that has just finished has renamed it onto its target)."""
    assert fcntl is not None  # _kernel() is known only on Linux
    nofollow = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    try:  # NFS grants an exclusive flock only to a file open for writing; opening writes nothing
        fd = os.open(path, os.O_WRONLY | nofollow)
    except PermissionError:  # a file the writer made read-only (0o444) before it died
        fd = os.open(path, os.O_RDONLY | nofollow)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its writer holds it, or this file system refuses locks: no proof
            return
        if _same_file(os.fstat(fd), os.stat(path, follow_symlinks=False)):
            os.unlink(path)
    finally:
        os.close(fd)  # releases the lock, after the unlink


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, and belongs to another user
        return True
    return True


def _tag(identity: str) -> str:
    return hashlib.sha256(identity.encode()).hexdigest()[:8].replace(UNKNOWN, "00000001")


@cache
def _kernel() -> str:
    """A tag of the running kernel: the same in every container on it, another after a reboot."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            boot_id = fh.read().strip()
    except (OSError, ValueError):  # not Linux, or /proc hidden
        return UNKNOWN
    return _tag(boot_id) if boot_id and fcntl is not None else UNKNOWN


def _pid_namespace() -> str:
    """A tag of this process's PID namespace (the one ``os.kill`` looks pids up in); not cached,
    as ``unshare(CLONE_NEWPID)`` then a fork gives a child another one."""
    try:
        return _tag(os.readlink("/proc/self/ns/pid"))  # "pid:[<inode>]", unique on a running kernel
    except OSError:  # before Linux 3.8, or /proc hidden: pids are then judged by their lock only
        return UNKNOWN


def _existing_mode(path: str) -> int | None:
    """The permission bits of the file ``path`` will replace, or None when there is none."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return stat.S_IMODE(st.st_mode) & 0o777 if stat.S_ISREG(st.st_mode) else None


def _create_temporary(folder: str, base: str, mode: int, name_max: int) -> tuple[str, int]:
    """A new temporary file, open for writing and locked (see the module's docstring)."""
    # os.open with mode 0o666 lets the umask decide the permissions, as a plain open() would;
    # tempfile.mkstemp would make the saved file private (0o600).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = os.path.join(folder, temporary_name(base, name_max=name_max))
        try:
            fd = os.open(tmp, flags, mode)
        except FileExistsError:
            continue
        try:
            kept = _lock_own(fd, tmp)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        if kept is not None:
            return kept, fd
        # A remover took the file between its creation and the lock: start again with a new one.
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _lock_own(fd: int, tmp: str) -> str | None:
    """Lock the new file ``tmp``; its name then, or None when a remover has unlinked it first."""
    if _kernel() == UNKNOWN:
        return tmp  # no remover trusts a lock here: nothing to hold
    assert fcntl is not None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # a remover holds it, to unlink it: leave it the file
        return None
    except OSError:  # the file system refuses locks: say so in the name, so none is trusted
        try:
            os.rename(tmp, tmp + UNLOCKED)
        except FileNotFoundError:
            return None
        return tmp + UNLOCKED
    try:
        return tmp if _same_file(os.fstat(fd), os.stat(tmp, follow_symlinks=False)) else None
    except FileNotFoundError:
        return None


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
