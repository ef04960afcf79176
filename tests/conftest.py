"""Shared fixtures: the devices an op suite runs on, and honest skip reporting.

``device`` runs a test on "cpu", on "strict:device1" (array_api_strict's fake device: catches
device-placement bugs on a CPU-only machine) and on "cuda" (skipped, with the reason, where no
usable GPU exists). With TINYTENSOR_REQUIRE_GPU=1 (GPU runners) a missing GPU fails instead.
"""

from __future__ import annotations

import json
import os

import pytest

REQUIRE_GPU = os.environ.get("TINYTENSOR_REQUIRE_GPU") == "1"


def cuda_skip_reason() -> str | None:
    """None when the 'cuda' device is usable, else why not (from tinytensor's own probe)."""
    from tinytensor.cuda_status import cuda_status

    status = cuda_status()
    if status.device_usable:
        return None
    blocking = "; ".join(p.what for p in status.problems if p.blocks_device)
    return f"no usable CUDA device: {blocking}"


def extension_skip_reason() -> str | None:
    from tinytensor.cuda_status import cuda_status

    reason = cuda_skip_reason()
    if reason:
        return reason
    status = cuda_status()
    return None if status.extension_loaded else f"the CUDA extension is not loaded: {status.reason()}"


def skip_or_fail(reason: str):
    if REQUIRE_GPU:
        pytest.fail(f"TINYTENSOR_REQUIRE_GPU=1 but {reason}")
    pytest.skip(reason=reason)


@pytest.fixture
def gpu():
    """For tests that need the 'cuda' device (CuPy path; the extension is optional)."""
    reason = cuda_skip_reason()
    if reason:
        skip_or_fail(reason)
    return "cuda"


@pytest.fixture
def gpu_extension():
    """For tests of the compiled kernels: a usable device and the extension."""
    reason = extension_skip_reason()
    if reason:
        skip_or_fail(reason)
    from tinytensor import cuda_extension

    return cuda_extension.ops


def _device_param(name):
    if name.startswith("strict"):
        pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    if name == "cuda":
        reason = cuda_skip_reason()
        if reason:
            skip_or_fail(reason)
    return name


@pytest.fixture(params=["cpu", "strict:device1", "cuda"])
def device(request):
    return _device_param(request.param)


@pytest.fixture(params=["strict:device1", "cuda"])
def other_device(request):
    """A device other than the CPU, for tests that compare against CPU results."""
    return _device_param(request.param)


def pytest_report_header(config):
    try:
        import tinytensor
        from tinytensor import cuda_extension
    except ImportError as exc:  # the build tests run without tinytensor installed
        return [f"tinytensor: not importable here ({exc})"]

    config_text = json.dumps(cuda_extension.build_config()) if cuda_extension.build_config() else "none (source tree)"
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
