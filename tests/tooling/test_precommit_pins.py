"""The pre-commit hooks run the versions CI runs: each hook whose tool is pinned in a dependency
group of pyproject.toml (lint, workflows) names that pin as its rev, and each of a hook's
additional dependencies that a group pins carries the same pin. A bump must change both."""

from __future__ import annotations

import re
import tomllib

import pytest
from checkout import ROOT

if not (ROOT / ".pre-commit-config.yaml").is_file():
    pytest.skip(
        reason="checks the repository's own files: this is an sdist or a wheel's test folder", allow_module_level=True
    )

# hook repository -> the distribution that is its tool
TOOLS = {
    "https://github.com/astral-sh/ruff-pre-commit": "ruff",
    "https://github.com/pre-commit/mirrors-mypy": "mypy",
    "https://github.com/codespell-project/codespell": "codespell",
    "https://github.com/hukkin/mdformat": "mdformat",
    "https://github.com/zizmorcore/zizmor-pre-commit": "zizmor",
    "https://github.com/python-jsonschema/check-jsonschema": "check-jsonschema",
}
# file-hygiene checks that only pre-commit runs: no dependency group holds them
PRE_COMMIT_ONLY = {"https://github.com/pre-commit/pre-commit-hooks", "https://github.com/pre-commit/pygrep-hooks"}

_PIN = re.compile(r"^([A-Za-z0-9._-]+)(?:\[[^\]]*\])?==([^;\s]+)$")


def _group_pins() -> dict[str, str]:
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["dependency-groups"]
    pins: dict[str, str] = {}
    for name in ("lint", "workflows"):
        for requirement in groups[name]:
            match = _PIN.match(requirement) if isinstance(requirement, str) else None
            if match:
                pins[match[1].lower()] = match[2]
    return pins


def _repos() -> list[dict]:
    yaml = pytest.importorskip(
        "yaml", reason=".pre-commit-config.yaml is read with PyYAML, which `nox -s workflows` has"
    )
    return yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text("utf-8"))["repos"]


def test_every_hook_repository_is_accounted_for():
    unknown = [repo["repo"] for repo in _repos() if repo["repo"] not in TOOLS and repo["repo"] not in PRE_COMMIT_ONLY]
    assert not unknown, f"say whether these hooks' tools are pinned in a dependency group (TOOLS) or not: {unknown}"


def test_hook_revisions_are_the_dependency_groups_pins():
    pins, wrong = _group_pins(), []
    for repo in _repos():
        tool = TOOLS.get(repo["repo"])
        if tool is None:
            continue
        if tool not in pins:
            wrong.append(f"{tool} (hook {repo['repo']}) is pinned in no dependency group (lint, workflows)")
        elif repo["rev"].removeprefix("v") != pins[tool]:
            wrong.append(f"{repo['repo']} is at {repo['rev']}, the dependency groups pin {tool}=={pins[tool]}")
    assert not wrong, "\n".join(wrong)


def test_additional_dependencies_are_the_dependency_groups_pins():
    pins, wrong = _group_pins(), []
    for repo in _repos():
        for hook in repo["hooks"]:
            for requirement in hook.get("additional_dependencies", []):
                match = _PIN.match(requirement)
                if match is None:
                    wrong.append(f"hook {hook['id']}: {requirement!r} is not pinned with ==")
                elif pins.get(match[1].lower()) != match[2]:
                    wrong.append(
                        f"hook {hook['id']}: {requirement}, the dependency groups pin {pins.get(match[1].lower())}"
                    )
    assert not wrong, "\n".join(wrong)
