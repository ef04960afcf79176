"""The offline GPU check (docs/maintainers/gpu-check.md's `ci.release.gpu_check --build-inplace --wheels ...`) on a
machine without a GPU: passes when nothing but the missing GPU fails, so that on a GPU machine only
the GPU can change the result.

    python -m ci.dev.gpu_rehearsal [--cuda13-from-pip] [--out DIR]   # `nox -s gpu_rehearsal` runs it

It builds against CUDA 13 (ci/dev/cuda13.py; cuBLAS 13 importable as the nvidia-cublas wheel makes
it), installs the wheels ci/dev/gpu-wheels.sh downloads, and works in a copy of the working tree,
since the in-place build writes into the tree.
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
from pathlib import Path

from ci.dev import cuda13
from ci.project_paths import ROOT, copy_worktree

COMMAND = ["--build-inplace", "--wheels", ".gpu-wheels", "--archs", "90"]  # the foreign-arch copy is then sm_80
EXPECTED = {  # each step's outcome without a GPU
    "wheels": "ok",
    "build": "ok",
    "diagnostics": "ok",
    "build-foreign": "ok",
    "pytest": "gpu-absent",
    "example": "gpu-absent",
    "bench_gpu": "gpu-absent",
}


def problems(s: dict) -> list[str]:
    """What, in gpu_check's summary.json from a machine without a GPU, the missing GPU does not explain."""
    steps = {step["step"]: step for step in s["steps"]}
    found = [
        f"step {name}: {steps.get(name, {}).get('outcome', 'not run')}, expected {outcome} "
        f"({steps.get(name, {}).get('note', 'see its log')})"
        for name, outcome in EXPECTED.items()
        if steps.get(name, {}).get("outcome") != outcome
    ]
    config = s.get("build_config") or {}
    if config.get("extension") != "built" or not str(config.get("cuda_version")).startswith("13."):
        found.append(f"the build record is not a CUDA 13 extension: {config}")
    foreign = steps.get("build-foreign", {}).get("build_config") or {}
    if foreign.get("sass_archs") != [80] or foreign.get("ptx_archs"):
        found.append(f"the foreign-arch copy is not sm_80 SASS alone: {foreign}")
    ext = (s.get("diagnostics") or {}).get("extension") or {}
    if not ext.get("loaded") or not str((ext.get("build_info") or {}).get("cuda_version")).startswith("13."):
        found.append(f"the extension does not import, or its build_info is not CUDA 13: {ext}")
    if (s.get("gpu") or {}).get("present") is not False:
        found.append(f"diagnostics should find no GPU here: {s.get('gpu')}")
    found += [
        f"test {p['test']} ({p['kind']}): {p['message'][:300]}"
        for p in s.get("test_problems") or []
        if not p["gpu_absent"]
    ]
    counts = s.get("pytest") or {"passed": 0, "skip_reasons": {}}
    if not counts["passed"]:
        found.append("no test passed")
    # a test dependency the carried wheels lack (PyTorch, the test oracle, is optional)
    found += [
        f"{n} tests skipped: {r}"
        for r, n in counts["skip_reasons"].items()
        if "is not installed" in r and "PyTorch" not in r
    ]
    if s.get("verdict") != "gpu-absent" or s.get("exit") != 3:
        found.append(f"verdict {s.get('verdict')!r} (exit {s.get('exit')}), expected 'gpu-absent' (exit 3)")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuda13-from-pip", action="store_true", help="assemble CUDA 13 from PyPI's wheels")
    parser.add_argument("--out", help="folder for the copy and the results (default: a temporary one)")
    args = parser.parse_args(argv)
    # cuBLAS 13 as an installed nvidia-cublas wheel would be: nvidia/cu13 on sys.path
    Path(sysconfig.get_paths()["purelib"], "tt-cublas13.pth").write_text(f"{cuda13.cublas()}\n")
    cuda_home = cuda13.toolkit(from_pip=args.cuda13_from_pip)
    print(f"CUDA 13 toolkit: {cuda_home}", flush=True)
    wheels = ROOT / ".gpu-wheels"
    gpu_wheels = ["bash", str(ROOT / "ci" / "dev" / "gpu-wheels.sh"), str(wheels)]
    subprocess.run(gpu_wheels, env=dict(os.environ, PYTHON=sys.executable), check=True)

    work = Path(args.out or tempfile.mkdtemp(prefix="tt-gpu-rehearsal-")).resolve()
    tree, out = work / "tree", work / "gpu-check"
    shutil.rmtree(tree, ignore_errors=True)
    print(f"copied {copy_worktree(tree)} files of the working tree to {tree}", flush=True)
    shutil.copytree(wheels, tree / ".gpu-wheels")
    command = [sys.executable, "-m", "ci.release.gpu_check", *COMMAND, "--out", str(out)]
    status = subprocess.run(command, cwd=tree, env=dict(os.environ, CUDA_HOME=str(cuda_home))).returncode
    if status not in (0, 1, 3):
        print(f"gpu_check exited {status}: it broke before writing a verdict", file=sys.stderr)
        return 1
    found = problems(json.loads((out / "summary.json").read_text()))
    if found:
        print("the GPU check would fail on a GPU machine for reasons other than the GPU:", file=sys.stderr)
        print("  - " + "\n  - ".join(found), file=sys.stderr)
        return 1
    print(f"rehearsal passed: only the missing GPU failed (report: {out / 'report.md'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
