"""The GPU test matrix in one script: diagnostics, the test suite with GPU tests required, the
digits example on cuda, and the GPU benchmarks; results under --out.

    # a GPU box with network: nox builds and installs, then calls this
    TINYTENSOR_REQUIRE_GPU=1 ci/nox.sh -s tests_gpu
    # a GPU box without network (the device machine lent here: CUDA 13, cupy-cuda13x, no pip):
    python ci/gpu_check.py --build-inplace --out "$OUT"

--build-inplace compiles the extension into the source tree against the machine's toolkit
($CUDA_HOME, else /usr/local/cuda; the build's discovery also finds pip's nvidia-* wheels) and tests
the source tree; without it, the installed package is tested.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(name: str, command: list[str], out: Path, env: dict, cwd: Path) -> int:
    """Run a step, tee its output to out/<name>.log, and record its status and duration."""
    started = time.monotonic()
    print(f"== {name}: {' '.join(command)}", flush=True)
    with open(out / f"{name}.log", "w") as log:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
        for line in proc.stdout:
            sys.stdout.write(line)
            log.write(line)
        status = proc.wait()
    seconds = time.monotonic() - started
    print(f"== {name}: exit {status} in {seconds:.0f} s", flush=True)
    STEPS.append({"step": name, "exit": status, "seconds": round(seconds, 1)})
    return status


STEPS: list[dict] = []


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu-check-results", help="folder for logs and results")
    parser.add_argument("--build-inplace", action="store_true", help="compile the extension into the source tree")
    parser.add_argument(
        "--archs",
        default=os.environ.get("TINYTENSOR_CUDA_ARCHS", ""),
        help="TINYTENSOR_CUDA_ARCHS for --build-inplace (default: the build's own default)",
    )
    parser.add_argument("--skip-bench", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        OPENBLAS_NUM_THREADS="1",
        TINYTENSOR_EXPECT_BACKEND="full",
        TT_PYTEST_SUMMARY=str(out / "pytest-summary.json"),
    )
    cwd = Path(os.environ.get("TMPDIR", "/tmp"))  # keep the source tree off sys.path unless asked for

    if args.build_inplace:
        build_env = dict(env, TINYTENSOR_BUILD_EXTENSION="1")
        if not build_env.get("CUDA_HOME") and Path("/usr/local/cuda/bin/nvcc").exists():
            build_env["CUDA_HOME"] = "/usr/local/cuda"
        if args.archs:
            build_env["TINYTENSOR_CUDA_ARCHS"] = args.archs
        if run("build", [sys.executable, "setup.py", "build_ext", "--inplace"], out, build_env, ROOT):
            return write_summary(out, 1)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        if build_env.get("CUDA_HOME"):  # CuPy's library finder also looks there (NVRTC)
            env.setdefault("CUDA_HOME", build_env["CUDA_HOME"])

    run("diagnostics", [sys.executable, "-m", "tinytensor"], out, env, cwd)
    with open(out / "diagnostics.json", "w") as fh:
        subprocess.run([sys.executable, "-m", "tinytensor", "--json"], stdout=fh, env=env, cwd=cwd)
    pytest_env = dict(env, TINYTENSOR_REQUIRE_GPU=env.get("TINYTENSOR_REQUIRE_GPU", "1" if args.build_inplace else ""))
    status = run(
        "pytest",
        [
            sys.executable,
            "-m",
            "pytest",
            str(ROOT / "tests"),
            "-q",
            "-p",
            "no:cacheprovider",
            "--ignore",
            str(ROOT / "tests" / "build"),
            "--junitxml",
            str(out / "pytest.xml"),
            "--rootdir",
            str(ROOT),
        ],
        out,
        pytest_env,
        cwd,
    )
    if not args.skip_bench:
        run(
            "bench_gpu",
            [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--json", str(out / "bench_gpu.json")],
            out,
            env,
            cwd,
        )
    return write_summary(out, status)


def write_summary(out: Path, status: int) -> int:
    summary = {"exit": status, "steps": STEPS}
    path = out / "pytest-summary.json"
    if path.exists():
        summary["pytest"] = json.loads(path.read_text())
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
