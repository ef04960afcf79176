"""Offline checks of the CI configuration: every `uses:` in a form every runner parses
(ci/dev/workflow_refs.py), zizmor (pedantic persona) on the workflows, the local actions and
dependabot.yml, the workflows and dependabot.yml against their schemas, the pre-commit
configuration, [tool.cibuildwheel] against cibuildwheel's own schema, the build identifiers
cibuildwheel would build against the release matrix (buildsys/release_matrix.py), release.yml's
and pyproject's matrices against it (tests/tooling/test_release_matrix.py), the pre-commit hooks'
pins against the dependency groups' (tests/tooling/test_precommit_pins.py), and the order of each
publishing job's steps (upload rules, plan, the library wheels, wait, the rest; placeholders.yml:
upload rules before the upload). Run by `nox -s workflows`."""

from __future__ import annotations

import json
import sys
import tempfile
import tomllib
from pathlib import Path

from buildsys import release_matrix
from ci import commands
from ci.dev import workflow_refs

ROOT = Path(__file__).resolve().parents[2]

log = commands.logger("check-workflows")

INTENDED = {arch: [f"{tag}-manylinux_{arch}" for tag in release_matrix.PYTHON_TAGS] for arch in release_matrix.ARCHS}


def run(*command: str) -> str:
    proc = commands.run(command, log=log, capture=True, check=False, cwd=ROOT, timeout=10 * 60)
    print(proc.stdout + proc.stderr, end="")
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}")
    return proc.stdout


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
            ("upload_rules", f"ci.release.upload_rules --index {index} dist/*"),
            ("plan", "ci.release.publish plan"),
            ("upload stages/1-libraries/", ""),
            ("wait", "ci.release.publish wait"),
            ("upload stages/2-packages/", ""),
        ]
        step_order("release.yml", job, jobs[job]["steps"], expected)
    jobs = yaml.safe_load((workflows / "placeholders.yml").read_text())["jobs"]
    expected = [("upload_rules", "ci.release.upload_rules"), ("upload placeholders/", "")]
    step_order("placeholders.yml", "placeholders", jobs["placeholders"]["steps"], expected)


def main() -> int:
    workflows = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    refs = workflow_refs.check(ROOT)
    if refs:
        raise SystemExit("\n".join(refs))
    # .github: the workflows, the local actions (.github/actions) and dependabot.yml. What the
    # pedantic persona reports that needs the network is ignored inline, each listed in docs/maintainers/security.md.
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
    # the release matrix against release.yml and [tool.cibuildwheel] (PyYAML is here, not in tests_cpu)
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest"]
    checks = ("test_release_matrix.py", "test_precommit_pins.py", "test_workflow_refs.py")
    run(*pytest, *(f"tests/tooling/{name}" for name in checks))
    check_publishing()
    print("workflow checks: zizmor clean, schemas valid, build identifiers and publishing order as intended")
    return 0


if __name__ == "__main__":
    sys.exit(main())
