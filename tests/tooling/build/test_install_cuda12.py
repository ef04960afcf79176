"""ci/release/install-cuda12.sh deletes and remakes its PREFIX: never one holding files it did not make.

Runs the real script; the tools that would download (apt-get, pip, uv, dnf) are replaced on PATH by
stubs that log their call and fail, so that this test fetches nothing even if the guard breaks.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "ci" / "release" / "install-cuda12.sh"


def test_a_prefix_holding_someone_elses_files_is_refused_and_kept(tmp_path):
    prefix = tmp_path / "opt-cuda"
    prefix.mkdir()
    (prefix / "notes.txt").write_text("not the installer's\n")
    stubs, calls = tmp_path / "stubs", tmp_path / "downloads.log"
    stubs.mkdir()
    for tool in ("apt-get", "python3", "uv", "dnf"):
        (stubs / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >>"{calls}"\nexit 1\n')
        (stubs / tool).chmod(0o755)
    env = dict(os.environ, PATH=f"{stubs}:{os.environ['PATH']}", PYTINYTENSOR_CACHE=str(tmp_path / "cache"))

    proc = subprocess.run([str(SCRIPT), str(prefix)], capture_output=True, text=True, env=env, timeout=60)

    assert proc.returncode != 0, proc.stderr
    assert f"refusing to replace {prefix}" in proc.stderr and ".pytinytensor-cuda12" in proc.stderr, proc.stderr
    assert (prefix / "notes.txt").read_text() == "not the installer's\n"
    assert not calls.exists(), calls.read_text()  # nothing was fetched
    assert not (tmp_path / "cache").exists()  # nor any work folder made
