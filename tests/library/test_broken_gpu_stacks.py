"""A broken GPU stack is a problem with its fix, never a traceback.

Each case builds a real broken stack and runs tinytensor in a subprocess against it: a ``cupy``
package put first on PYTHONPATH (so it shadows a real CuPy where one is installed) and a
``libcuda.so.1`` compiled here and found through LD_LIBRARY_PATH, as the probe's dlopen finds the
driver's. In each, ``HAS_CUDA`` is False, ``cuda_unavailable_reason()`` names the failure (its
exception type and message) with its fix, ``.to("cuda")`` raises CudaUnavailableError saying the
same, and ``python -m tinytensor`` (and ``--json``) exit 0 listing the problem.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from shared_library import compile_library

import tinytensor as tt

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the probe loads libcuda.so.1 by soname (Linux)"
)

# the root tinytensor was imported from: the subprocesses import the same one
_ROOT = str(Path(tt.__file__).resolve().parent.parent)

# A CUDA 12.8 driver; each fake driver below is built from one of these bodies.
_DRIVERS = {
    "works": "int cuDriverGetVersion(int *version) { *version = 12080; return 0; }\n",
    # a library named libcuda.so.1 that is not the driver: it exports something else
    "no_version_symbol": "int cuInit(unsigned int flags) { (void)flags; return 0; }\n",
    "fails": "int cuDriverGetVersion(int *version) { (void)version; return 999; }\n",
}


@pytest.fixture(scope="module")
def drivers(tmp_path_factory) -> dict[str, Path]:
    """{name: folder holding that libcuda.so.1}, each compiled with the system's C compiler."""
    return {
        name: compile_library(
            tmp_path_factory.mktemp(f"driver_{name}"), "libcuda.so.1", body, soname="libcuda.so.1"
        ).parent
        for name, body in _DRIVERS.items()
    }


# A stand-in CuPy that answers every query the probe makes, as a CUDA 12.8 CuPy with one GPU does;
# each case replaces one piece with a broken one.
_CUPY = {
    "init": '__version__ = "14.0.0"\nfrom . import cuda\n',
    "cuda": "from . import nvrtc, runtime\n",
    "nvrtc": "def getVersion():\n    return (12, 8)\n",
    "count": "return 1",
    "properties": 'return {"name": b"Stand-in GPU", "major": 9, "minor": 0, "totalGlobalMem": 80 * 2**30}',
}
_RUNTIME = """\
class CUDARuntimeError(RuntimeError):
    pass


def runtimeGetVersion():
    return 12080


def getDeviceCount():
    {count}


def getDeviceProperties(index):
    {properties}
"""


def _fake_cupy(root: Path, **broken: str) -> Path:
    pieces = {**_CUPY, **broken}
    package = root / "cupy"
    (package / "cuda").mkdir(parents=True)
    (package / "__init__.py").write_text(pieces["init"])
    (package / "cuda" / "__init__.py").write_text(pieces["cuda"])
    (package / "cuda" / "nvrtc.py").write_text(pieces["nvrtc"])
    (package / "cuda" / "runtime.py").write_text(_RUNTIME.format(**pieces))
    return root


_PROBE = """\
import json
import tinytensor as tt

facts = {}
try:
    tt.zeros(2).to("cuda")
except tt.CudaUnavailableError as exc:
    facts["to_cuda_error"] = str(exc)
facts["has_cuda"] = tt.HAS_CUDA
facts["reason"] = tt.cuda_unavailable_reason()
facts["is_available"] = tt.cuda.is_available()
facts["device_count"] = tt.cuda.device_count()
print(json.dumps(facts))
"""


def _run(args: list[str], site: Path, driver: Path, cwd: Path) -> str:
    env = dict(os.environ, TINYTENSOR_DISABLE_CUDA_EXTENSION="1")
    env["PYTHONPATH"] = os.pathsep.join([str(site), _ROOT])
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(driver), os.environ.get("LD_LIBRARY_PATH")) if p)
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def _check_broken_stack(site: Path, driver: Path, tmp_path: Path, *marks: str) -> dict:
    """Run everything a user would against the stack; returns the one blocking problem whose text
    carries every mark (the failure's type and message, where it came from)."""
    report = json.loads(_run(["-m", "tinytensor", "--json"], site, driver, tmp_path))
    assert report["has_cuda"] is False and report["backend"]["active"] == "cpu"
    matching = [p for p in report["problems"] if all(m in p["what"] for m in marks)]
    assert len(matching) == 1, (marks, report["problems"])
    problem = matching[0]
    assert problem["blocks_gpu"] and problem["fix"]
    stated = f"{problem['what']} (fix: {problem['fix']})"

    facts = json.loads(_run(["-c", _PROBE], site, driver, tmp_path))
    assert facts["has_cuda"] is False and facts["is_available"] is False and facts["device_count"] == 0
    assert stated in facts["reason"]
    assert stated in facts["to_cuda_error"], "to('cuda') raises CudaUnavailableError naming the problem"

    text = _run(["-m", "tinytensor"], site, driver, tmp_path)
    assert "HAS_CUDA: False" in text
    assert f"[blocks the GPU] {problem['what']}\n    fix: {problem['fix']}" in text
    return problem


