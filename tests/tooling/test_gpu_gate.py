"""The GPU gate's watchdog (ci/release/gpu_gate.py): a release whose GPU smoke test finds no runner
fails in minutes, naming the missing runner, instead of waiting a day in the queue."""

from __future__ import annotations

import pytest
from checkout import from_checkout

gate = from_checkout("ci.release.gpu_gate")

PREFIX = "GPU smoke test"


def _jobs(*statuses: str) -> list[dict]:
    jobs = [
        {"name": "wheels (x86_64)", "status": "completed"},
        {"name": "gpu-runner-watchdog", "status": "in_progress"},
    ]
    return jobs + [{"name": f"{PREFIX} (Python 3.1{i})", "status": s} for i, s in enumerate(statuses)]


@pytest.mark.parametrize(
    "statuses,expected",
    [
        ((), ("absent", [])),
        (("queued", "in_progress"), ("queued", [f"{PREFIX} (Python 3.10)"])),
        (("in_progress", "completed"), ("started", [])),
        (("waiting", "queued"), ("queued", [f"{PREFIX} (Python 3.10)", f"{PREFIX} (Python 3.11)"])),
    ],
)
def test_the_state_of_the_gated_jobs(statuses, expected):
    assert gate.state(_jobs(*statuses), PREFIX) == expected


class Clock:
    """A clock that advances only when the watchdog sleeps."""

    def __init__(self):
        self.now = 0.0

    def sleep(self, seconds):
        self.now += seconds

    def __call__(self):
        return self.now


def test_a_runner_that_starts_the_jobs_in_time_passes():
    clock, polls = (
        Clock(),
        iter([_jobs(), _jobs("queued", "queued"), _jobs("in_progress", "queued"), _jobs("in_progress", "in_progress")]),
    )
    assert gate.watch(lambda: next(polls), PREFIX, 20, clock.sleep, clock) == (True, [])
    assert clock.now == 3 * gate.POLL_S


def test_no_runner_fails_at_the_deadline_naming_the_waiting_jobs():
    clock = Clock()
    started, waiting = gate.watch(lambda: _jobs("queued", "in_progress"), PREFIX, 20, clock.sleep, clock)
    assert not started and waiting == [f"{PREFIX} (Python 3.10)"]
    assert 20 * 60 <= clock.now < 20 * 60 + gate.POLL_S  # minutes, not the queue's day
    text = gate.message(waiting, "self-hosted, linux, x64, gpu", 20)
    assert "[self-hosted, linux, x64, gpu]" in text and "within 20 minutes" in text and "cancelled" in text


def test_jobs_never_created_fail_at_the_deadline_too():
    clock = Clock()
    assert gate.watch(lambda: _jobs(), PREFIX, 5, clock.sleep, clock) == (False, [f"{PREFIX} (not created)"])
