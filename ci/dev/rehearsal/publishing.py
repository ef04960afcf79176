"""Step 4: publishing, as release.yml's publish jobs do it, to a real package index (pypiserver on
127.0.0.1, ci/dev/package_index.py), run until the release is whole, as a maintainer would re-run
a failed release.

  1. the index refuses the library wheel (PyPI's default 100 MiB limit for a project whose
     request is not granted yet): the run stops at its first stage, and the index holds none of
     the release's files, so no user can install a wheel whose library wheel is missing
  2. the limit is raised (the granted request) and the same files are published again: the run
     completes, the library wheel first
  3. a third run, as after a later job of the release failed: every file is on the index with the
     same sha256, so nothing is uploaded and it succeeds

Each run is what release.yml's publish jobs do: ci/release/publish.py plan, the library stage
uploaded (twine here, the publish action there), publish.py wait until the index serves it, then
the rest.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ci import commands
from ci.project_paths import ROOT
from ci.release.publish import published

log = commands.logger("publish-rehearsal")


def _run(command: list[str]) -> subprocess.CompletedProcess:
    proc = commands.run(command, log=log, capture=True, check=False, timeout=30 * 60, cwd=ROOT)
    sys.stdout.write(proc.stdout + proc.stderr)
    return proc


def publish(index: str, files: list[Path], work: Path, name: str) -> dict:
    """One publishing run of `files` to `index` (a local index: its URL, its simple API at
    <url>/simple/). Returns what was skipped, uploaded and refused, stage by stage."""
    dist, stages = work / f"publish-{name}" / "dist", work / f"publish-{name}" / "stages"
    dist.mkdir(parents=True)
    for f in files:
        (dist / f.name).hardlink_to(f)
    publish_py = [sys.executable, "-m", "ci.release.publish"]
    plan = _run(publish_py + ["plan", "--index-url", f"{index}/simple/", "--dir", str(dist), "--out", str(stages)])
    if plan.returncode != 0:
        raise RuntimeError(f"publish.py plan failed in run {name!r}: {plan.stdout + plan.stderr}")
    staged = {stage.name: sorted(p.name for p in stage.iterdir()) for stage in sorted(stages.iterdir())}
    result: dict = {
        "run": name,
        "skipped": sorted(f.name for f in files if not any(f.name in names for names in staged.values())),
        "uploaded": [],
        "refused": None,
    }
    for stage, names in staged.items():
        if not names:
            continue
        upload = _run(
            [sys.executable, "-m", "twine", "upload", "--non-interactive", "--disable-progress-bar"]
            + ["--repository-url", index, "-u", "rehearsal", "-p", "rehearsal"]
            + [str(stages / stage / n) for n in names]
        )
        if upload.returncode != 0:
            # twine prints the status line, then the index's reason
            plain = re.sub(r"\x1b\[[0-9;]*m", "", upload.stdout + upload.stderr)  # twine's colours
            lines = [ln.strip() for ln in plain.splitlines() if ln.strip()]
            said = [ln for ln in lines if "HTTPError" in ln or "File too large" in ln] or lines[-1:]
            result["refused"] = {"stage": stage, "message": " ".join(said)}
            return result
        result["uploaded"] += names
        if stage == "1-libraries":
            wait = _run(publish_py + ["wait", "--index-url", f"{index}/simple/", "--dir", str(stages / stage)])
            wait.check_returncode()
    return result


def held(index: str, files: list[Path]) -> list[str]:
    """Which of `files` the index serves (asked afresh, project by project)."""
    projects = {f.name.split("-")[0].replace("_", "-") for f in files}
    served = {name for project in projects for name in published(f"{index}/simple/", project, fresh=True)}
    return sorted(f.name for f in files if f.name in served)


def rehearse(index, files: list[Path], work: Path, libs_project: str, granted_limit: int) -> dict:
    """The three runs above against `index`, which starts out refusing the library wheel; each
    must end as a real index would leave it, or the rehearsal stops."""
    refused = publish(index, files, work, "refused")
    refused["left_on_index"] = held(index, files)
    if not refused["refused"] or refused["uploaded"] or refused["left_on_index"]:
        raise SystemExit(f"publishing to an index that refuses the library wheel left: {refused}")
    index.set_limit(libs_project, granted_limit)
    completed = publish(index, files, work, "completed")
    if completed["refused"] or held(index, files) != sorted(f.name for f in files):
        raise SystemExit(f"the second publishing run did not complete the release: {completed}")
    rerun = publish(index, files, work, "re-run")
    if rerun["uploaded"] or rerun["refused"] or rerun["skipped"] != sorted(f.name for f in files):
        raise SystemExit(f"a re-run of a published release did not skip every file: {rerun}")
    return {"refused": refused, "completed": completed, "re-run": rerun}
