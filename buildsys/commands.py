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

from . import settings

TIMEOUT_VAR = settings.BUILD_TIMEOUT


class CommandTimeout(OSError):
    """A command that ran past the limit (an OSError, like a command that cannot start)."""


def run(command: list, env=None) -> subprocess.CompletedProcess:
    """Run ``command`` capturing its output; raises OSError if it cannot start, CommandTimeout if it hangs."""
    limit = settings.build_timeout(env)
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
