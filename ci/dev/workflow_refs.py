"""Every `uses:` of the workflows and local actions in a form that every Actions runner parses:
a local action or reusable workflow as `./path` (a step's local action after the job checked out
the repository), anything else as `owner/repo[/path]@<40-hex commit>`. Newer forms (the `$/`
self-reference, which needs a runner feature flag) make the whole file invalid on a runner that
does not know them, and a tag push then starts no job at all; zizmor and the schema accept them.
`nox -s workflows` runs it (ci/dev/check_workflows.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

PINNED = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[^@\s]+)?@[0-9a-f]{40}")
CHECKOUT = "actions/checkout@"


def _uses(document: dict) -> Iterator[tuple[str, str, bool]]:
    """(where, uses, whether a checkout step came before it in its job) for every `uses:`."""
    jobs = document.get("jobs") or {}
    for job_id, job in jobs.items():
        if "uses" in job:  # a reusable workflow, which runs before any step of this job
            yield f"job {job_id}", str(job["uses"]), False
        checked_out = False
        for i, step in enumerate(job.get("steps") or []):
            if "uses" in step:
                yield f"job {job_id}, step {step.get('name', i + 1)}", str(step["uses"]), checked_out
                checked_out = checked_out or str(step["uses"]).startswith(CHECKOUT)
    runs = document.get("runs") or {}
    for i, step in enumerate(runs.get("steps") or []):  # a composite action: its caller checked out
        if "uses" in step:
            yield f"step {step.get('name', i + 1)}", str(step["uses"]), True


def problems(text: str, name: str, root: Path) -> list[str]:
    """What is wrong with the `uses:` references of one workflow or action file (its text)."""
    import yaml

    found = []
    for where, uses, checked_out in _uses(yaml.safe_load(text) or {}):
        if uses.startswith("./"):
            target = root / uses
            if not (target.is_file() or (target / "action.yml").is_file() or (target / "action.yaml").is_file()):
                found.append(f"{name}, {where}: {uses} names no local action or workflow in the repository")
            elif where.startswith("job ") and "step" in where and not checked_out:
                found.append(f"{name}, {where}: the local action {uses} runs before the job checks out the repository")
        elif not PINNED.fullmatch(uses):
            found.append(
                f"{name}, {where}: `uses: {uses}` is neither ./path (a local action) nor owner/repo[/path]@<40-hex "
                "commit SHA>; a runner that does not parse it rejects the whole file and the event runs nothing"
            )
    return found


def check(root: Path) -> list[str]:
    """The problems of every workflow and local action under root/.github."""
    files = sorted((root / ".github" / "workflows").glob("*.y*ml"))
    files += sorted((root / ".github" / "actions").glob("*/action.y*ml"))
    return [p for f in files for p in problems(f.read_text(), str(f.relative_to(root)), root)]
