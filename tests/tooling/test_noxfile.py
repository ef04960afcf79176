"""`nox -l` shows each session's description in full: the first line of its docstring, which must
be a complete sentence by itself (nox cuts a description at the first line break)."""

from __future__ import annotations

import ast

import pytest
from checkout import ROOT

if not (ROOT / "noxfile.py").is_file():
    pytest.skip(
        reason="checks the repository's own noxfile.py: this is a wheel's test folder, without it",
        allow_module_level=True,
    )


def _sessions() -> dict[str, str | None]:
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
            "nox.session" in ast.unparse(decorator) for decorator in node.decorator_list
        ):
            found[node.name] = ast.get_docstring(node)
    return found


def test_the_noxfile_declares_sessions():
    assert {"lint", "tests_cpu", "release", "workflows"} <= set(_sessions())


def test_each_session_description_is_one_complete_line():
    for name, doc in _sessions().items():
        assert doc, f"session {name} has no docstring: nox -l shows nothing for it"
        lines = doc.splitlines()
        first = lines[0]
        assert first.endswith("."), f"session {name}: nox -l shows {first!r}, which stops mid-sentence"
        assert len(lines) == 1 or not lines[1].strip(), f"session {name}: its first sentence runs onto a second line"
        assert len(first) <= 100, f"session {name}: {first!r} is {len(first)} characters; keep nox -l readable"
