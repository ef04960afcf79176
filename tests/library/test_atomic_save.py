"""Saves replace a file whole and leave nothing behind: the file keeps its permission bits, a save
that fails or is interrupted removes its temporary file, and one killed outright (kill -9) has its
temporary file removed by the next save of the same file, while a save still running keeps its own,
even one in another PID namespace (a container sharing the folder), whose pid means nothing here.

Interrupted saves run in real subprocesses: the child writes a complete archive through the same
atomic write ``tt.save`` uses, then waits (so the kill lands mid-save, deterministically) until the
parent signals it or tells it to go on.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest

import tinytensor as tt
from tinytensor.serialization import atomic, load, save

PACKAGE_PARENT = str(Path(tt.__file__).resolve().parents[1])
POSIX = pytest.mark.skipif(os.name != "posix", reason="needs POSIX signals and permission bits")
LINUX = pytest.mark.skipif(
    atomic._kernel() == atomic.UNKNOWN,
    reason="needs Linux's boot_id and flock: elsewhere a killed save's leftover goes by age only",
)

# Saves the array ``np.full(N, VALUE)`` to sys.argv[1], pausing after the archive is written and before
# the rename: prints "paused", then waits for a line on stdin (or a signal). With sys.argv[4:6], its
# temporary file's name says it was written in PID namespace PIDNS by PID (a faked writer elsewhere).
PAUSED_SAVER = """
    import functools, signal, sys, numpy as np
    from tinytensor.serialization import atomic
    from tinytensor.serialization.archive import write_archive
    from tinytensor.serialization.atomic import write_atomically

    if len(sys.argv) > 4:
        atomic.temporary_name = functools.partial(atomic.temporary_name, pidns=sys.argv[4], pid=int(sys.argv[5]))

    def write(fh):
        write_archive({"w": np.full(int(sys.argv[2]), float(sys.argv[3]))}, fh)
        fh.flush()
        print("paused", flush=True)
        sys.stdin.readline()

    # A shell starts background jobs with SIGINT ignored, and Python keeps an inherited SIG_IGN:
    # restore Python's own handler so the parent's SIGINT is a KeyboardInterrupt wherever this runs.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        write_atomically(sys.argv[1], write)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(3)
"""


def _paused_save(path, value, n=1000, launcher=(), name_says=()):
    child = subprocess.Popen(
        [*launcher, sys.executable, "-c", textwrap.dedent(PAUSED_SAVER), str(path), str(n), str(value), *name_says],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT),
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "paused\n", "the saving subprocess did not reach its pause"
    return child


def _value(path):
    return float(load(path)["w"][0])


def _names(folder):
    return sorted(p.name for p in Path(folder).iterdir())


def _free_pid():
    """A pid no process has here, so a check of the pid alone would call its writer dead."""
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    for pid in range(pid_max - 1, 300, -1):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except OSError:
            pass
    raise AssertionError("every pid is in use")


def _other_tag(tag):
    return f"{(int(tag, 16) + 1) % 2**32:08x}"


# ---------------------------------------------------------------------------- permission bits
@POSIX
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o444], ids=oct)
def test_saving_over_a_file_keeps_its_permission_bits(mode, tmp_path):
    path = tmp_path / "ckpt.tt"
    save({"w": np.zeros(3)}, path)
    os.chmod(path, mode)
    seen = []

    def write(fh):  # the temporary file is no more readable by others than the file it replaces
        seen.append(stat.S_IMODE(os.fstat(fh.fileno()).st_mode))
        fh.write(b"new content")

    atomic.write_atomically(path, write)
    assert path.read_bytes() == b"new content"
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    assert seen[0] & 0o077 == 0, oct(seen[0])

    save({"w": np.ones(3)}, path)  # and through tt.save
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    assert _value(path) == 1.0


@POSIX
@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077], ids=oct)
def test_a_new_file_gets_what_open_would_give_it(umask, tmp_path):
    previous = os.umask(umask)
    try:
        save({"w": np.zeros(3)}, tmp_path / "new.tt")
        with open(tmp_path / "by_open", "wb"):
            pass
    finally:
        os.umask(previous)
    expected = stat.S_IMODE(os.stat(tmp_path / "by_open").st_mode)
    assert expected == 0o666 & ~umask
    assert stat.S_IMODE(os.stat(tmp_path / "new.tt").st_mode) == expected


# ---------------------------------------------------------------------------- interrupted saves
@POSIX
@LINUX
def test_a_save_killed_mid_write_keeps_the_old_file_and_the_next_save_removes_its_leftover(tmp_path):
    path = tmp_path / "ckpt.tt"
    save({"w": np.full(10, 1.0)}, path)
    child = _paused_save(path, 2.0, n=2_000_000)  # 16 MB written, then killed before the rename
    child.kill()
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    leftovers = [n for n in _names(tmp_path) if n != "ckpt.tt"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".ckpt.tt.")
    assert _value(path) == 1.0

    save({"w": np.full(10, 3.0)}, path)
    assert _names(tmp_path) == ["ckpt.tt"]
    assert _value(path) == 3.0


@POSIX
def test_an_interrupted_save_removes_its_temporary_file(tmp_path):
    path = tmp_path / "ckpt.tt"
    save({"w": np.full(10, 1.0)}, path)
    child = _paused_save(path, 2.0)
    child.send_signal(signal.SIGINT)  # KeyboardInterrupt in the middle of the write
    out, _ = child.communicate(timeout=60)
    assert (child.returncode, out) == (3, "interrupted\n")
    assert _names(tmp_path) == ["ckpt.tt"]
    assert _value(path) == 1.0


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE")
def test_a_write_that_fails_for_lack_of_space_removes_its_temporary_file(tmp_path):
    # The file size limit makes the kernel refuse the write (EFBIG), as a full disk does (ENOSPC).
    script = """
        import errno, resource, signal, sys, numpy as np, tinytensor as tt
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        try:
            tt.save({"w": np.full(1 << 20, 2.0)}, sys.argv[1])
        except OSError as exc:
            print(errno.errorcode[exc.errno])
    """
    path = tmp_path / "ckpt.tt"
    save({"w": np.full(10, 1.0)}, path)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT),
    )
    assert (proc.returncode, proc.stdout) == (0, "EFBIG\n"), proc.stderr
    assert _names(tmp_path) == ["ckpt.tt"]
    assert _value(path) == 1.0


# ---------------------------------------------------------------------------- concurrent writers
@POSIX
def test_a_save_still_running_keeps_its_temporary_file_when_another_save_runs(tmp_path):
    path = tmp_path / "ckpt.tt"
    child = _paused_save(path, 2.0)
    save({"w": np.full(10, 1.0)}, path)  # the other writer is alive: its file is not taken from it
    assert len(_names(tmp_path)) == 2
    out, _ = child.communicate("go on\n", timeout=60)
    assert child.returncode == 0, out
    assert _names(tmp_path) == ["ckpt.tt"]
    assert _value(path) == 2.0  # the last rename wins, whole


# The writer's PID namespace is its own: pid 1 runs the saver, after setting the namespace's last pid
# (where the kernel lets it) so that the saver's pid is one no process has outside.
NAMESPACE_INIT = """
    import contextlib, subprocess, sys
    with contextlib.suppress(OSError), open("/proc/sys/kernel/ns_last_pid", "w") as fh:
        fh.write(str(int(sys.argv[1]) - 1))
    sys.exit(subprocess.call(sys.argv[2:]))
