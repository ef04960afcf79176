"""Run the build's commands (nvcc and its queries, the C++ compiler, the linker) with a time limit.

A hung compiler must not hang `pip install`: each command gets TINYTENSOR_BUILD_TIMEOUT seconds
(default 600; a full-architecture build takes well under a minute per command) and is then
killed with everything it started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

TIMEOUT_VAR = "TINYTENSOR_BUILD_TIMEOUT"
DEFAULT_TIMEOUT = 600


class CommandTimeout(OSError):
    """A command that ran past the limit (an OSError, like a command that cannot start)."""


class TimeLimitError(ValueError):
    fix = f"set {TIMEOUT_VAR} to a number of seconds, or unset it"


def time_limit(env=None) -> float:
    env = os.environ if env is None else env
    value = env.get(TIMEOUT_VAR, "").strip()
    try:
        limit = float(value) if value else DEFAULT_TIMEOUT
    except ValueError:
        raise TimeLimitError(f"{TIMEOUT_VAR}={value!r} is not a number of seconds") from None
    if limit <= 0:
        raise TimeLimitError(f"{TIMEOUT_VAR}={value!r} is not a positive number of seconds")
    return limit


def run(command: list, env=None) -> subprocess.CompletedProcess:
    """Run ``command`` capturing its output; raises OSError if it cannot start, CommandTimeout if it hangs."""
    limit = time_limit(env)
    # Its own process group, so that a timeout (or Ctrl-C) also stops what it started (cicc, ptxas, gcc).
    proc = subprocess.Popen(
        [str(c) for c in command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=limit)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            name = os.path.basename(str(command[0]))
            raise CommandTimeout(f"{name} did not finish within {limit:g} s ({TIMEOUT_VAR}); stopped") from None
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
