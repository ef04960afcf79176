"""The examples, each run as a user would (CPU here; CUDA where a GPU exists): the digits example
trains to at least 95% test accuracy; the DataLoader example reaches 90% and its saved checkpoint
reloads into a fresh model that predicts the same; the CNN example reaches 97%."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_digits.py"
LOADER_EXAMPLE = EXAMPLE.with_name("train_digits_loader.py")
CNN_EXAMPLE = EXAMPLE.with_name("train_digits_cnn.py")


def _run(example: Path, *args: str) -> subprocess.CompletedProcess:
    pytest.importorskip("sklearn", reason="scikit-learn (the digits data) is not installed")
    import tinytensor

    # the example imports the same tinytensor this test process tests (installed or source tree)
    package_parent = str(Path(tinytensor.__file__).resolve().parent.parent)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=package_parent)
    proc = subprocess.run([sys.executable, str(example), *args], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _train(device: str) -> float:
    proc = _run(EXAMPLE, "--device", device)
    assert "epoch  40/40 [##############################]" in proc.stdout  # the progress display
    match = re.search(r"test accuracy: ([0-9.]+)", proc.stdout)
    assert match, proc.stdout
    return float(match.group(1))


def test_digits_reaches_95_percent_on_cpu():
    assert _train("cpu") >= 0.95


def test_digits_reaches_95_percent_on_cuda(gpu):
    assert _train(gpu) >= 0.95


def _train_with_loader(device: str, out: Path) -> float:
    proc = _run(LOADER_EXAMPLE, "--device", device, "--out", str(out))
    assert f"device {device}" in proc.stdout, proc.stdout
    assert re.search(r"^epoch  1  lr ", proc.stdout, re.M), proc.stdout  # a line per epoch
    # the checkpoint was written where asked, reloaded into a fresh model and compared
    assert (out / "digits_mlp.tt").is_file()
    assert f"saved {out / 'digits_mlp.tt'}" in proc.stdout, proc.stdout
    assert re.search(
        r"^reload check passed: 4 tensors identical, all 360 test predictions identical$", proc.stdout, re.M
    ), proc.stdout
    match = re.search(r"^test accuracy: ([0-9.]+)$", proc.stdout, re.M)
    assert match, proc.stdout
    return float(match.group(1))


def test_loader_example_trains_saves_and_reloads_on_cpu(tmp_path):
    assert _train_with_loader("cpu", tmp_path / "ckpt") >= 0.9


def test_loader_example_trains_saves_and_reloads_on_cuda(gpu, tmp_path):
    assert _train_with_loader(gpu, tmp_path / "ckpt") >= 0.9


def _train_cnn(device: str) -> float:
    proc = _run(CNN_EXAMPLE, "--device", device)
    assert f"device {device}" in proc.stdout, proc.stdout
    assert "epoch  15/15 [##############################]" in proc.stdout  # the progress display
    match = re.search(r"^test accuracy: ([0-9.]+)$", proc.stdout, re.M)
    assert match, proc.stdout
    return float(match.group(1))


def test_cnn_example_reaches_97_percent_on_cpu():
    assert _train_cnn("cpu") >= 0.97


def test_cnn_example_reaches_97_percent_on_cuda(gpu):
    assert _train_cnn(gpu) >= 0.97


@pytest.mark.parametrize("example", [EXAMPLE, LOADER_EXAMPLE, CNN_EXAMPLE], ids=lambda p: p.name)
def test_an_example_without_scikit_learn_names_it(example):
    """The examples' one need beyond tinytensor is said in one line, not as a traceback."""
    hide = "import runpy, sys; sys.modules['sklearn'] = None; sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", hide, str(example)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "needs scikit-learn" in proc.stderr and "pip install scikit-learn" in proc.stderr, proc.stderr
    assert "scikit-learn" in (example.read_text(encoding="utf-8").split('"""')[1])  # its docstring says so first
