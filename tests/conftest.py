"""Shared by both suites (library/ and tooling/): the report header naming the tinytensor under
test, and honest skip reporting: the summary a nox session reads (TT_PYTEST_SUMMARY) and a line
when every test skipped.
"""

from __future__ import annotations

import json
import os


def pytest_report_header(config):
    try:
        import tinytensor
        from tinytensor.cuda import install
    except ImportError as exc:  # the build tests run without tinytensor installed
        return [f"tinytensor: not importable here ({exc})"]

    config_text = json.dumps(install.build_config()) if install.build_config() else "none (source tree)"
    return [
        f"tinytensor {tinytensor.__version__} from {os.path.dirname(tinytensor.__file__)}",
        f"tinytensor build config: {config_text}",
    ]


# ---------------------------------------------------------------------------- skip accounting
_counts = {"passed": 0, "failed": 0, "skipped": 0}
_skip_reasons: dict[str, int] = {}


def pytest_runtest_logreport(report):
    if report.when == "call" and report.passed:
        _counts["passed"] += 1
    elif report.failed:
        _counts["failed"] += 1
    elif report.skipped:
        _counts["skipped"] += 1
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        _skip_reasons[reason] = _skip_reasons.get(reason, 0) + 1


def pytest_sessionfinish(session, exitstatus):
    """Write a summary for nox (TT_PYTEST_SUMMARY) so a session can say plainly what did not run."""
    path = os.environ.get("TT_PYTEST_SUMMARY")
    if path:
        with open(path, "w") as fh:
            json.dump({**_counts, "skip_reasons": _skip_reasons}, fh, indent=1)


def pytest_terminal_summary(terminalreporter):
    if _counts["skipped"] and not _counts["passed"] and not _counts["failed"]:
        reasons = "; ".join(sorted(_skip_reasons))
        terminalreporter.write_line(f"ALL {_counts['skipped']} TESTS SKIPPED, nothing ran: {reasons}", red=True)
