"""HAS_CUDA and its reason tell the truth about the install being tested.

TINYTENSOR_EXPECT_BACKEND (set by each nox session) says what was installed:
  cpu-only  - no CuPy, extension not built
  cupy-only - CuPy installed, extension not built
  full      - CuPy and the built extension
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tinytensor as tt
from tinytensor.cuda import install
from tinytensor.cuda.status import cuda_status

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
    config = install.build_config()
    assert config, "the installed package carries _build_config.json"
    assert config["extension"] == ("built" if EXPECT == "full" else "skipped")


def test_status_without_a_driver_blocks_the_device():
    status = cuda_status()
    if status.driver_version is not None:
        pytest.skip(reason="an NVIDIA driver is loaded here")
    assert not status.device_usable
    assert any("no NVIDIA driver" in p.what and p.blocks_device for p in status.problems)


def test_a_stub_libcuda_is_named_with_its_fix():
    """Containers without the driver mounted often find the toolkit's stub libcuda.so.1, whose every
    call returns CUDA_ERROR_STUB_LIBRARY (34): say what it is, not "install the driver"."""
    from tinytensor.cuda.status import driver_fix, driver_problem

    stub = "/usr/local/cuda-12.4/lib64/stubs/libcuda.so.1"
    assert "is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY)" in driver_problem(34, stub)
    assert stub in driver_problem(34, stub)
    fix = driver_fix(34, stub)
    assert "/usr/local/cuda-12.4/lib64/stubs off LD_LIBRARY_PATH" in fix and "--gpus all" in fix
    assert "returned 999 (CUDA_ERROR_UNKNOWN)" in driver_problem(999, "/usr/lib/libcuda.so.1")
    assert "install" not in driver_fix(34, stub)


def _broken_extension_tree(tmp_path) -> Path:
    """A copy of the package whose cuda_ops is a real shared object that cannot load: it links a
    library that is gone (as a wheel missing libcublas would)."""
    import sysconfig

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip(reason="no C compiler to build a broken extension with")
    root = tmp_path / "tree"
    shutil.copytree(Path(tt.__file__).parent, root / "tinytensor", ignore=shutil.ignore_patterns("cuda_ops*", "*.json"))
    (tmp_path / "gone.c").write_text("int tt_gone(void) { return 1; }\n")
    (tmp_path / "ops.c").write_text("int tt_gone(void);\nvoid *PyInit_cuda_ops(void) { tt_gone(); return 0; }\n")
    gone = tmp_path / "libtt_gone.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(gone), str(tmp_path / "gone.c")], check=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    target = root / "tinytensor" / f"cuda_ops{suffix}"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", str(target), str(tmp_path / "ops.c"), f"-L{tmp_path}", "-ltt_gone"], check=True
    )
    gone.unlink()
    return root


def test_an_extension_that_does_not_load_is_reported_with_its_error(tmp_path):
    root = _broken_extension_tree(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("TINYTENSOR_DISABLE_CUDA_EXTENSION", None)
    script = "from tinytensor.cuda import extension; print(extension.unavailable_reason())"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "tinytensor.cuda_ops is present but does not import: ImportError: libtt_gone.so" in proc.stdout
    report = subprocess.run(
        [sys.executable, "-m", "tinytensor"], capture_output=True, text=True, env=env, cwd=tmp_path
    ).stdout
    assert "libtt_gone.so: cannot open shared object file" in report and "HAS_CUDA: False" in report
