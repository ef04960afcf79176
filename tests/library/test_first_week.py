"""First-week programs: small programs in the style a PyTorch user writes in their first week
(tests/library/first_week/, written against PyTorch's API with `import torch`), each run in a
subprocess under PyTorch and under tinytensor.

Under tinytensor a program runs through first_week/_as_tinytensor.py, which maps the module names
torch -> tinytensor, torch.X -> tinytensor.X and torch.utils.data -> tinytensor.data and changes
nothing else. Each program asserts its own success (a loss that falls, an accuracy reached, values
worked out by hand) and ends with a line `RESULT name=value ...`. Where both runs happen, the
values listed in AGREE must agree within their tolerance; the random streams of the two libraries
differ, so the rest (losses of randomly initialised models) are only checked by the programs'
own asserts.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIRST_WEEK = Path(__file__).resolve().parent / "first_week"
AS_TINYTENSOR = FIRST_WEEK / "_as_tinytensor.py"
PROGRAMS = sorted(p for p in FIRST_WEEK.glob("*.py") if not p.name.startswith("_") and p.name != "conftest.py")
TIMEOUT_S = 120

# program -> {RESULT name: the largest allowed |PyTorch - tinytensor|}: the values that do not depend
# on the random stream (fixed inputs, counts, converged fits of a fixed problem)
AGREE: dict[str, dict[str, float]] = {
    "bigram_names": {"count_nll": 1e-4, "final_loss": 0.02, "pairs": 0},
    "custom_autograd_function": {"grad_diff": 1e-5},
    "custom_dataset_collate": {"total": 0, "accuracy": 0.06},
    "dataloader_split_subset": {"lr": 1e-9, "batches": 0},
    "grad_modes": {"grad_sum": 0, "zero_fraction": 0.08},
    "init_and_containers": {"n_params": 0, "kaiming_std": 0.005},
    "linear_regression_param_data": {"weight": 0.05, "bias": 0.05},
    "logistic_regression": {"acc_logits": 0.05, "acc_sigmoid": 0.05, "weight_diff": 1e-3},
    "mlp_sgd_momentum_adam": {"sgd_acc": 0.08, "adam_acc": 0.08},
    "mnist_main": {"lr": 1e-9, "n_test": 0},
    "poly_sin_manual_grad": {"b": 0.15, "d": 0.03},
    "quickstart_loop": {"accuracy": 0.08},
    "robust_losses": {"mse_err": 0.15, "huber_err": 0.1},
    "batchnorm_train_eval": {"batches": 0},
    "state_dict_roundtrip": {"param_diff": 1e-5, "keys": 0},
    "tensor_ops_tour": {"checksum": 1e-3, "norm": 1e-3, "softmax00": 1e-5},
    "two_layer_net_autograd": {},
}

pytestmark = pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])


@dataclasses.dataclass
class Run:
    label: str
    program: Path
    returncode: int | None
    stdout: str
    stderr: str

    def failure(self) -> str:
        tail = lambda text, n: "\n".join(text.rstrip().splitlines()[-n:])
        status = "timed out" if self.returncode is None else f"exited {self.returncode}"
        return (
            f"{self.program.name} under {self.label} {status}: {tail(self.stderr, 1) or '(no stderr)'}\n"
            f"--- stderr (last lines) ---\n{tail(self.stderr, 40)}\n"
            f"--- stdout (last lines) ---\n{tail(self.stdout, 10)}"
        )

    def results(self) -> dict[str, float]:
        lines = [line for line in self.stdout.splitlines() if line.startswith("RESULT ")]
        if not lines:
            pytest.fail(f"printed no RESULT line: {self.failure()}", pytrace=False)
        return {key: float(value) for key, value in (item.split("=", 1) for item in lines[-1].split()[1:])}

    def check(self) -> dict[str, float]:
        if self.returncode != 0:
            pytest.fail(self.failure(), pytrace=False)
        return self.results()


def _run(label: str, argv: list[str], cwd: Path, program: Path) -> Run:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if label == "tinytensor":
        import tinytensor

        # the program imports the same tinytensor this test process tests (installed or source tree)
        package_parent = str(Path(tinytensor.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))
    try:
        proc = subprocess.run(
            [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        as_text = lambda out: out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
        return Run(label, program, None, as_text(exc.stdout), as_text(exc.stderr))
    return Run(label, program, proc.returncode, proc.stdout, proc.stderr)


def _has_pytorch() -> bool:
    return importlib.util.find_spec("torch") is not None


_pytorch_runs: dict[Path, Run] = {}


def _pytorch_run(program: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The program under PyTorch, run once for both tests."""
    if program not in _pytorch_runs:
        cwd = tmp_path_factory.mktemp(f"pytorch-{program.stem}")
        _pytorch_runs[program] = _run("PyTorch", [str(program)], cwd, program)
    return _pytorch_runs[program]


def test_every_program_has_its_agreement_entry(program):
    assert program.stem in AGREE, f"add {program.stem} to AGREE (an empty dict: nothing to compare)"


def test_under_pytorch(program, tmp_path_factory):
    if not _has_pytorch():
        pytest.skip(reason="PyTorch is not installed: the program's PyTorch run (the reference) is skipped")
    _pytorch_run(program, tmp_path_factory).check()


def test_under_tinytensor(program, tmp_path, tmp_path_factory):
    results = _run("tinytensor", [str(AS_TINYTENSOR), str(program)], tmp_path, program).check()
    if not _has_pytorch():
        return
    reference = _pytorch_run(program, tmp_path_factory)
    if reference.returncode != 0:
        return  # test_under_pytorch reports it
    expected = reference.results()
    assert results.keys() == expected.keys(), f"RESULT names differ: PyTorch {expected}, tinytensor {results}"
    far = {
        name: (expected[name], results[name])
        for name, tolerance in AGREE.get(program.stem, {}).items()
        if not abs(expected[name] - results[name]) <= tolerance
    }
    assert not far, f"{program.name}: (PyTorch, tinytensor) values further apart than AGREE allows: {far}"
