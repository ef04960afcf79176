"""ci/release/elf_versions.py on real shared objects built here with the C compiler, shaped like the
library wheel's: our copy of a library under its own soname but with the upstream symbol version
(`answer@@libtarget.so.1`, as NVIDIA names them after their soname), the upstream library itself
answering differently, and a library that uses ours. Loaded the way tinytensor loads the library
wheel (by path, RTLD_LOCAL) while the upstream one sits in the global scope, the user binds to the
upstream one: a renamed soname alone does not stop it. With the version renamed in place, it binds
to ours.

Needs pyelftools (the `release` dependency group: nox -s release) and a C compiler.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from checkout import from_checkout

pytest.importorskip("elftools", reason="pyelftools (the release dependency group) reads the ELF files")

from elftools.elf.elffile import ELFFile  # noqa: E402 (pyelftools only where present)

elf_versions = from_checkout("ci.release.elf_versions")

CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler to build the test libraries")

UPSTREAM = "libtarget.so.1"  # the upstream soname, and the version its symbols carry
OURS = "libtarget-ours.so.1"


def _library(folder: Path, answer: int, soname: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "target.c").write_text(f"int answer(void) {{ return {answer}; }}\n")
    (folder / "target.map").write_text(f"{UPSTREAM} {{ global: answer; local: *; }};\n")
    out = folder / soname
    subprocess.run(
        [CC, "-shared", "-fPIC", "-o", str(out), str(folder / "target.c"), f"-Wl,-soname,{soname}",
         f"-Wl,--version-script={folder / 'target.map'}"],
        check=True,
    )  # fmt: skip
    return out


@pytest.fixture
def libs(tmp_path):
    ours = _library(tmp_path / "ours", 1, OURS)
    impostor = _library(tmp_path / "impostor", 2, UPSTREAM)
    (tmp_path / "user.c").write_text("int answer(void);\nint user_answer(void) { return answer(); }\n")
    user = tmp_path / "ours" / "libuser.so"
    subprocess.run(
        [CC, "-shared", "-fPIC", "-o", str(user), str(tmp_path / "user.c"), str(ours)],
        check=True,
    )
    return {"ours": ours, "impostor": impostor, "user": user}


def _answer(libs) -> int:
    """What libuser's call answers with the impostor loaded RTLD_GLOBAL first, ours by path."""
    code = (
        "import ctypes, os, sys\n"
        "ctypes.CDLL(sys.argv[1], mode=os.RTLD_GLOBAL)\n"
        "ctypes.CDLL(sys.argv[2], mode=os.RTLD_LOCAL)\n"
        "print(ctypes.CDLL(sys.argv[3], mode=os.RTLD_LOCAL).user_answer())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(libs["impostor"]), str(libs["ours"]), str(libs["user"])],
        capture_output=True,
        text=True,
        env={"LD_BIND_NOW": "1", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout)


def _nodes(path: Path) -> dict:
    with open(path, "rb") as f:
        return elf_versions.version_nodes(ELFFile(f))


def test_a_global_library_of_the_same_version_answers_until_the_versions_are_renamed(libs):
    assert _nodes(libs["ours"])["defines"] == [UPSTREAM]
    assert _nodes(libs["user"])["needs"][OURS] == [UPSTREAM]
    assert _answer(libs) == 2, "the upstream library in the global scope should answer: else this shows nothing"

    changed = elf_versions.rename_versions(libs["ours"], {UPSTREAM: "TT_TARGET_1"})
    assert changed and "TT_TARGET_1" in changed[0]
    elf_versions.rename_versions(libs["user"], {UPSTREAM: "TT_TARGET_1"})
    assert _nodes(libs["ours"])["defines"] == ["TT_TARGET_1"]
    assert _nodes(libs["user"])["needs"][OURS] == ["TT_TARGET_1"]  # the file it needs keeps its name
    assert _answer(libs) == 1


def test_a_renamed_library_without_its_user_renamed_does_not_load(libs):
    """The loader checks every version a library needs against its dependency: a half-done rename
    fails at load, naming the version, never at a call."""
    elf_versions.rename_versions(libs["ours"], {UPSTREAM: "TT_TARGET_1"})
    code = "import ctypes, os, sys\nctypes.CDLL(sys.argv[1], mode=os.RTLD_LOCAL)\nctypes.CDLL(sys.argv[2])\n"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(libs["ours"]), str(libs["user"])], capture_output=True, text=True
    )
    assert proc.returncode != 0 and f"version `{UPSTREAM}' not found" in proc.stderr, proc.stderr


def test_a_longer_name_is_refused_and_the_file_is_untouched(libs):
    before = hashlib.sha256(libs["ours"].read_bytes()).hexdigest()
    with pytest.raises(ValueError, match="longer than"):
        elf_versions.rename_versions(libs["ours"], {UPSTREAM: "TT_A_VERSION_NAME_FAR_TOO_LONG"})
    assert hashlib.sha256(libs["ours"].read_bytes()).hexdigest() == before


def test_a_string_something_else_uses_is_refused(libs):
    """The upstream library's version shares its string with its soname: renaming it in place would
    rename the soname too, so it is refused (our copies get their own soname first, from patchelf)."""
    before = hashlib.sha256(libs["impostor"].read_bytes()).hexdigest()
    with pytest.raises(ValueError, match="also used by \\['DT_SONAME'\\]"):
        elf_versions.rename_versions(libs["impostor"], {UPSTREAM: "TT_TARGET_1"})
    assert hashlib.sha256(libs["impostor"].read_bytes()).hexdigest() == before


def test_the_hash_is_the_system_v_one():
    # values from the System V ABI's algorithm, as the linker writes them for these names
    assert elf_versions.elf_hash("GLIBC_2.2.5") == 0x09691A75
    assert elf_versions.elf_hash("") == 0
    assert json.dumps(elf_versions.elf_hash("libcublas.so.12"))  # an int, within 32 bits
    assert 0 <= elf_versions.elf_hash("libcublas.so.12") < 2**32
