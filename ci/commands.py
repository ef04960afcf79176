"""The one command runner and logger of ci/: each command is echoed before it runs, and every run
has a timeout, which names the command when it expires, so that a hung tool (an index that never
answers, a build waiting on a lock) fails the job instead of holding it until CI kills it.

    log = logger("release-rehearsal")            # log("...") prints "release-rehearsal: ..."
    run(["uv", "build", ...], log=log)           # raises CalledProcessError on a failure
    out = run([...], log=log, capture=True).stdout
    out = run([...], log=log, tee=True).stdout   # echoed as it comes, and returned
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

# Long enough for the slowest step (the library wheel's repair of a 581 MB wheel takes minutes),
# short enough that a hang fails well inside CI's limit. Callers that know better pass their own.
DEFAULT_TIMEOUT_S = 45 * 60

Log = Callable[[str], None]


def logger(prefix: str, stream: TextIO | None = None) -> Log:
    """A function printing `prefix: message`, flushed, to `stream` (stdout unless given; the
    release scripts whose stdout is data log to stderr)."""

    def log(message: str) -> None:
        print(f"{prefix}: {message}", file=stream or sys.stdout, flush=True)

    return log


class CommandTimeout(RuntimeError):
    pass


def printable(command: Sequence[str | Path] | str) -> str:
    return command if isinstance(command, str) else " ".join(map(str, command))


def run(
    command: Sequence[str | Path] | str,
    *,
    log: Log,
    timeout: float = DEFAULT_TIMEOUT_S,
    check: bool = True,
    capture: bool = False,
    tee: bool = False,
    **kwargs,
) -> subprocess.CompletedProcess:
    """Run `command` (a list; a string only with shell=True). `capture`: its stdout and stderr are
    returned as text; `tee`: both are echoed to stdout as they come and returned as .stdout."""
    log(f"$ {printable(command)}")
    try:
        if not tee:
            if capture:
                kwargs.update(capture_output=True, text=True)
            return subprocess.run(command, check=check, timeout=timeout, **kwargs)
        return _tee(command, timeout, check, **kwargs)
    except subprocess.TimeoutExpired:
        raise CommandTimeout(f"`{printable(command)}` did not finish within {timeout:g} s") from None


def _tee(command, timeout: float, check: bool, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)
    timer = threading.Timer(timeout, proc.kill)  # reading blocks: the timer ends the process instead
    timer.start()
    lines = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append(line)
        proc.wait()
    finally:
        expired = not timer.is_alive()
        timer.cancel()
    output = "".join(lines)
    if expired:
        raise subprocess.TimeoutExpired(command, timeout, output)
    if check and proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, command, output)
    return subprocess.CompletedProcess(command, proc.returncode, output)
