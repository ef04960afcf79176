"""Fixtures of the library tests: the devices an op suite runs on, and PyTorch, the test oracle.

``device`` runs a test on "cpu", on "strict:device1" (array_api_strict's fake device: catches
device-placement bugs on a CPU-only machine) and on "cuda" (skipped, with the reason, where no
usable GPU exists). With TINYTENSOR_REQUIRE_GPU=1 (GPU runners) a missing GPU fails instead.
"""

from __future__ import annotations

import os

import pytest

REQUIRE_GPU = os.environ.get("TINYTENSOR_REQUIRE_GPU") == "1"


def cuda_skip_reason() -> str | None:
    """None when the 'cuda' device is usable, else why not (from tinytensor's own probe)."""
    from tinytensor.cuda.status import cuda_status

    status = cuda_status()
    if status.device_usable:
        return None
    blocking = "; ".join(p.what for p in status.problems if p.blocks_device)
    return f"no usable CUDA device: {blocking}"


def extension_skip_reason() -> str | None:
    from tinytensor.cuda.status import cuda_status

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
    from tinytensor.cuda import extension

    return extension.ops


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


@pytest.fixture
def torch():
    """PyTorch, the test oracle, for the tests that compare with it (skipped where it is not installed)."""
    return pytest.importorskip("torch", reason="PyTorch (the test oracle) is installed only on Python 3.11")
