"""The GPU check's steps: each a subprocess under a time limit inside one overall budget, its
output teed to the terminal and to <out>/<step>.log, its exit status and seconds recorded."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

# (cap in seconds, the least kept back for it while earlier steps run): the caps add up to more
# than the budget; the budget decides, and a slow early step shortens the later ones.
LIMITS = {
    "wheels": (60, 10),
    "build": (240, 30),
    "nvidia-smi": (20, 5),
    "build-foreign": (180, 20),
    "diagnostics": (60, 10),
    "diagnostics-json": (60, 10),
    "pytest": (300, 60),
    "example": (120, 30),
    "bench_gpu": (150, 30),
}
ORDER = list(LIMITS)


class Checker:
    """Runs the steps of one check and keeps their records."""

    def __init__(self, out: Path, budget: float):
        self.out = out
        self.started = time.monotonic()
        self.deadline = self.started + budget
        self.steps: list[dict] = []
        self.temp_dirs: list[str] = []  # removed when the check ends

    def limit(self, name: str) -> int:
        """This step's timeout: its cap, less whatever the later steps need kept back."""
        cap, _ = LIMITS[name]
        later = sum(LIMITS[n][1] for n in ORDER[ORDER.index(name) + 1 :])
        return int(max(5, min(cap, self.deadline - time.monotonic() - later)))

    def run(self, name: str, command: list[str], env: dict, cwd: Path, stdout_file: Path | None = None) -> dict:
        """Run a step under its time limit; tee its output to out/<name>.log (stdout to
        ``stdout_file`` instead when given); record exit, seconds and the limit."""
        limit = self.limit(name)
        started = time.monotonic()
        print(f"== {name} (limit {limit} s): {shlex.join(command)}", flush=True)
        log_path = self.out / f"{name}.log"
        step = {"step": name, "command": shlex.join(command), "limit_s": limit, "timed_out": False}
        with open(log_path, "w") as log, open(stdout_file or os.devnull, "w") as captured:
            try:
                proc = subprocess.Popen(
                    command,
                    stdout=captured if stdout_file else subprocess.PIPE,
                    stderr=subprocess.PIPE if stdout_file else subprocess.STDOUT,
                    text=True,
                    errors="replace",
                    env=env,
                    cwd=cwd,
                    start_new_session=True,  # a timeout ends the step's whole process group
                )
            except OSError as exc:
                log.write(f"cannot start: {exc}\n")
                print(f"== {name}: cannot start: {exc}", flush=True)
                step.update(exit=127, seconds=0.0, note=f"cannot start: {exc}")
                self.steps.append(step)
                return step
            stream = proc.stderr if stdout_file else proc.stdout

            def tee():
                for line in stream:
                    sys.stdout.write(line)
                    sys.stdout.flush()
                    log.write(line)

            reader = threading.Thread(target=tee, daemon=True)
            reader.start()
            try:
                status = proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                step["timed_out"] = True
                # SIGINT first: pytest then stops as on Ctrl-C and still writes its junit XML
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(proc.pid, sig)
                    except ProcessLookupError:
                        break
                    try:
                        proc.wait(timeout=10)
                        break
                    except subprocess.TimeoutExpired:
                        continue
                status = 124
            reader.join(timeout=10)
            if step["timed_out"]:
                log.write(f"\n== {name}: TIMED OUT after {limit} s\n")
        seconds = round(time.monotonic() - started, 1)
        step.update(exit=status, seconds=seconds)
        print(
            f"== {name}: exit {status} in {seconds:.0f} s" + (" (TIMED OUT)" if step["timed_out"] else ""), flush=True
        )
        self.steps.append(step)
        return step

    def skip(self, name: str, why: str) -> dict:
        step = {"step": name, "exit": None, "seconds": 0.0, "outcome": "not-run", "note": why}
        print(f"== {name}: not run: {why}", flush=True)
        self.steps.append(step)
        return step

    def log_text(self, name: str) -> str:
        path = self.out / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""
