"""ci/check_wheel.py rejects wheels that break the contract: the repaired wheel passes, and copies
of it with a driver library added or a too-new platform tag fail, each with its reason.

Runs in the release rehearsal, which sets TT_REPAIRED_WHEEL to the wheel it built.
"""

from __future__ import annotations

import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

WHEEL = os.environ.get("TT_REPAIRED_WHEEL")
if not WHEEL:
    pytest.skip(reason="needs a repaired CUDA wheel (TT_REPAIRED_WHEEL): release rehearsal", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "ci"))
import check_wheel  # noqa: E402

PLAT = "manylinux_2_28_x86_64"


def test_the_repaired_wheel_meets_the_contract():
    facts = check_wheel.check(Path(WHEEL), PLAT, "cu12")
    assert facts["failures"] == []
    assert PLAT in facts["platform_tags"]
    assert {b.split("-")[0] for b in facts["bundled_libraries"]} >= {"libcudart", "libcublas", "libcublasLt"}


def test_a_driver_library_inside_fails(tmp_path):
    bad = tmp_path / Path(WHEEL).name
    shutil.copy(WHEEL, bad)
    with zipfile.ZipFile(bad, "a") as zf:
        cudart = next(n for n in zf.namelist() if "/libcudart-" in n)
        # a real ELF file under the driver's name, as auditwheel would graft it without --exclude
        zf.writestr(f"{cudart.split('/')[0]}/libcuda.so.1", zf.read(cudart))
    failures = check_wheel.check(bad, PLAT, "cu12")["failures"]
    assert any("driver libraries are inside the wheel" in f and "libcuda.so.1" in f for f in failures), failures


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
