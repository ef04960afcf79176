"""``python -m tinytensor`` tells the truth about this install, on any machine."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tinytensor
from tinytensor.cuda.arch_support import support
from tinytensor.cuda.status import cuda_status

EXPECT = os.environ.get("TINYTENSOR_EXPECT_BACKEND")


def _run(*args):
    env = dict(os.environ, PYTHONPATH=str(Path(tinytensor.__file__).resolve().parent.parent))
    # cwd elsewhere: `python -m` puts the working directory first on sys.path (the source tree)
    proc = subprocess.run(
        [sys.executable, "-m", "tinytensor", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parent,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_json_report_matches_the_status_of_this_process():
    facts = json.loads(_run("--json"))
    status = cuda_status()
    assert facts["has_cuda"] == status.has_cuda
    assert facts["package"]["version"] == tinytensor.__version__
    # one probe: the report lists exactly the problems behind HAS_CUDA, no more and no fewer
    assert [(p["what"], p["fix"], p["blocks_gpu"]) for p in facts["problems"]] == [
        (p.what, p.fix, p.blocks_device) for p in status.problems
    ]
    assert facts["has_cuda"] == (not facts["problems"])
    assert all(p["fix"] for p in facts["problems"])
    if status.device_usable:
        assert facts["backend"]["active"].startswith("cuda") and facts["devices"]
    else:
        assert facts["backend"]["active"] == "cpu" and facts["devices"] == []
    ext = facts["extension"]
    assert ext["loaded"] == status.extension_loaded
    if ext["loaded"]:
        info = ext["build_info"]
        assert info["cuda_version"].split(".")[0] == str(info["cuda_runtime_version"] // 1000)
        assert info["sass_archs"] and "-Xfatbin=-compress-all" in info["nvcc_flags"]
        libs = facts["loaded_libraries"]
        assert libs.get("cudart") and libs.get("cublas"), libs  # the libraries the extension really loaded
    else:
        assert ext["why_not"]


def test_text_report_names_backend_and_each_problem_with_its_fix():
    text = _run()
    status = cuda_status()
    assert f"HAS_CUDA: {status.has_cuda}" in text
    for problem in status.problems:
        assert problem.what in text and f"fix: {problem.fix}" in text
    if status.driver_version is None:
        assert "NVIDIA driver: none found" in text
    if EXPECT == "full":
        assert "compiled against CUDA" in text and "architectures: SASS" in text


@pytest.mark.parametrize(
    "capability,sass,ptx,kind",
    [
        (90, [70, 80, 90], [90], "sass"),
        (89, [80, 86], [86], "sass"),  # sm_86 SASS runs on 8.9 (same major, higher minor)
        (80, [86], [], "none"),  # ... but not on 8.0
        (100, [70, 80, 90], [90], "ptx-jit"),  # Blackwell JIT-compiles compute_90 PTX
        (120, [75, 80], [], "none"),
        (75, [70], [70], "sass"),  # sm_70 SASS runs on 7.5
        (86, [90], [80], "ptx-jit"),
    ],
)
def test_architecture_support(capability, sass, ptx, kind):
    assert support(capability, sass, ptx)[0] == kind
