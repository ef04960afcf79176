"""The GPU check: diagnostics, the test suite with TINYTENSOR_REQUIRE_GPU=1, the digits example and
the GPU benchmarks on cuda; each step's log, summary.json and report.md under --out.

    TINYTENSOR_REQUIRE_GPU=1 python -m ci.release.gpu_check --out DIR     # the installed package
    python -m ci.release.gpu_check --build-inplace [--wheels DIR] --out DIR  # the source tree (docs/maintainers/gpu-check.md)

Exit status: 0 passed; 1 a real failure; 3 only failures that a missing GPU explains while the GPU is
required (what `nox -s gpu_rehearsal` expects on a machine without one).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from ci import pytest_summary
from ci.project_paths import ROOT

EXIT_PASS, EXIT_FAIL, EXIT_GPU_ABSENT = 0, 1, 3
# Each step's limit in seconds, enforced by coreutils' `timeout` on the step's process group: SIGINT
# first (pytest then stops as on Ctrl-C and still writes its junit XML), SIGKILL 30 s later.
# pytest-timeout also stops any single test after TEST_TIMEOUT_S.
LIMITS = {
    "wheels": 120,
    "build": 900,
    "diagnostics": 120,
    "build-foreign": 900,
    "pytest": 1800,
    "example": 300,
    "bench_gpu": 600,
}
TEST_TIMEOUT_S = 300
RESULTS = ("summary.json", "report.md", "pytest.xml", pytest_summary.FILE, "bench_gpu.json", "diagnostics.json")
REQUIRE_GPU_FAILURE = "TINYTENSOR_REQUIRE_GPU=1 but no usable CUDA device"  # tests/library/conftest.py's failure


class Check:
    """The steps of one check: each a subprocess whose output goes to <out>/<step>.log."""

    def __init__(self, out: Path):
        self.out, self.steps, self.started = out, [], time.monotonic()
        self.temp_dirs: list[str] = []

    def run(self, name: str, command: list[str], env: dict, cwd: Path, stdout: Path | None = None) -> dict:
        """Run a step under its limit: its output (stderr only, with `stdout` given) to <out>/<name>.log."""
        print(f"== {name} (limit {LIMITS[name]} s): {shlex.join(command)}", flush=True)
        started = time.monotonic()
        with open(self.out / f"{name}.log", "w") as log, open(stdout or os.devnull, "w") as captured:
            limited = ["timeout", "-s", "INT", "-k", "30", str(LIMITS[name]), *command]
            to = {"stdout": captured, "stderr": log} if stdout else {"stdout": log, "stderr": subprocess.STDOUT}
            status = subprocess.run(limited, env=env, cwd=cwd, **to).returncode
        step = {"step": name, "exit": status, "seconds": round(time.monotonic() - started, 1)}
        if status in (124, 137):
            step.update(outcome="timeout", note=f"stopped after its {LIMITS[name]} s limit")
        else:
            step["outcome"] = "ok" if status == 0 else "failed"
        print(f"== {name}: exit {status} in {step['seconds']:.0f} s", flush=True)
        self.steps.append(step)
        return step

    def skip(self, name: str, why: str) -> None:
        print(f"== {name}: not run: {why}", flush=True)
        self.steps.append({"step": name, "exit": None, "seconds": 0.0, "outcome": "not-run", "note": why})

    def log(self, name: str) -> str:
        path = self.out / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu-check-results", help="folder for logs and results")
    parser.add_argument("--build-inplace", action="store_true", help="compile the extension into the source tree")
    parser.add_argument("--archs", default="", help="TINYTENSOR_CUDA_ARCHS for --build-inplace, e.g. 90")
    parser.add_argument(
        "--wheels", metavar="DIR", help="install DIR's wheels (ci/dev/gpu-wheels.sh) offline into a temporary folder"
    )
    parser.add_argument(
        "--foreign-arch",
        default="auto",
        help="with --build-inplace, also build a copy for this arch, which the GPU cannot run, for "
        "tests/library/gpu/test_foreign_arch.py (auto: 80, or 90 on a compute capability 8.x GPU; none: skip)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for name in [*RESULTS, *(f"{step}.log" for step in LIMITS)]:  # never report an earlier run's
        (out / name).unlink(missing_ok=True)
    check = Check(out)
    facts = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "require_gpu": os.environ.get("TINYTENSOR_REQUIRE_GPU", "1" if args.build_inplace else "") == "1",
        "build_inplace": args.build_inplace,
        "archs": args.archs or None,
    }
    try:
        run_steps(check, args, facts)
    finally:
        for folder in check.temp_dirs:
            shutil.rmtree(folder, ignore_errors=True)
    return finish(check, facts)


def run_steps(check: Check, args, facts: dict) -> None:
    out = check.out
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONUNBUFFERED="1", TINYTENSOR_EXPECT_BACKEND="full")
    env.update(pytest_summary.env(out / pytest_summary.FILE))
    cwd = Path(tempfile.gettempdir())  # keeps the source tree off sys.path unless --build-inplace puts it there

    if args.wheels:  # pip --target a temporary folder: the machine's own environment is never changed
        target = tempfile.mkdtemp(prefix="tt-gpu-wheels-")
        check.temp_dirs.append(target)
        wheels = sorted(str(w) for w in Path(args.wheels).glob("*.whl"))
        pip = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-cache-dir", "--target", target]
        if not wheels:
            check.skip("wheels", f"no wheels in {args.wheels} (ci/dev/gpu-wheels.sh puts them there)")
            check.steps[-1]["outcome"] = "failed"
            return
        if check.run("wheels", pip + wheels, env, ROOT)["outcome"] != "ok":
            return
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [target, env.get("PYTHONPATH")]))

    build_env = dict(env, TINYTENSOR_BUILD_EXTENSION="1")
    if args.build_inplace:
        if not build_env.get("CUDA_HOME") and Path("/usr/local/cuda/bin/nvcc").exists():
            build_env["CUDA_HOME"] = "/usr/local/cuda"
        if args.archs:
            build_env["TINYTENSOR_CUDA_ARCHS"] = args.archs
        config = ROOT / "tinytensor" / "_build_config.json"
        config.unlink(missing_ok=True)  # a failed build writes none: never report an older one
        built = check.run("build", [sys.executable, "setup.py", "build_ext", "--inplace"], build_env, ROOT)
        facts["build_config"] = json.loads(config.read_text()) if config.exists() else None
        if built["outcome"] != "ok":
            return
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(ROOT)]))
        if build_env.get("CUDA_HOME"):  # CuPy's library finder also looks there (NVRTC)
            env.setdefault("CUDA_HOME", build_env["CUDA_HOME"])

    check.run("diagnostics", [sys.executable, "-m", "tinytensor", "--json"], env, cwd, out / "diagnostics.json")
    try:
        diagnostics = json.loads((out / "diagnostics.json").read_text())
    except ValueError:
        diagnostics = None
        check.steps[-1].update(outcome="failed", note="`python -m tinytensor --json` wrote no JSON")
    facts["diagnostics"] = diagnostics
    gpu = facts["gpu"] = gpu_facts(diagnostics)

    if args.build_inplace and args.foreign_arch != "none":
        arch = args.foreign_arch
        if arch == "auto":
            arch = "90" if str(gpu.get("compute_capability", "")).startswith("8.") else "80"
        tree = build_foreign(check, arch, build_env)
        if tree:
            env["TINYTENSOR_FOREIGN_ARCH_TREE"] = tree

    require_gpu = "1" if facts["require_gpu"] else ""
    pytest = [sys.executable, "-m", "pytest", str(ROOT / "tests"), "-q", "--tb=short", "-p", "no:cacheprovider"]
    pytest += ["--timeout", str(TEST_TIMEOUT_S), "--junitxml", str(out / "pytest.xml"), "--rootdir", str(ROOT)]
    pytest += ["--ignore", str(ROOT / "tests" / "tooling" / "build")]
    if args.build_inplace:  # they test an installed, repaired wheel, which an in-place build is not
        pytest += ["--ignore", str(ROOT / "tests" / "tooling" / "release")]
    # Warnings are listed, not fatal, here: CI enforces pyproject's filterwarnings = error, and a new
    # warning from the GPU stack (CuPy, PyTorch) must not fail a check of the GPU.
    pytest += ["-W", "default"]
    step = check.run("pytest", pytest, dict(env, TINYTENSOR_REQUIRE_GPU=require_gpu), cwd)
    problems = facts["test_problems"] = junit_problems(out / "pytest.xml", gpu)
    real = [p for p in problems or [] if not p["gpu_absent"]]
    if step["outcome"] == "failed" and step["exit"] == 1 and problems and not real:
        step["outcome"] = "gpu-absent"
    elif real or problems is None:
        step["note"] = f"{len(real)} tests failed for reasons other than a missing GPU" if real else "no junit XML"

    example = [sys.executable, str(ROOT / "examples" / "train_digits.py"), "--device", "cuda"]
    step = check.run("example", example, env, cwd)
    accuracy = re.search(r"test accuracy: ([0-9.]+)", check.log("example"))
    facts["example_accuracy"] = float(accuracy.group(1)) if accuracy else None
    if step["outcome"] == "ok" and (facts["example_accuracy"] or 0) < 0.95:
        step.update(outcome="failed", note="test accuracy below 0.95 or not printed")
    explain_by_missing_gpu(step, check.log("example"), gpu)

    bench_json = out / "bench_gpu.json"
    step = check.run(
        "bench_gpu", [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--json", str(bench_json)], env, cwd
    )
    bench = facts["bench"] = json.loads(bench_json.read_text()) if bench_json.exists() else None
    if step["outcome"] == "ok" and (bench is None or "skipped" in bench):
        # a benchmark says why it skipped and exits 0; a GPU check must measure
        step.update(outcome="failed", note=f"skipped: {bench['skipped']}" if bench else "no results written")
    elif step["outcome"] == "ok":
        missed = [r["benchmark"] for r in bench.get("rows", []) if r.get("verdict") == "MISS"]
        if missed:  # a benchmark's targets are reported, not enforced here
            step["note"] = f"target missed: {', '.join(missed)}"
    explain_by_missing_gpu(step, check.log("bench_gpu"), gpu)


def gpu_facts(diagnostics: dict | None) -> dict:
    """Whether diagnostics found a usable GPU (None: unknown), and if not, why."""
    if not diagnostics:
        return {"present": None, "blocking": []}
    devices = diagnostics.get("devices") or []
    facts = {
        "present": bool(devices),
        "blocking": [p["what"] for p in diagnostics.get("problems", []) if p.get("blocks_gpu")],
        "driver_supports_cuda": (diagnostics.get("driver") or {}).get("cuda_version"),
    }
    if devices:
        facts.update({k: devices[0].get(k) for k in ("name", "compute_capability", "memory_gib")})
    return facts


def explain_by_missing_gpu(step: dict, text: str, gpu: dict) -> None:
    """A failed step whose output names why no GPU is usable (diagnostics' blocking problems) is
    "gpu-absent" where diagnostics found none."""
    if step["outcome"] == "failed" and gpu["present"] is False and any(b in text for b in gpu["blocking"]):
        step["outcome"] = "gpu-absent"


def junit_problems(path: Path, gpu: dict) -> list[dict] | None:
    """The failed and errored tests of pytest's junit XML, each marked gpu_absent when it failed only
    because no GPU is usable; None without a readable file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    problems = []
    for case in root.iter("testcase"):
        for kind in ("failure", "error"):
            for element in case.findall(kind):
                message = (element.get("message") or "").strip()
                text = message + "\n" + (element.text or "")
                problems.append(
                    {
                        "test": f"{case.get('classname')}::{case.get('name')}",
                        "kind": kind,
                        "message": message[:500],
                        "gpu_absent": gpu["present"] is False and REQUIRE_GPU_FAILURE in text,
                    }
                )
    return problems


def build_foreign(check: Check, arch: str, build_env: dict) -> str | None:
    """A copy of the package built for an architecture this GPU cannot run (SASS only, no PTX), for
    tests/library/gpu/test_foreign_arch.py (TINYTENSOR_FOREIGN_ARCH_TREE); its folder, or None."""
    check.temp_dirs.append(tempfile.mkdtemp(prefix="tt-foreign-arch-"))
    tree = Path(check.temp_dirs[-1]) / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.so", "_build_config.json", "build")
    for name in ("buildsys", "csrc", "tinytensor"):
        shutil.copytree(ROOT / name, tree / name, ignore=skip)
    for name in ("setup.py", "README.md", "pyproject.toml"):
        shutil.copy2(ROOT / name, tree / name)
    command = [sys.executable, "setup.py", "build_ext", "--inplace"]
    step = check.run("build-foreign", command, dict(build_env, TINYTENSOR_CUDA_ARCHS=arch), tree)
    config = tree / "tinytensor" / "_build_config.json"
    check.steps[-1]["build_config"] = json.loads(config.read_text()) if config.exists() else None
    step["note"] = f"sm_{arch} only"
    return str(tree) if step["outcome"] == "ok" else None


def finish(check: Check, facts: dict) -> int:
    out = check.out
    for step in check.steps:  # a failed step: its log's tail here, and as its note the log's first error line
        if step["outcome"] in ("failed", "timeout"):
            lines = [ln.strip() for ln in check.log(step["step"]).splitlines() if ln.strip()] or ["(no output)"]
            print(f"== {step['step']} failed; the end of {out / step['step']}.log:", *lines[-25:], sep="\n", flush=True)
            errors = [ln for ln in lines if re.search(r"\berror\b", ln, re.IGNORECASE)]
            step.setdefault("note", (errors[0] if errors else lines[-1])[:300])
    outcomes = {step["outcome"] for step in check.steps}
    if outcomes & {"failed", "timeout"}:
        verdict, status = "fail", EXIT_FAIL
    elif "gpu-absent" in outcomes and facts["require_gpu"]:
        verdict, status = "gpu-absent", EXIT_GPU_ABSENT
    else:
        verdict, status = ("pass, GPU parts skipped (no GPU)" if "gpu-absent" in outcomes else "pass"), EXIT_PASS
    summary = {
        "verdict": verdict,
        "exit": status,
        "total_seconds": round(time.monotonic() - check.started, 1),
        **facts,
        "steps": check.steps,
        "pytest": pytest_summary.read(out / pytest_summary.FILE),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    report = render_report(summary, check)
    (out / "report.md").write_text(report)
    print("\n" + report, flush=True)
    print(f"== verdict: {verdict} (exit {status}); results in {out}", flush=True)
    return status


def render_report(s: dict, check: Check) -> str:
    """report.md: the verdict, the GPU and the build, each step, the tests, the example, the benchmarks."""
    lines = [
        f"# GPU check, {s['date'][:10]}",
        "",
        f"- verdict: **{s['verdict']}** (exit {s['exit']}), {s['total_seconds']:.0f} s",
    ]
    gpu, diagnostics = s.get("gpu") or {}, s.get("diagnostics") or {}
    if gpu.get("present"):
        lines.append(
            f"- GPU: {gpu['name']} (compute capability {gpu['compute_capability']}, {gpu['memory_gib']} GiB), "
            f"driver supports CUDA {gpu['driver_supports_cuda']}"
        )
    elif gpu.get("present") is False:
        lines.append(f"- GPU: none usable: {'; '.join(gpu['blocking']) or '(no reason given)'}")
    package, cupy = diagnostics.get("package") or {}, diagnostics.get("cupy") or {}
    if package:
        lines.append(
            f"- {package['distribution']} {package['version']} on Python {package['python']} ({package['platform']})"
        )
    if cupy.get("version"):  # installed and working
        lines.append(
            f"- CuPy {cupy.get('version')} (CUDA runtime {cupy.get('cuda_runtime')}), NVRTC {cupy.get('nvrtc')}"
        )
    info = (diagnostics.get("extension") or {}).get("build_info")
    if info:
        lines.append(
            f"- extension: CUDA {info.get('cuda_version')}, cuBLAS {info.get('cublas_version')}, "
            f"sm_{info.get('sass_archs')} (PTX {info.get('ptx_archs') or 'none'}), host compiler {info.get('host_compiler')}"
        )
    lines += ["", "| step | exit | seconds | outcome | note |", "|---|---|---|---|---|"]
    lines += [
        f"| {t['step']} | {t['exit']} | {t['seconds']} | {t['outcome']} | {t.get('note', '')} |" for t in s["steps"]
    ]
    counts, problems = s.get("pytest"), s.get("test_problems")
    if counts:
        lines += [
            "",
            f"Tests: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped "
            f"(TINYTENSOR_REQUIRE_GPU={'1' if s['require_gpu'] else 'unset'}).",
        ]
        lines += [
            f"- skipped {n} x {reason}" for reason, n in sorted(counts["skip_reasons"].items(), key=lambda kv: -kv[1])
        ]
    if problems:
        absent = [p for p in problems if p["gpu_absent"]]
        lines += [
            f"- {p['kind']}: `{p['test']}`: {p['message'].splitlines()[0][:200] if p['message'] else ''}"
            for p in problems
            if not p["gpu_absent"]
        ][:100]
        if absent:
            lines.append(f'- {len(absent)} failed only because no GPU is usable ("{REQUIRE_GPU_FAILURE}")')
    if s.get("example_accuracy") is not None:
        lines += ["", f"Digits example on cuda: test accuracy {s['example_accuracy']:.4f} (needs 0.95)."]
    bench_log = [ln for ln in check.log("bench_gpu").splitlines() if ln.strip()]
    if bench_log:
        lines += ["", "GPU benchmarks:", "", "```", *bench_log[-30:], "```"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