"""
UNSHARE = ["unshare", "--pid", "--fork", "--kill-child", "--map-root-user"]


def _unshare_refusal():
    if shutil.which("unshare") is None:
        return "no unshare command"
    try:
        proc = subprocess.run([*UNSHARE, "true"], capture_output=True, text=True, timeout=30)
    except OSError as exc:
        return f"unshare cannot run: {exc}"
    return None if proc.returncode == 0 else f"unshare is not permitted here: {proc.stderr.strip()}"


@pytest.mark.skipif(os.name != "posix" or atomic._kernel() == atomic.UNKNOWN, reason="needs Linux")
def test_a_save_in_another_pid_namespace_keeps_its_temporary_file_when_another_save_runs(tmp_path):
    refusal = _unshare_refusal()
    if refusal:
        pytest.skip(reason=refusal)  # the refusal says why: no unshare, or not permitted here
    path = tmp_path / "ckpt.tt"
    init = [*UNSHARE, sys.executable, "-c", textwrap.dedent(NAMESPACE_INIT), str(_free_pid())]
    child = _paused_save(path, 2.0, launcher=init)
    save({"w": np.full(10, 1.0)}, path)  # its writer's pid is unknown here, yet it is alive
    assert len(_names(tmp_path)) == 2, _names(tmp_path)
    out, _ = child.communicate("go on\n", timeout=60)
    assert child.returncode == 0, out
    assert _names(tmp_path) == ["ckpt.tt"]
    assert _value(path) == 2.0


@LINUX
def test_a_writer_whose_pid_says_nothing_here_keeps_its_file_while_alive_and_loses_it_once_killed(tmp_path):
    # The name says another PID namespace and a pid that no process has here: only its lock tells.
    path = tmp_path / "ckpt.tt"
    name_says = (_other_tag(atomic._pid_namespace()), str(_free_pid()))
    child = _paused_save(path, 2.0, name_says=name_says)
    save({"w": np.full(10, 1.0)}, path)
    assert len(_names(tmp_path)) == 2, _names(tmp_path)
    out, _ = child.communicate("go on\n", timeout=60)
    assert child.returncode == 0, out
    assert _names(tmp_path) == ["ckpt.tt"] and _value(path) == 2.0

    child = _paused_save(path, 3.0, name_says=name_says)
    child.kill()
    child.communicate(timeout=60)
    assert len(_names(tmp_path)) == 2, _names(tmp_path)
    save({"w": np.full(10, 4.0)}, path)
    assert _names(tmp_path) == ["ckpt.tt"] and _value(path) == 4.0


def test_concurrent_writers_leave_one_whole_file_and_nothing_else(tmp_path):
    script = """
        import sys, numpy as np, tinytensor as tt
        for i in range(40):
            tt.save({"w": np.full(50_000, float(sys.argv[2]))}, sys.argv[1])
    """
    path = tmp_path / "ckpt.tt"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(script), str(path), str(value)],
            env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT),
        )
        for value in (1.0, 2.0, 3.0)
    ]
    assert [w.wait(timeout=300) for w in writers] == [0, 0, 0]
    assert _names(tmp_path) == ["ckpt.tt"]
    w = load(path)["w"]
    assert w.shape == (50_000,) and len(set(w.tolist())) == 1 and w[0] in (1.0, 2.0, 3.0)


# ---------------------------------------------------------------------------- which leftovers go
def _leftover(folder, kernel, pidns, pid, age_s, unlocked=False):
    path = Path(folder) / atomic.temporary_name("ckpt.tt", kernel=kernel, pidns=pidns, pid=pid)
    if unlocked:  # its writer could not lock it
        path = path.with_name(path.name + atomic.UNLOCKED)
    path.write_bytes(b"partial")
    os.utime(path, (path.stat().st_atime - age_s,) * 2)
    return path.name


def _older_leftover(folder, pid, age_s):  # versions up to this one named them .<name>.tt-tmp-<host>-<pid>-<random>
    path = Path(folder) / f".ckpt.tt{atomic.TMP_MARK}{zlib.crc32(socket.gethostname().encode()):08x}-{pid}-{age_s:08x}"
    path.write_bytes(b"partial")
    os.utime(path, (path.stat().st_atime - age_s,) * 2)
    return path.name


@LINUX
def test_a_leftover_goes_when_its_writer_is_surely_gone_or_it_was_untouched_for_a_day(tmp_path):
    here, ns = atomic._kernel(), atomic._pid_namespace()
    elsewhere, other_ns = _other_tag(here), _other_tag(ns)
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    day = atomic.STALE_AFTER_S
    kept = {
        _leftover(tmp_path, here, ns, os.getpid(), 0),  # a running save (this process)
        _leftover(tmp_path, elsewhere, ns, finished.pid, 60),  # a pid of another kernel says nothing here
        _leftover(tmp_path, here, other_ns, finished.pid, 60, unlocked=True),  # nor one of another namespace
        _older_leftover(tmp_path, finished.pid, 60),  # an older version's: its hostname-pid says nothing
    }
    removed = {
        _leftover(tmp_path, here, ns, finished.pid, 0),  # its writer has exited
        _leftover(tmp_path, here, ns, os.getpid(), day + 60),  # a pid reused since by a running process
        _leftover(tmp_path, elsewhere, ns, finished.pid, day + 60),
        _leftover(tmp_path, here, other_ns, os.getpid(), 0),  # no process holds its lock
        _older_leftover(tmp_path, finished.pid, day + 60),
    }
    (tmp_path / ".other.tt.tt-tmp-00000000-1-0").write_bytes(b"another file's")
    kept.add(".other.tt.tt-tmp-00000000-1-0")
    save({"w": np.zeros(2)}, tmp_path / "ckpt.tt")
    assert set(_names(tmp_path)) == kept | {"ckpt.tt"}
    assert not removed & set(_names(tmp_path))


# ---------------------------------------------------------------------------- long names
@POSIX
@LINUX
@pytest.mark.parametrize("name", ["a" * 240 + ".tt", "é" * 124 + ".tt"], ids=["240 ascii", "251 bytes of utf-8"])
def test_any_name_the_file_system_takes_can_be_saved_to(name, tmp_path):
    assert len(os.fsencode(name)) <= os.pathconf(tmp_path, "PC_NAME_MAX")
    path = tmp_path / name
    path.write_bytes(b"")  # the file system takes this name
    save({"w": np.full(3, 2.0)}, path)
    assert _names(tmp_path) == [name] and _value(path) == 2.0
    # a save killed mid-write leaves a temporary file of a name the next save recognises
    child = _paused_save(path, 5.0)
    leftovers = [n for n in _names(tmp_path) if n != name]
    assert len(leftovers) == 1 and len(os.fsencode(leftovers[0])) <= 255, leftovers
    child.kill()
    child.communicate(timeout=60)
    save({"w": np.full(3, 3.0)}, path)
    assert _names(tmp_path) == [name] and _value(path) == 3.0


@POSIX
def test_a_name_too_long_for_the_file_system_is_refused_before_anything_is_written(tmp_path):
    path = tmp_path / ("a" * 256 + ".tt")
    with pytest.raises(OSError, match="File name too long") as raised:
        save({"w": np.zeros(3)}, path)
    assert raised.value.errno == errno.ENAMETOOLONG and raised.value.filename == str(path)
    assert _names(tmp_path) == []
