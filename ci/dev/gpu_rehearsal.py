"""ci/release/gpu_check.py exactly as an offline CUDA 13 GPU machine runs it, here, without a GPU.

Run by `nox -s gpu_rehearsal` inside a Python 3.12 environment like that machine's (see
DEVICE_PACKAGES in noxfile.py): cuBLAS 13 made importable as the nvidia-cublas wheel would be, a
CUDA 13 toolkit, the carried wheels, and a copy of what a device call sends (tracked files,
untracked ones git does not ignore, and the carried folder). Passes when the build works against
CUDA 13, the extension imports, and every failure is only for want of a GPU: then on the GPU
machine only the GPU's presence can change the result.

    python -m ci.dev.gpu_rehearsal [--cuda13-from-pip] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from ci.dev import cuda13
from ci.project_paths import ROOT, copy_worktree

DEVICE_COMMAND = ["--build-inplace", "--wheels", ".gpu-wheels", "--archs", "90"]  # as README's device command
EXPECTED = {  # each step's outcome on a machine without a GPU
    "wheels": "ok",
    "build": "ok",
    "build-foreign": "ok",
    "diagnostics": "ok",
    "diagnostics-json": "ok",
    "pytest": "gpu-absent",
    "example": "gpu-absent",
    "bench_gpu": "gpu-absent",
}


def problems(s: dict) -> list[str]:
    """What, in gpu_check's summary from a machine without a GPU, the missing GPU does not explain."""
    found = []
    steps = {st["step"]: st for st in s["steps"]}
    for name, outcome in EXPECTED.items():
        got = steps.get(name, {}).get("outcome", "missing")
        if got != outcome:
            found.append(f"step {name}: {got}, expected {outcome} ({steps.get(name, {}).get('note', 'see its log')})")
    if steps.get("wheels", {}).get("missing_requirements"):
        found.append(f"carried wheels lack requirements: {steps['wheels']['missing_requirements']}")
    config = s.get("build_config") or {}
    if config.get("extension") != "built" or not str(config.get("cuda_version", "")).startswith("13."):
        found.append(f"the build record is not a CUDA 13 extension: {config}")
    foreign = (s.get("foreign_build") or {}).get("build_config") or {}
    if foreign.get("sass_archs") != [80] or foreign.get("ptx_archs"):
        found.append(f"the foreign-arch copy is not sm_80 SASS alone: {foreign}")
    ext = s.get("extension") or {}
    if not ext.get("loaded") or not str((ext.get("build_info") or {}).get("cuda_version", "")).startswith("13."):
        found.append(f"the extension does not import, or its build_info is not CUDA 13: {ext}")
    if s.get("gpu", {}).get("present") is not False:
        found.append(f"diagnostics should find no GPU here: {s.get('gpu')}")
    junit = s.get("junit") or {}
    found += [
        f"test {p['test']} ({p['kind']}): {p['message'][:300]}"
        for p in junit.get("problems", [])
        if p.get("class") != "gpu-absent"
    ]
    if not junit.get("passed"):
        found.append("no test passed")
    skips = (s.get("pytest") or {}).get("skip_reasons") or {}
    found += [f"{n} tests skipped: {r}" for r, n in skips.items() if "is not installed" in r and "PyTorch" not in r]
    if s.get("verdict") != "gpu-absent" or s.get("exit") != 3:
        found.append(f"verdict {s.get('verdict')!r} (exit {s.get('exit')}), expected 'gpu-absent' (exit 3)")
    if s["total_seconds"] > s["budget_seconds"]:
        found.append(f"took {s['total_seconds']} s, over its {s['budget_seconds']} s budget")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuda13-from-pip", action="store_true", help="assemble CUDA 13 from PyPI's wheels")
    parser.add_argument("--out", help="folder for the copy and the results (default: a temporary one)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    # cuBLAS 13 as an installed nvidia-cublas wheel would be: nvidia/cu13 on sys.path
    Path(sysconfig.get_paths()["purelib"], "tt-cublas13.pth").write_text(f"{cuda13.cublas()}\n")
    cuda_home = cuda13.toolkit(from_pip=args.cuda13_from_pip)
    print(f"CUDA 13 toolkit: {cuda_home}", flush=True)
    subprocess.run(
        ["bash", str(ROOT / "ci" / "dev" / "gpu-wheels.sh")], env=dict(os.environ, PYTHON=sys.executable), check=True
    )

    work = Path(args.out or tempfile.mkdtemp(prefix="tt-gpu-rehearsal-")).resolve()
    tree, out, returned = work / "tree", work / "gpu-check", work / "returned"
    shutil.rmtree(tree, ignore_errors=True)
    files = copy_worktree(tree)
    shutil.copytree(ROOT / ".gpu-wheels", tree / ".gpu-wheels")  # what `carry` adds
    for old in (out, returned):
        shutil.rmtree(old, ignore_errors=True)
    print(f"copied {files} files of the working tree to {tree}", flush=True)
    command = [
        sys.executable,
        "-m",
        "ci.release.gpu_check",
        *DEVICE_COMMAND,
        "--out",
        str(out),
        "--bundle",
        str(returned),
    ]
    check_started = time.monotonic()
    status = subprocess.run(command, cwd=tree, env=dict(os.environ, CUDA_HOME=str(cuda_home))).returncode
    check_seconds = time.monotonic() - check_started
    if status not in (0, 1, 3):
        print(f"gpu_check exited {status}: it broke before writing a verdict", file=sys.stderr)
        return 1
    summary = json.loads((returned / "summary.json").read_text())
    found = problems(summary)
    print(
        f"gpu_check: {summary['verdict']} (exit {summary['exit']}) in {check_seconds:.0f} s "
        f"(its steps: {summary['total_seconds']:.0f} s); rehearsal {time.monotonic() - started:.0f} s; "
        f"report: {returned / 'report.md'}",
        flush=True,
    )
    if found:
        print("the GPU check would fail on the device for reasons other than the GPU:", file=sys.stderr)
        print("  - " + "\n  - ".join(found), file=sys.stderr)
        return 1
    print("rehearsal passed: on the GPU machine only the GPU's presence can change the result")
    return 0


if __name__ == "__main__":
    sys.exit(main())
