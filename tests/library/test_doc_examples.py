"""Every ```python block of the project's pages runs as written, on its own, on a CPU-only machine.

The pages: README.md, CHANGELOG.md, CONTRIBUTING.md and every docs/**/*.md. Each block is a test
(its id is the page and the line of its opening fence): it runs in a fresh interpreter, in an
empty temporary directory, importing the same tinytensor this test process tests, with
CUDA_VISIBLE_DEVICES="" so that a GPU machine checks what a reader without a GPU gets. A block
that fails is a page to fix: a reader copies one block, not the ones above it.

The pages are found beside tests/ (a checkout, or cibuildwheel's test-sources); a page or folder
that is not there is a skip that names it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", "CHANGELOG.md", "CONTRIBUTING.md"]
DOCS = "docs"

# A CommonMark fence: up to 3 spaces, then 3+ backticks or tildes, then the info string.
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\s`]*)")
_PYTHON = {"python", "py", "python3"}


def python_blocks(text: str) -> list[tuple[int, int, str]]:
    """(fence line, first code line, code) for each fenced python block; lines are 1-based."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, info = len(opening["indent"]), opening["fence"], opening["info"].lower()
        code, j = [], i + 1
        while j < len(lines):
            closing = re.match(r"^ {0,3}(`{3,}|~{3,})[ \t]*$", lines[j])
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                break
            line = lines[j]
            code.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])  # the fence's indent is removed
            j += 1
        if info in _PYTHON:
            blocks.append((i + 1, i + 2, "\n".join(code) + "\n"))
        i = j + 1  # an unclosed fence runs to the end of the document
    return blocks


def _pages() -> list[Path]:
    return [ROOT / name for name in PAGES] + sorted((ROOT / DOCS).rglob("*.md"))


def _absent(relative: str):
    reason = f"{relative} is not beside tests/ ({ROOT / relative} not found): tests/ was copied without it"
    return pytest.param(None, id=f"{relative}-not-found", marks=pytest.mark.skip(reason=reason))


def _params():
    params = [_absent(name) for name in PAGES if not (ROOT / name).is_file()]
    if not (ROOT / DOCS).is_dir():
        params.append(_absent(f"{DOCS}/"))
    for page in _pages():
        if page.is_file():
            relative = page.relative_to(ROOT).as_posix()
            blocks = python_blocks(page.read_text("utf-8"))
            params += [pytest.param((relative, *block), id=f"{relative}-line{block[0]}") for block in blocks]
    return params


def _numbered(code: str, first: int) -> str:
    return "\n".join(f"{first + k:4d} | {line}" for k, line in enumerate(code.splitlines()))


@pytest.mark.parametrize("block", _params())
def test_block_runs_on_cpu(block, tmp_path):
    import tinytensor

    page, fence_line, first_line, code = block
    # Blank lines in front, so a traceback's line numbers are the page's.
    script = tmp_path / "page_block.py"
    script.write_text("\n" * (first_line - 1) + code, encoding="utf-8")
    package_parent = str(Path(tinytensor.__file__).resolve().parent.parent)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=package_parent, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    if proc.returncode != 0:
        pytest.fail(
            f"{page}'s python block at line {fence_line} fails when run as written on a CPU-only machine "
            f"(exit code {proc.returncode}); fix the page:\n{_numbered(code, first_line)}\n"
            f"--- stderr ---\n{proc.stderr}--- stdout ---\n{proc.stdout}",
            pytrace=False,
        )
