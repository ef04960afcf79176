"""ci/release/check_wheel.py rejects wheels that break the contract: the repaired wheel and the library
wheel pass, and copies of them with a driver library or a CUDA library added, code in the library
wheel, an extension needing other symbol versions than the library wheel defines, or a too-new
platform tag, fail, each with its reason.

Runs in the release rehearsal, which sets TT_REPAIRED_WHEEL and TT_LIBS_WHEEL to the wheels it built.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import pytest
from checkout import from_checkout

WHEEL = os.environ.get("TT_REPAIRED_WHEEL")
LIBS_WHEEL = os.environ.get("TT_LIBS_WHEEL")
if not WHEEL:
    pytest.skip(reason="needs a repaired CUDA wheel (TT_REPAIRED_WHEEL): release rehearsal", allow_module_level=True)

check_wheel = from_checkout("ci.release.check_wheel")
elf_versions = from_checkout("ci.release.elf_versions")

PLAT = "manylinux_2_28_x86_64"


def test_the_repaired_wheel_meets_the_contract():
    facts = check_wheel.check(Path(WHEEL), PLAT, "cu12")
    assert facts["failures"] == []
    assert PLAT in facts["platform_tags"]
    assert {"libcudart-tinytensor.so.12", "libcublas-tinytensor.so.12"} <= set(facts["extension_needs"])


def _with_member(tmp_path: Path, wheel: str, member: str, data: bytes) -> Path:
    bad = tmp_path / Path(wheel).name
    shutil.copy(wheel, bad)
    with zipfile.ZipFile(bad, "a") as zf:
        zf.writestr(member, data)
    return bad


def _extension_bytes() -> bytes:
    with zipfile.ZipFile(WHEEL) as zf:
        return zf.read(next(n for n in zf.namelist() if n.startswith("tinytensor/cuda_ops")))


def test_a_driver_library_inside_fails(tmp_path):
    # a real ELF file under the driver's name, as auditwheel would graft it without --exclude
    bad = _with_member(tmp_path, WHEEL, "pytinytensor_cu12.libs/libcuda.so.1", _extension_bytes())
    failures = check_wheel.check(bad, PLAT, "cu12")["failures"]
    assert any("driver libraries are inside the wheel" in f and "libcuda.so.1" in f for f in failures), failures


def test_a_grafted_cuda_library_fails(tmp_path):
    # what auditwheel does when the repair forgets to exclude the library wheel's cuBLAS
    bad = _with_member(tmp_path, WHEEL, "pytinytensor_cu12.libs/libcublas-4cc45526.so.12", _extension_bytes())
    failures = check_wheel.check(bad, PLAT, "cu12")["failures"]
    assert any("CUDA libraries are inside the per-Python wheel" in f for f in failures), failures


@pytest.mark.skipif(not LIBS_WHEEL, reason="needs the library wheel (TT_LIBS_WHEEL): release rehearsal")
def test_the_library_wheel_meets_its_contract():
    facts = check_wheel.check_libs(Path(LIBS_WHEEL), PLAT)
    assert facts["failures"] == []
    assert facts["wheel"].split("-")[2:4] == ["py3", "none"]
    assert 90 in facts["manifest"]["cublas_archs"]["sass"]


@pytest.mark.skipif(not LIBS_WHEEL, reason="needs the library wheel (TT_LIBS_WHEEL): release rehearsal")
def test_a_library_wheel_with_a_driver_inside_fails(tmp_path):
    bad = _with_member(tmp_path, LIBS_WHEEL, "tinytensor_cu12_libs/lib/libcuda.so.1", _extension_bytes())
    failures = check_wheel.check_libs(bad, PLAT)["failures"]
    assert any("driver libraries are inside the wheel" in f for f in failures), failures
    assert any("expected exactly" in f for f in failures), failures


@pytest.mark.skipif(not LIBS_WHEEL, reason="needs the library wheel (TT_LIBS_WHEEL): release rehearsal")
def test_a_library_wheel_holding_code_fails(tmp_path):
    """The loader is tinytensor's: a fix to it must never need a new 580 MB library wheel."""
    bad = _with_member(tmp_path, LIBS_WHEEL, "tinytensor_cu12_libs/__init__.py", b"def load(): pass\n")
    failures = check_wheel.check_libs(bad, PLAT)["failures"]
    assert any("holds code" in f and "__init__.py" in f for f in failures), failures


def test_an_extension_needing_other_symbol_versions_fails(tmp_path):
    """An extension whose cuBLAS references carry another version than the library wheel's copy
    defines would not load; one carrying NVIDIA's would bind to any cuBLAS in the global scope."""
    with zipfile.ZipFile(WHEEL) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    name = next(n for n in members if n.startswith("tinytensor/cuda_ops"))
    extension = tmp_path / "cuda_ops.so"
    extension.write_bytes(members[name])
    assert elf_versions.rename_versions(extension, {"TT_CUBLAS_12": "XX_CUBLAS_12"})
    members[name] = extension.read_bytes()
    bad = tmp_path / Path(WHEEL).name
    with zipfile.ZipFile(bad, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, data in members.items():
            zf.writestr(member, data)
    failures = check_wheel.check(bad, PLAT, "cu12")["failures"]
    assert any("needs the symbol versions" in f and "XX_CUBLAS_12" in f for f in failures), failures


def test_a_tag_newer_than_the_floor_fails(tmp_path):
    name = Path(WHEEL).name
    platform = name[:-4].split("-")[-1]
    renamed = tmp_path / name.replace(platform, "manylinux_2_34_x86_64")
    shutil.copy(WHEEL, renamed)
    failures = check_wheel.check(renamed, PLAT, "cu12")["failures"]
    assert any("do not include the intended floor" in f for f in failures), failures
    assert any("need a newer glibc" in f for f in failures), failures


def test_the_wrong_variant_fails():
    failures = check_wheel.check(Path(WHEEL), PLAT, "cu13")["failures"]
    assert any("expected 'pytinytensor-cu13'" in f for f in failures), failures
    assert any("lacks cupy-cuda13x" in f for f in failures), failures
