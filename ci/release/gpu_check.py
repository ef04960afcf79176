"""The GPU test matrix in one script: diagnostics, the test suite with GPU tests required, the
digits example on cuda, and the GPU benchmarks; logs, summary.json and report.md under --out.

    # a GPU box with network: nox builds and installs a wheel, then calls this
    TINYTENSOR_REQUIRE_GPU=1 ci/nox.sh -s tests_gpu
    # a GPU machine with CUDA 13 only (cupy-cuda13x, no network, no pip index): build in place,
    # install the carried test wheels (ci/dev/gpu-wheels.sh) offline, and return three files
    python3 -m ci.release.gpu_check --build-inplace --wheels .gpu-wheels --archs 90 --out /tmp/gpu-check --bundle "$OUT"
    # its rehearsal on a machine without a GPU (CUDA 13 toolkit, device-like environment)
    ci/nox.sh -s gpu_rehearsal

--build-inplace compiles the extension into the source tree against the machine's toolkit
($CUDA_HOME, else /usr/local/cuda; the build's discovery also finds pip's nvidia-* wheels) and tests
the source tree, with TINYTENSOR_REQUIRE_GPU=1 unless the environment sets it; without it, the
installed package is tested. With --build-inplace it also builds a copy of the package for an
architecture the GPU cannot run (--foreign-arch) and names it in TINYTENSOR_FOREIGN_ARCH_TREE for
tests/library/gpu/test_foreign_arch.py. --wheels installs the wheels in a folder with pip --target
into a temporary folder put first on PYTHONPATH: the machine's own environment is never changed.
The release tests (tests/tooling/release) need an installed, repaired wheel: an in-place check
leaves them out.

Every step runs under a time limit inside an overall budget (--budget, 420 s by default, so the
whole fits in 8 minutes of a time-limited GPU session, kills and the report included); each step's exit status and seconds are recorded.
Failures are classified: a failure that only says there is no usable GPU (the conftest fixtures'
"TINYTENSOR_REQUIRE_GPU=1 but no usable CUDA device: ...", an example or benchmark that stops
for want of a GPU) is "gpu-absent"; anything else is real. Exit status: 0 all passed (or, with the
GPU not required, only the GPU parts were skipped); 1 a real failure; 3 only "gpu-absent" failures
while a GPU was required (what a rehearsal without a GPU expects).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
import traceback
from pathlib import Path

from ci import pytest_summary
from ci.release.carried_wheels import install_wheels
from ci.release.gpu_outcomes import classify_plain, classify_pytest, gpu_facts, read_junit, says_gpu_absent
from ci.release.gpu_report import bench_rows, render_report
from ci.release.gpu_steps import Checker

ROOT = Path(__file__).resolve().parents[2]
EXIT_PASS, EXIT_FAIL, EXIT_GPU_ABSENT = 0, 1, 3


class Tee:
    """Writes to the terminal and to a file."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu-check-results", help="folder for logs and results")
    parser.add_argument("--build-inplace", action="store_true", help="compile the extension into the source tree")
    parser.add_argument(
        "--archs",
        default=os.environ.get("TINYTENSOR_CUDA_ARCHS", ""),
        help="TINYTENSOR_CUDA_ARCHS for --build-inplace, e.g. 90 (default: the build's own default)",
    )
    parser.add_argument(
        "--wheels",
        metavar="DIR",
        help="install the wheels in DIR (ci/dev/gpu-wheels.sh) offline into a temporary folder put on PYTHONPATH",
    )
    parser.add_argument("--budget", type=float, default=420, help="seconds for all steps together (default 420)")
    parser.add_argument(
        "--bundle",
        metavar="DIR",
        help="also write report.md, summary.json and gpu-check.tar.gz (every file of --out) to DIR",
    )
    parser.add_argument(
        "--foreign-arch",
        default="auto",
        help="with --build-inplace, also build a copy for this arch, which the GPU cannot run, for "
        "tests/library/gpu/test_foreign_arch.py (auto: 80, or 90 on a compute capability 8.x GPU; none: skip)",
    )
    parser.add_argument(
        "--jobs", type=int, default=0, help="run the tests in N processes (pytest-xdist's -n; default: one)"
    )
    parser.add_argument("--skip-bench", action="store_true")
    parser.add_argument("--skip-example", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.bundle:  # the console, line by line: what comes back even if the run is cut short
        Path(args.bundle).mkdir(parents=True, exist_ok=True)
        sys.stdout = Tee(sys.stdout, open(Path(args.bundle) / "console.log", "w", buffering=1))  # noqa: SIM115
    check = Checker(out, args.budget)
    state = {
        "date": datetime.datetime.now(datetime.UTC),
        "require_gpu": os.environ.get("TINYTENSOR_REQUIRE_GPU", "1" if args.build_inplace else "") == "1",
        "gpu": gpu_facts(None),
        "diagnostics": None,
        "build_config": None,
        "foreign_build": None,
        "junit": None,
        "example": None,
        "bench": None,
    }
    try:
        run_steps(check, args, state)
    except Exception:  # noqa: BLE001 - whatever breaks here, the summary and report still get written
        error = traceback.format_exc()
        (out / "gpu_check-error.log").write_text(error)
        print(error, file=sys.stderr, flush=True)
        note = f"internal error: {error.strip().splitlines()[-1]} (gpu_check-error.log)"
        check.steps.append({"step": "gpu_check", "exit": None, "seconds": 0.0, "outcome": "failed", "note": note})
    return finish(check, args, state)


def run_steps(check: Checker, args, state: dict) -> None:
    out = check.out
    env = dict(
        os.environ,
        OPENBLAS_NUM_THREADS="1",
        PYTHONUNBUFFERED="1",
        TINYTENSOR_EXPECT_BACKEND="full",
        **pytest_summary.env(out / pytest_summary.FILE),
    )
    for stale in (pytest_summary.FILE, "pytest.xml", "bench_gpu.json", "diagnostics.json"):
        (out / stale).unlink(missing_ok=True)
    cwd = Path(tempfile.gettempdir())  # keep the source tree off sys.path unless asked for

    if args.wheels:
        _, target = install_wheels(check, Path(args.wheels).resolve(), env)
        if target:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [target, env.get("PYTHONPATH")]))

    if args.build_inplace:
        build_env = dict(env, TINYTENSOR_BUILD_EXTENSION="1")
        if not build_env.get("CUDA_HOME") and Path("/usr/local/cuda/bin/nvcc").exists():
            build_env["CUDA_HOME"] = "/usr/local/cuda"
        if args.archs:
            build_env["TINYTENSOR_CUDA_ARCHS"] = args.archs
        config_path = ROOT / "tinytensor" / "_build_config.json"
        config_path.unlink(missing_ok=True)  # a failed build writes none: never report an older one
        step = check.run("build", [sys.executable, "setup.py", "build_ext", "--inplace"], build_env, ROOT)
        step["outcome"] = "timeout" if step["timed_out"] else ("ok" if step["exit"] == 0 else "failed")
        if config_path.exists():
            state["build_config"] = json.loads(config_path.read_text())
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(ROOT)]))
        if build_env.get("CUDA_HOME"):  # CuPy's library finder also looks there (NVRTC)
            env.setdefault("CUDA_HOME", build_env["CUDA_HOME"])
        built = step["outcome"] == "ok"
    else:
        built = True

    smi = shutil.which("nvidia-smi")
    query = "--query-gpu=name,driver_version,compute_cap,memory.total"
    if smi:
        step = check.run("nvidia-smi", [smi, query, "--format=csv,noheader"], env, cwd)
        step["outcome"] = "info"
    else:
        check.skip("nvidia-smi", "nvidia-smi is not on PATH")["outcome"] = "info"

    if args.build_inplace and built and args.foreign_arch != "none":
        foreign = state["foreign_build"] = build_foreign(check, args, build_env)
        if foreign.get("tree"):
            env["TINYTENSOR_FOREIGN_ARCH_TREE"] = foreign["tree"]

    step = check.run("diagnostics", [sys.executable, "-m", "tinytensor"], env, cwd)
    step["outcome"] = "ok" if step["exit"] == 0 else ("timeout" if step["timed_out"] else "failed")
    step = check.run(
        "diagnostics-json", [sys.executable, "-m", "tinytensor", "--json"], env, cwd, out / "diagnostics.json"
    )
    diagnostics = None
    try:
        diagnostics = state["diagnostics"] = json.loads((out / "diagnostics.json").read_text())
    except (OSError, ValueError) as exc:
        step["note"] = f"no JSON: {exc}"
    step["outcome"] = "ok" if step["exit"] == 0 and diagnostics else ("timeout" if step["timed_out"] else "failed")
    gpu = state["gpu"] = gpu_facts(diagnostics)

    require_gpu = state["require_gpu"]
    if built:
        pytest_command = [sys.executable, "-m", "pytest", str(ROOT / "tests"), "-q", "--tb=short"]
        pytest_command += ["-p", "no:cacheprovider", "--ignore", str(ROOT / "tests" / "tooling" / "build")]
        # Warnings are listed, not fatal, here: CI enforces pyproject's filterwarnings = error, and a
        # new warning from the GPU stack (CuPy, torch) must not cost a time-limited run on a GPU.
        pytest_command += ["-W", "default"]
        if args.build_inplace:  # they test an installed (repaired) wheel, which an in-place build is not
            pytest_command += ["--ignore", str(ROOT / "tests" / "tooling" / "release")]
        pytest_command += ["--junitxml", str(out / "pytest.xml"), "--rootdir", str(ROOT)]
        pytest_command += ["-n", str(args.jobs)] if args.jobs > 0 else []
        step = check.run("pytest", pytest_command, dict(env, TINYTENSOR_REQUIRE_GPU="1" if require_gpu else ""), cwd)
        junit = state["junit"] = read_junit(out / "pytest.xml")
        classify_pytest(step, junit, gpu)
    else:
        check.skip("pytest", "the build failed")

    if built and not args.skip_example:
        step = check.run(
            "example", [sys.executable, str(ROOT / "examples" / "train_digits.py"), "--device", "cuda"], env, cwd
        )
        text = check.log_text("example")
        match = re.search(r"test accuracy: ([0-9.]+)", text)
        trained = re.search(r"trained in ([0-9.]+)s", text)
        example = state["example"] = {
            "accuracy": float(match.group(1)) if match else None,
            "train_seconds": float(trained.group(1)) if trained else None,
        }
        step.update(example)
        if step["exit"] == 0 and (example["accuracy"] or 0) < 0.95:
            step["outcome"] = "failed"
            step["note"] = "accuracy below 0.95 or not printed"
        classify_plain(step, gpu, text)
    else:
        check.skip("example", "the build failed" if not built else "--skip-example")

    if built and not args.skip_bench:
        bench_json = out / "bench_gpu.json"
        step = check.run(
            "bench_gpu",
            [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--json", str(bench_json)],
            env,
            cwd,
        )
        text = check.log_text("bench_gpu")
        try:
            bench = state["bench"] = json.loads(bench_json.read_text()) if bench_json.exists() else None
        except ValueError as exc:
            step["note"] = f"unreadable JSON: {exc}"
        bench = state["bench"]
        skipped = bench is None or (isinstance(bench, dict) and isinstance(bench.get("skipped"), str))
        if step["exit"] == 0 and skipped and not step.get("timed_out"):
            # where no GPU is usable it says why and exits 0 (a benchmark, not a test); a GPU
            # machine must measure, so there a skip fails the check
            absent = gpu.get("present") is False and says_gpu_absent(text, gpu)
            step["outcome"] = "gpu-absent" if absent else "failed"
            step.setdefault("note", f"skipped: {bench['skipped']}" if bench else "no results written")
        elif step["exit"] == 0:
            missed = [r.get("benchmark") for r in bench_rows(bench) if r.get("verdict") == "MISS"]
            if missed:  # a benchmark's targets are reported, not enforced here
                step["note"] = f"target missed: {', '.join(map(str, missed))}"
        classify_plain(step, gpu, text)
    else:
        check.skip("bench_gpu", "the build failed" if not built else "--skip-bench")


def build_foreign(check: Checker, args, build_env: dict) -> dict:
    """A second copy of the package built for an architecture this GPU cannot run (SASS only, no
    PTX), for tests/library/gpu/test_foreign_arch.py (TINYTENSOR_FOREIGN_ARCH_TREE): sm_80 code, or sm_90
    on a GPU of compute capability 8.x (SASS runs only on GPUs of its own major)."""
    arch = args.foreign_arch
    if arch == "auto":
        match = re.search(r",\s*(\d+)\.\d+\s*,", check.log_text("nvidia-smi"))
        arch = "90" if match and match.group(1) == "8" else "80"
    check.temp_dirs.append(tempfile.mkdtemp(prefix="tt-foreign-arch-"))
    tree = Path(check.temp_dirs[-1]) / "src"
    tree.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.so", "_build_config.json", "build")
    for name in ("setup.py", "README.md", "pyproject.toml", "buildsys", "csrc", "tinytensor"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=skip)
        elif source.exists():
            shutil.copy2(source, tree / name)
    step = check.run(
        "build-foreign",
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        dict(build_env, TINYTENSOR_CUDA_ARCHS=arch),
        tree,
    )
    step["outcome"] = "timeout" if step["timed_out"] else ("ok" if step["exit"] == 0 else "failed")
    step["note"] = f"sm_{arch} only, in {tree}"
    config_path = tree / "tinytensor" / "_build_config.json"
    config = json.loads(config_path.read_text()) if config_path.exists() else None
    result = {"arch": arch, "build_config": config}
    if step["outcome"] == "ok":
        result["tree"] = str(tree)
    return result


def finish(check: Checker, args, state: dict) -> int:
    out = check.out
    gpu, diagnostics, require_gpu = state["gpu"], state["diagnostics"], state["require_gpu"]
    for step in check.steps:  # a failed step's note: the first error line of its log, else its last line
        if step.get("outcome") in ("failed", "timeout") and not step.get("note"):
            lines = [ln.strip() for ln in check.log_text(step["step"]).splitlines() if ln.strip()]
            errors = [ln for ln in lines if re.search(r"\berror\b", ln, re.IGNORECASE)]
            step["note"] = (errors or lines or ["(no output)"])[0 if errors else -1][:300]
    fatal = [s for s in check.steps if s.get("outcome") in ("failed", "timeout")]
    absent = [s for s in check.steps if s.get("outcome") == "gpu-absent"]
    if fatal:
        verdict, status = "fail", EXIT_FAIL
    elif absent and require_gpu:
        verdict, status = "gpu-absent", EXIT_GPU_ABSENT
    else:
        verdict, status = ("pass, GPU parts skipped (no GPU)" if absent else "pass"), EXIT_PASS
    total = round(time.monotonic() - check.started, 1)
    summary = {
        "date": state["date"].isoformat(timespec="seconds"),
        "verdict": verdict,
        "exit": status,
        "require_gpu": require_gpu,
        "build_inplace": args.build_inplace,
        "archs": args.archs or None,
        "total_seconds": total,
        "budget_seconds": args.budget,
        "gpu": {k: v for k, v in gpu.items() if k != "devices"},
        "build_config": state["build_config"],
        "foreign_build": state["foreign_build"],
        "extension": (diagnostics or {}).get("extension"),
        "cupy": (diagnostics or {}).get("cupy"),
        "package": (diagnostics or {}).get("package"),
        "steps": check.steps,
        "junit": state["junit"],
        "example": state["example"],
        "bench": state["bench"],
    }
    smi = check.log_text("nvidia-smi").strip().splitlines()
    if smi and next((s for s in check.steps if s["step"] == "nvidia-smi"), {}).get("exit") == 0:
        summary["nvidia_smi"] = smi[0]
    result = pytest_summary.read(out / pytest_summary.FILE)
    if result is not None:
        summary["pytest"] = result
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    report = render_report(summary, check, args)
    (out / "report.md").write_text(report)
    if args.bundle:
        bundle = Path(args.bundle).resolve()
        bundle.mkdir(parents=True, exist_ok=True)
        with tarfile.open(bundle / "gpu-check.tar.gz", "w:gz") as tar:
            for item in sorted(out.iterdir()):
                tar.add(item, arcname=f"gpu-check/{item.name}")
        for name in ("report.md", "summary.json"):
            shutil.copy(out / name, bundle / name)
    for folder in check.temp_dirs:
        shutil.rmtree(folder, ignore_errors=True)
    print("\n" + report, flush=True)
    print(f"== verdict: {verdict} (exit {status}); results in {out}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
