"""Offline checks of the CI configuration: zizmor on the workflows, the workflows and dependabot.yml
against their schemas, the pre-commit configuration, [tool.cibuildwheel] against cibuildwheel's own schema, and the build identifiers
cibuildwheel would build against the intended list. Run by `nox -s workflows`."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
INTENDED = {
    "x86_64": [f"cp3{m}-manylinux_x86_64" for m in (10, 11, 12, 13)],
    "aarch64": [f"cp3{m}-manylinux_aarch64" for m in (10, 11, 12, 13)],
}


def run(*command: str) -> str:
    print("$", " ".join(command), flush=True)
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    print(proc.stdout + proc.stderr, end="")
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}")
    return proc.stdout


def main() -> int:
    workflows = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    run("zizmor", "--offline", "--no-progress", ".github/workflows")
    run("check-jsonschema", "--builtin-schema", "vendor.github-workflows", *workflows)
    run("check-jsonschema", "--builtin-schema", "vendor.dependabot", ".github/dependabot.yml")
    run("pre-commit", "validate-config", ".pre-commit-config.yaml")

    import cibuildwheel

    schema = Path(cibuildwheel.__file__).parent / "resources" / "cibuildwheel.schema.json"
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(config, fh)
    run("check-jsonschema", "--schemafile", str(schema), fh.name)

    for arch, intended in INTENDED.items():
        got = run("cibuildwheel", "--print-build-identifiers", "--platform", "linux", "--archs", arch).split()
        if got != intended:
            raise SystemExit(f"cibuildwheel would build {got} for {arch}, intended {intended}")
    print("workflow checks: zizmor clean, schemas valid, build identifiers as intended")
    return 0


if __name__ == "__main__":
    sys.exit(main())
