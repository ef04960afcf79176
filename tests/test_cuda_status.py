"""HAS_CUDA and its reason tell the truth about the install being tested.

TINYTENSOR_EXPECT_BACKEND (set by each nox session) says what was installed:
  cpu-only  - no CuPy, extension not built
  cupy-only - CuPy installed, extension not built
  full      - CuPy and the built extension
"""

import os

import pytest

import tinytensor as tt
from tinytensor.backends import cuda_ext
from tinytensor.cuda_status import cuda_status

EXPECT = os.environ.get("TINYTENSOR_EXPECT_BACKEND")
needs_expectation = pytest.mark.skipif(
    EXPECT is None, reason="TINYTENSOR_EXPECT_BACKEND is not set (the nox sessions set it)"
)


@needs_expectation
def test_install_matches_the_session():
    status = cuda_status()
    has_cupy = status.cupy_version is not None
    assert has_cupy == (EXPECT in ("cupy-only", "full")), status.problems
    assert status.extension_loaded == (EXPECT == "full"), status.problems


@needs_expectation
def test_reason_names_each_missing_piece():
    status = cuda_status()
    reason = tt.cuda_unavailable_reason()
    if status.has_cuda:
        assert tt.HAS_CUDA is True and reason is None
        return
    assert tt.HAS_CUDA is False and reason
    if EXPECT == "cpu-only":
        assert "CuPy is not installed" in reason
    if EXPECT in ("cpu-only", "cupy-only"):
        assert "the CUDA extension is not available" in reason
        assert "TINYTENSOR_BUILD_EXTENSION=0" in reason  # the build recorded why it was skipped
    if status.driver_version is None:
        assert "no NVIDIA driver" in reason


@needs_expectation
def test_build_config_recorded_by_setup():
    config = cuda_ext.build_config()
    assert config, "the installed package carries _build_config.json"
    assert config["extension"] == ("built" if EXPECT == "full" else "skipped")


def test_status_without_a_driver_blocks_the_device():
    status = cuda_status()
    if status.driver_version is not None:
        pytest.skip(reason="an NVIDIA driver is loaded here")
    assert not status.device_usable
    assert any("no NVIDIA driver" in p.what and p.blocks_device for p in status.problems)
