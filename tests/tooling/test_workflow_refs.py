"""Every `uses:` of the workflows is one every Actions runner parses (ci/dev/workflow_refs.py):
the repository's files pass, and the forms a runner may reject are caught."""

from __future__ import annotations

import pytest
from checkout import ROOT, from_checkout

if not (ROOT / ".github" / "workflows").is_dir():
    pytest.skip(
        reason="checks the repository's own files: this is an sdist or a wheel's test folder", allow_module_level=True
    )
pytest.importorskip("yaml", reason="the workflows are read with PyYAML, which `nox -s workflows` has")

refs = from_checkout("ci.dev.workflow_refs")
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
LOCAL = "uses: ./.github/actions/release-files"


def test_the_repositorys_workflows_and_actions_pass():
    assert refs.check(ROOT) == []


def test_release_yml_uses_its_local_action_by_path():
    assert LOCAL in RELEASE.read_text()


@pytest.mark.parametrize(
    "uses",
    [
        "$/.github/actions/release-files",  # the self-reference behind a runner feature flag
        "IbrokhimN/tinytensor/.github/actions/release-files@main",  # a branch
        ".github/actions/release-files",  # a local path without ./
    ],
)
def test_a_reference_a_runner_may_reject_fails(uses):
    text = RELEASE.read_text().replace(LOCAL, f"uses: {uses}")
    found = refs.problems(text, "release.yml", ROOT)
    assert found and all(uses in p for p in found), found


def test_an_action_pinned_by_tag_fails():
    text = RELEASE.read_text()
    pinned = next(line for line in text.splitlines() if "uses: actions/checkout@" in line)
    found = refs.problems(text.replace(pinned, "      - uses: actions/checkout@v5"), "release.yml", ROOT)
    assert any("actions/checkout@v5" in p for p in found), found


def test_a_local_action_before_the_checkout_fails():
    workflow = (
        "on: push\njobs:\n  j:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - uses: ./.github/actions/release-files\n"
        "      - uses: actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8\n"
    )
    found = refs.problems(workflow, "w.yml", ROOT)
    assert len(found) == 1 and "before the job checks out" in found[0], found


def test_a_local_action_that_does_not_exist_fails():
    workflow = "on: push\njobs:\n  j:\n    runs-on: ubuntu-24.04\n    steps:\n      - uses: ./.github/actions/nothing\n"
    found = refs.problems(workflow, "w.yml", ROOT)
    assert len(found) == 1 and "names no local action" in found[0], found
