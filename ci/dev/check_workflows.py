"""Offline checks of the CI configuration: zizmor (pedantic persona) on the workflows, the local
actions and dependabot.yml, the workflows and dependabot.yml against their schemas, the pre-commit
configuration, [tool.cibuildwheel] against cibuildwheel's own schema, the build identifiers
cibuildwheel would build against the release's table (ci/release/release_manifest.py), release.yml's
matrices (wheels, cuda-libs, the GPU smoke test's Pythons) and the GPU smoke lock's inputs against
that table and the cu12 variant, and the order of each publishing job's steps (upload rules, plan,
the library wheels, wait, the rest; placeholders.yml: upload rules before the upload). Run by
`nox -s workflows`."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "ci" / "release")]
import release_manifest  # noqa: E402

INTENDED = {
    arch: [f"{tag}-manylinux_{arch}" for tag in release_manifest.PYTHON_TAGS] for arch in release_manifest.ARCHS
}


def run(*command: str) -> str:
    print("$", " ".join(command), flush=True)
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    print(proc.stdout + proc.stderr, end="")
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}")
    return proc.stdout


def check_release_tables() -> None:
    """release.yml's matrices and the GPU smoke lock's inputs agree with the release's one table."""
    import yaml

    from buildsys.variant import from_env

    jobs = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())["jobs"]
    runners = {}
    for job in ("wheels", "cuda-libs"):
        entries = jobs[job]["strategy"]["matrix"]["include"]
        archs = [entry["arch"] for entry in entries]
        if sorted(archs) != sorted(release_manifest.ARCHS):
            raise SystemExit(
                f"release.yml's {job} job builds for {archs}; ci/release/release_manifest.py ARCHS is {release_manifest.ARCHS}"
            )
        runners[job] = {entry["arch"]: entry["runner"] for entry in entries}
    # Each library wheel is built, and each per-Python wheel tested against it, on its own architecture.
    if runners["cuda-libs"] != runners["wheels"]:
        raise SystemExit(
            f"release.yml's cuda-libs runners {runners['cuda-libs']} are not the wheels job's {runners['wheels']}"
        )
    tags = release_manifest.PYTHON_TAGS
    ends = [f"{tags[0][2]}.{tags[0][3:]}", f"{tags[-1][2]}.{tags[-1][3:]}"]
    smoke = jobs["gpu-smoke"]["strategy"]["matrix"]["python"]
    if smoke != ends:
        raise SystemExit(
            f"release.yml's GPU smoke test runs Python {smoke}, not the lowest and highest supported {ends}"
        )
    lines = (ROOT / "ci" / "release" / "locks" / "gpu-smoke.in").read_text().splitlines()
    inputs = sorted(line.strip() for line in lines if line.strip() and not line.startswith("#"))
    cu12 = sorted(from_env({"TINYTENSOR_CUDA_VARIANT": "cu12"}).install_requires())
    if inputs != cu12:
        raise SystemExit(
            f"ci/release/locks/gpu-smoke.in lists {inputs}, the cu12 wheel depends on {cu12}: update it and the lock"
        )


PUBLISH_ACTION = "pypa/gh-action-pypi-publish@"


def step_order(workflow: str, job: str, steps: list[dict], expected: list[tuple[str, str]]) -> None:
    """`steps` hold, in this order, one step for each (what, marker) of `expected`: a marker is a
    command its `run` holds, or for an upload the packages-dir of the publishing action."""
    found = []
    for i, step in enumerate(steps):
        if step.get("uses", "").startswith(PUBLISH_ACTION):
            found.append((i, f"upload {step.get('with', {}).get('packages-dir', '?')}"))
        for what, marker in expected:
            if marker and marker in step.get("run", ""):
                found.append((i, what))
    got = [what for _, what in sorted(found)]
    want = [what for what, _ in expected]
    if got != want:
        raise SystemExit(f"{workflow}'s {job} job runs {got}; it must run, in this order, {want}")


def check_publishing() -> None:
    """The publishing jobs upload nothing an index would refuse, and the library wheels before what requires them."""
    import yaml

    workflows = ROOT / ".github" / "workflows"
    jobs = yaml.safe_load((workflows / "release.yml").read_text())["jobs"]
    for job, index in (("publish-testpypi", "testpypi"), ("publish-pypi", "pypi")):
        expected = [
            ("upload_rules.py", f"ci/release/upload_rules.py --index {index} dist/*"),
            ("plan", "ci/release/publish.py plan"),
            ("upload stages/1-libraries/", ""),
            ("wait", "ci/release/publish.py wait"),
            ("upload stages/2-packages/", ""),
        ]
        step_order("release.yml", job, jobs[job]["steps"], expected)
    jobs = yaml.safe_load((workflows / "placeholders.yml").read_text())["jobs"]
    expected = [("upload_rules.py", "ci/release/upload_rules.py"), ("upload placeholders/", "")]
    step_order("placeholders.yml", "placeholders", jobs["placeholders"]["steps"], expected)


def main() -> int:
    workflows = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    # .github: the workflows, the local actions (.github/actions) and dependabot.yml. What the
    # pedantic persona reports that needs the network is ignored inline, each listed in the README.
    run("zizmor", "--offline", "--no-progress", "--persona", "pedantic", "--strict-collection", ".github")
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
    check_release_tables()
    check_publishing()
    print("workflow checks: zizmor clean, schemas valid, build identifiers and publishing order as intended")
    return 0


if __name__ == "__main__":
    sys.exit(main())