@pytest.mark.parametrize(
    "kind,message",
    [
        ("RuntimeError", "CUDA environment is not correctly set up"),
        ("OSError", "libnvrtc.so.12: cannot open shared object file"),
        ("AttributeError", "module 'numpy' has no attribute 'bool8'"),
        ("ImportError", "libcudart.so.11.0: cannot open shared object file"),
        # a library that calls sys.exit on a failed set-up must not end the user's program
        ("SystemExit", "CUDA setup failed"),
    ],
)
def test_a_cupy_that_raises_on_import(kind, message, drivers, tmp_path):
    """A CuPy present but broken (built for another CUDA, against another numpy, half installed):
    its error is kept whole, and it is not called "not installed"."""
    site = _fake_cupy(tmp_path / "site", init=f"raise {kind}({message!r})\n")
    problem = _check_broken_stack(site, drivers["works"], tmp_path, f"{kind}: {message}", str(site / "cupy"))
    assert "not installed" not in problem["what"] and "cupy" in problem["fix"]


def test_ctrl_c_during_the_cupy_import_still_stops_the_program(drivers, tmp_path):
    """The one exception the probe lets through is the user's own KeyboardInterrupt."""
    site = _fake_cupy(tmp_path / "site", init="raise KeyboardInterrupt\n")
    env = dict(os.environ, TINYTENSOR_DISABLE_CUDA_EXTENSION="1", PYTHONPATH=os.pathsep.join([str(site), _ROOT]))
    env["LD_LIBRARY_PATH"] = str(drivers["works"])
    proc = subprocess.run(
        [sys.executable, "-c", "import tinytensor as tt; tt.HAS_CUDA; print('went on')"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0 and "went on" not in proc.stdout
    assert "KeyboardInterrupt" in proc.stderr


def test_a_cupy_without_a_version(drivers, tmp_path):
    """A folder named cupy in the way of the real one imports, but is not CuPy."""
    site = _fake_cupy(tmp_path / "site", init="from . import cuda\n")
    problem = _check_broken_stack(site, drivers["works"], tmp_path, "__version__", str(site / "cupy"))
    assert str(site / "cupy") in problem["fix"]


@pytest.mark.parametrize(
    "count,marks",
    [
        (
            'raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")',
            ["getDeviceCount", "CUDARuntimeError: cudaErrorNoDevice: no CUDA-capable device is detected"],
        ),
        ('raise Exception("driver shutting down")', ["getDeviceCount", "Exception: driver shutting down"]),
        ("raise SystemExit(3)", ["while checking the GPUs", "SystemExit: 3"]),
        # no documented answer has this shape: the probe's own catch-all turns it into a problem
        ('return "1"', ["while checking the GPUs", "TypeError"]),
    ],
)
def test_a_failing_device_count(count, marks, drivers, tmp_path):
    site = _fake_cupy(tmp_path / "site", count=count)
    _check_broken_stack(site, drivers["works"], tmp_path, *marks)


@pytest.mark.parametrize(
    "properties,marks",
    [
        (
            'raise CUDARuntimeError("cudaErrorUnknown: unknown error")',
            ["GPU 0", "getDeviceProperties", "CUDARuntimeError: cudaErrorUnknown: unknown error"],
        ),
        ("return {}", ["GPU 0", "getDeviceProperties", "KeyError"]),
    ],
)
def test_a_failing_device_property_query(properties, marks, drivers, tmp_path):
    site = _fake_cupy(tmp_path / "site", properties=properties)
    problem = _check_broken_stack(site, drivers["works"], tmp_path, *marks)
    assert "nvidia-smi" in problem["fix"]


def test_a_libcuda_without_cudrivergetversion(drivers, tmp_path):
    """A library named libcuda.so.1 that is not the driver, found first on LD_LIBRARY_PATH."""
    site = _fake_cupy(tmp_path / "site")
    driver = drivers["no_version_symbol"]
    library = str(driver / "libcuda.so.1")
    problem = _check_broken_stack(site, driver, tmp_path, "cuDriverGetVersion", library)
    assert str(driver) in problem["fix"]


def test_a_libcuda_whose_cudrivergetversion_fails(drivers, tmp_path):
    site = _fake_cupy(tmp_path / "site")
    driver = drivers["fails"]
    _check_broken_stack(site, driver, tmp_path, "returned 999 (CUDA_ERROR_UNKNOWN)", str(driver / "libcuda.so.1"))


def test_the_stand_ins_work_when_nothing_is_broken(drivers, tmp_path):
    """The control: unbroken, the stand-in CuPy and driver make a usable device, so each case above
    fails for its one broken piece alone."""
    site = _fake_cupy(tmp_path / "site")
    script = (
        "import json, tinytensor as tt; from tinytensor.cuda.status import cuda_status; s = cuda_status(); "
        "print(json.dumps([tt.cuda.is_available(), tt.cuda.device_count(), s.driver_version, s.cupy_version, "
        "[d.name for d in s.devices], [p.what for p in s.problems if p.blocks_device]]))"
    )
    facts = json.loads(_run(["-c", script], site, drivers["works"], tmp_path))
    assert facts == [True, 1, 12080, "14.0.0", ["Stand-in GPU"], []]


def test_a_driver_without_cupy(drivers, tmp_path):
    """A CPU install on a GPU machine: the report shows the driver and says CuPy is missing."""
    # what Python raises for a package that is not there (a real CuPy elsewhere on sys.path is shadowed)
    site = _fake_cupy(tmp_path / "site", init="raise ModuleNotFoundError(\"No module named 'cupy'\", name='cupy')\n")
    problem = _check_broken_stack(site, drivers["works"], tmp_path, "CuPy is not installed")
    assert "pip install" in problem["fix"]
    text = _run(["-m", "tinytensor"], site, drivers["works"], tmp_path)
    assert "NVIDIA driver: supports CUDA 12.8" in text and "CuPy: not installed" in text
