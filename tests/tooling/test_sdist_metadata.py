"""PEP 643 between an sdist and its wheels: the sdist marks Dynamic exactly the fields its wheels may
change (buildsys/sdist.py, buildsys/variant.py), and ci/release/sdist_metadata.py holds a wheel to
every other field of its sdist. The release's own sdists and wheels are held to it in the release
rehearsal's contract step."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from checkout import from_checkout

variant = from_checkout("buildsys.variant")
sdist_metadata = from_checkout("ci.release.sdist_metadata")

HEADERS = """Metadata-Version: 2.4
Name: pytinytensor-cu12
Version: 2.0.0
Summary: A small tensor library
Requires-Python: >=3.11
Requires-Dist: numpy>=2.0
Requires-Dist: cupy-cuda12x>=14
"""
BODY = "# pytinytensor\n\nThe README.\n"
# what setuptools writes: every field it read from setup.py marked Dynamic
SETUPTOOLS = HEADERS + "Dynamic: requires-dist\nDynamic: summary\nDynamic: requires-python\n\n" + BODY


def _files(tmp_path: Path, pkg_info: str, metadata: str) -> tuple[Path, Path]:
    """An sdist holding `pkg_info` and a wheel holding `metadata`, as the release names them."""
    sdist_file, wheel = tmp_path / "pytinytensor_cu12-2.0.0.tar.gz", tmp_path / "pytinytensor_cu12-2.0.0-cp311-x.whl"
    with tarfile.open(sdist_file, "w:gz") as tar:
        data = pkg_info.encode()
        info = tarfile.TarInfo("pytinytensor_cu12-2.0.0/PKG-INFO")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pytinytensor_cu12-2.0.0.dist-info/METADATA", metadata)
    return sdist_file, wheel


@pytest.fixture(scope="module")
def sdist():
    pytest.importorskip("setuptools", reason="buildsys/sdist.py is setuptools' sdist command")
    return from_checkout("buildsys.sdist")


def test_the_sdist_marks_dynamic_only_what_its_wheels_change(sdist):
    rewritten = sdist.with_dynamic(SETUPTOOLS, variant.Variant("cu12", 12, "1").sdist_dynamic())
    assert rewritten == HEADERS + "Dynamic: Requires-Dist\n\n" + BODY
    assert sdist.with_dynamic(SETUPTOOLS, variant.Variant("", None, "auto").sdist_dynamic()) == HEADERS + "\n" + BODY


def test_a_release_wheel_adding_the_library_distribution_matches_its_cu12_sdist(tmp_path):
    pkg_info = HEADERS + "Dynamic: Requires-Dist\n\n" + BODY
    release_wheel = HEADERS + "Requires-Dist: pytinytensor-cu12-libs==12.9.3.13\nDynamic: summary\n\n" + BODY
    sdist_file, wheel = _files(tmp_path, pkg_info, release_wheel)
    name, differences = sdist_metadata.check_against_sdist(wheel, [sdist_file])
    assert name == "pytinytensor_cu12-2.0.0.tar.gz" and differences == []


def test_a_field_the_sdist_states_must_be_the_wheels(tmp_path):
    static = HEADERS + "\n" + BODY
    cases = {
        "requires-dist": HEADERS + "Requires-Dist: pytinytensor-cu12-libs==12.9.3.13\n\n" + BODY,  # added
        "summary": HEADERS.replace("A small tensor library", "Another summary") + "\n" + BODY,
        "license": HEADERS + "License: MIT\n\n" + BODY,  # a field the sdist does not have
        "description": HEADERS + "\n" + BODY + "more\n",
    }
    for field, metadata in cases.items():
        sdist_file, wheel = _files(tmp_path, static, metadata)
        _, differences = sdist_metadata.check_against_sdist(wheel, [sdist_file])
        assert len(differences) == 1 and f"{field}:" in differences[0], (field, differences)


def test_a_wheel_without_its_sdist_among_the_files_is_not_paired(tmp_path):
    _, wheel = _files(tmp_path, SETUPTOOLS, HEADERS + "\n" + BODY)
    assert sdist_metadata.check_against_sdist(wheel, []) == (None, [])
