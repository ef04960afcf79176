"""The digits example trains to at least 95% test accuracy (CPU here; CUDA where a GPU exists)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "train_digits.py"


def _train(device: str) -> float:
    pytest.importorskip("sklearn", reason="scikit-learn (the digits data) is not installed")
    import tinytensor

    # the example imports the same tinytensor this test process tests (installed or source tree)
    package_parent = str(Path(tinytensor.__file__).resolve().parent.parent)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=package_parent)
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--device", device], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "epoch  40/40 [##############################]" in proc.stdout  # the progress display
    match = re.search(r"test accuracy: ([0-9.]+)", proc.stdout)
    assert match, proc.stdout
    return float(match.group(1))


def test_digits_reaches_95_percent_on_cpu():
    assert _train("cpu") >= 0.95


def test_digits_reaches_95_percent_on_cuda(gpu):
    assert _train(gpu) >= 0.95
