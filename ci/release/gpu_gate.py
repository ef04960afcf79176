"""The GPU gate's watchdog: a job on a self-hosted runner that no online runner matches stays queued
until GitHub cancels it after a day. This runs beside the GPU smoke test (release.yml's
gpu-runner-watchdog job) and waits until every job of that name has started; if one is still
queued after --minutes, it names the missing runner, cancels the release's run (nothing after the
gate can publish) and fails.

    python -m ci.release.gpu_gate --jobs "GPU smoke test" --labels self-hosted,linux,x64,gpu --minutes 20

Reads GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT and GITHUB_TOKEN (which
needs `actions: write` to cancel the run), as Actions sets them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request
from collections.abc import Callable

POLL_S = 20


def state(jobs: list[dict], prefix: str) -> tuple[str, list[str]]:
    """("started", []) once every job named `prefix`... has left the queue; ("queued", their names)
    while any waits for a runner; ("absent", []) before any exists (the gate's jobs are created when
    their needs finish)."""
    gated = [j for j in jobs if j["name"].startswith(prefix)]
    if not gated:
        return "absent", []
    waiting = sorted(j["name"] for j in gated if j["status"] in ("queued", "waiting", "pending", "requested"))
    return ("queued", waiting) if waiting else ("started", [])


def message(waiting: list[str], labels: str, minutes: float) -> str:
    return (
        f"no runner picked up {', '.join(waiting)} within {minutes:g} minutes: no online self-hosted runner has "
        f"the labels [{labels}], or it is busy. The release run is cancelled before anything is published. "
        "Register or start a GPU runner (docs/maintainers/release.md, 'The GPU runner'), then re-run the "
        "run's failed jobs."
    )


def watch(fetch: Callable[[], list[dict]], prefix: str, minutes: float, sleep=time.sleep, clock=time.monotonic):
    """Poll `fetch` (the run's jobs) until the gated jobs start: (True, []) or, after `minutes`, (False, waiting)."""
    deadline = clock() + minutes * 60
    while True:
        status, waiting = state(fetch(), prefix)
        if status == "started":
            return True, []
        if clock() >= deadline:
            return False, waiting or [f"{prefix} (not created)"]
        sleep(POLL_S)


def _api(method: str, path: str) -> object:
    url = f"{os.environ['GITHUB_API_URL']}/repos/{os.environ['GITHUB_REPOSITORY']}{path}"
    request = urllib.request.Request(url, method=method)
    request.add_header("Authorization", f"Bearer {os.environ['GITHUB_TOKEN']}")
    request.add_header("Accept", "application/vnd.github+json")
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    return json.loads(body) if body else None


def run_jobs() -> list[dict]:
    run, attempt = os.environ["GITHUB_RUN_ID"], os.environ.get("GITHUB_RUN_ATTEMPT", "1")
    jobs: list[dict] = []
    for page in range(1, 11):
        got = _api("GET", f"/actions/runs/{run}/attempts/{attempt}/jobs?per_page=100&page={page}")
        jobs += got["jobs"]  # type: ignore[index]
        if len(got["jobs"]) < 100:  # type: ignore[index]
            break
    return jobs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", required=True, help="the gated jobs' name (prefix of a matrix job's names)")
    parser.add_argument("--labels", required=True, help="their runs-on labels, for the message")
    parser.add_argument("--minutes", type=float, default=20)
    args = parser.parse_args(argv)
    started, waiting = watch(run_jobs, args.jobs, args.minutes)
    if started:
        print(f"gpu-gate: every {args.jobs} job has a runner")
        return 0
    print(f"::error::{message(waiting, args.labels, args.minutes)}", flush=True)
    _api("POST", f"/actions/runs/{os.environ['GITHUB_RUN_ID']}/cancel")
    return 1


if __name__ == "__main__":
    sys.exit(main())
