"""Every ```python block in README.md runs as written, on its own, on a CPU-only machine.

Each block is a test (its id is the README line of its opening fence): it runs in a fresh
interpreter, in an empty temporary directory, importing the same tinytensor this test process
tests, with CUDA_VISIBLE_DEVICES="" so that a GPU machine checks what a reader without a GPU
gets. A block that fails is a README to fix: a reader copies one block, not the ones above it.

README.md is found beside tests/ (a checkout); where tests/ was copied alone (cibuildwheel's
test-sources), there is no README to check and the test says so.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"

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


def _params():
    if not README.is_file():
        reason = f"README.md is not beside tests/ ({README} not found): tests/ was copied without the checkout"
        return [pytest.param(None, id="README-not-found", marks=pytest.mark.skip(reason=reason))]
    return [pytest.param(block, id=f"README.md-line{block[0]}") for block in python_blocks(README.read_text("utf-8"))]


def _numbered(code: str, first: int) -> str:
    return "\n".join(f"{first + k:4d} | {line}" for k, line in enumerate(code.splitlines()))


@pytest.mark.parametrize("block", _params())
def test_readme_block_runs_on_cpu(block, tmp_path):
    import tinytensor

    fence_line, first_line, code = block
    # Blank lines in front, so a traceback's line numbers are the README's.
    script = tmp_path / "readme_block.py"
    script.write_text("\n" * (first_line - 1) + code, encoding="utf-8")
    package_parent = str(Path(tinytensor.__file__).resolve().parent.parent)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=package_parent, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    if proc.returncode != 0:
        pytest.fail(
            f"README.md's python block at line {fence_line} fails when run as written on a CPU-only machine "
            f"(exit code {proc.returncode}); fix the README:\n{_numbered(code, first_line)}\n"
            f"--- stderr ---\n{proc.stderr}--- stdout ---\n{proc.stdout}",
            pytrace=False,
        )
