"""The carried test wheels (ci/dev/gpu-wheels.sh) installed offline for the GPU check: pip --target a
temporary folder that goes first on PYTHONPATH, so the machine's own environment is never changed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ci.release.gpu_steps import Checker

ROOT = Path(__file__).resolve().parents[2]


def install_wheels(check: Checker, folder: Path, env: dict) -> tuple[dict, str | None]:
    """pip install --no-index --no-deps --target a temporary folder; (step, that folder or None)."""
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        step = check.skip("wheels", f"no .whl files in {folder} (run ci/dev/gpu-wheels.sh)")
        step["outcome"] = "failed"
        return step, None
    target = tempfile.mkdtemp(prefix="tt-gpu-wheels-")
    check.temp_dirs.append(target)
    has_pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0
    if has_pip:
        command = [sys.executable, "-m", "pip", "install", "--no-index", "--find-links", str(folder), "--no-deps"]
        command += ["--no-compile", "--no-cache-dir", "--disable-pip-version-check", "--target", target]
        command += [str(w) for w in wheels]
    else:  # pure-Python wheels are zip files whose root is site-packages
        code = "import sys, zipfile\nfor w in sys.argv[2:]:\n    zipfile.ZipFile(w).extractall(sys.argv[1])\n"
        command = [sys.executable, "-c", code, target] + [str(w) for w in wheels]
    step = check.run("wheels", command, env, ROOT)
    step["wheels"] = [w.name for w in wheels]
    step["target"] = target
    step["outcome"] = "timeout" if step["timed_out"] else ("ok" if step["exit"] == 0 else "failed")
    if step["exit"] == 0:
        step["missing_requirements"] = _missing_requirements(target, env)
        if step["missing_requirements"]:
            step["outcome"] = "failed"
            step["note"] = "requirements not importable: " + "; ".join(step["missing_requirements"])
            print(f"== wheels: {step['note']}", flush=True)
    return step, target if step["exit"] == 0 else None


def _missing_requirements(target: str, env: dict) -> list[str]:
    """Requirements of the carried distributions (no extras) that nothing on the path provides."""
    code = r"""
import importlib.metadata as md, sys
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
missing = []
for dist in md.distributions(path=[sys.argv[1]]):
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        try:
            md.version(req.name)
        except md.PackageNotFoundError:
            missing.append(f"{dist.metadata['Name']} needs {text}")
print("\n".join(missing))
"""
    env = dict(env, PYTHONPATH=os.pathsep.join(filter(None, [target, env.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-c", code, target], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return [f"(the check itself failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]})"]
    return [line for line in proc.stdout.splitlines() if line.strip()]
