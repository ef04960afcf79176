"""The CUDA library wheel in the release's files: its entries in ci/release/release_manifest.py's table (a
pattern: auditwheel may add older manylinux tags to its name), record and verify with it. (Publishing them,
with what the index already holds: test_publish.py.)"""

from __future__ import annotations

import hashlib
import json

import pytest
from checkout import from_checkout

release_manifest = from_checkout("ci.release.release_manifest")
LIBS = from_checkout("buildsys.cuda_libs").LIBS

VERSION = LIBS[12].version
TAG = "v2.0.0"
FLOOR_ONLY = f"pytinytensor_cu12_libs-{VERSION}-py3-none-manylinux_2_28_x86_64.whl"
WITH_2_27 = f"pytinytensor_cu12_libs-{VERSION}-py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
AARCH64 = f"pytinytensor_cu12_libs-{VERSION}-py3-none-manylinux_2_28_aarch64.whl"


def libs_entries(arch: str = "x86_64"):
    return release_manifest.expected_by_job(TAG[1:])[f"cuda-libs-{arch}"]


# ---------------------------------------------------------------------------- the table
def test_every_arch_has_one_libs_job_with_one_file():
    jobs = release_manifest.expected_by_job(TAG[1:])
    assert [j for j in jobs if j.startswith("cuda-libs-")] == [f"cuda-libs-{a}" for a in release_manifest.ARCHS]
    assert all(len(jobs[f"cuda-libs-{a}"]) == 1 for a in release_manifest.ARCHS)
    assert release_manifest.PYTHON_TAGS == ("cp311", "cp312", "cp313", "cp314")


@pytest.mark.parametrize(
    "name",
    [
        FLOOR_ONLY,
        WITH_2_27,
        f"pytinytensor_cu12_libs-{VERSION}-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
    ],
)
def test_the_libs_wheel_with_or_without_older_tags_is_expected(name):
    assert release_manifest.exactly([name], libs_entries())


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (AARCH64, "the other architecture's wheel"),
        (f"pytinytensor_cu12_libs-{VERSION}-py3-none-manylinux_2_27_x86_64.whl", "no manylinux_2_28 floor"),
        (f"pytinytensor_cu12_libs-{VERSION}-py3-none-manylinux_2_28_x86_64.manylinux_2_28_aarch64.whl", "mixed"),
        (f"pytinytensor_cu12_libs-{VERSION}.post1-py3-none-manylinux_2_28_x86_64.whl", "another version"),
        (f"pytinytensor_cu12_libs-{VERSION}-cp312-cp312-manylinux_2_28_x86_64.whl", "a per-Python tag"),
        (f"pytinytensor_cu13_libs-{VERSION}-py3-none-manylinux_2_28_x86_64.whl", "another distribution"),
        (FLOOR_ONLY + ".bak", "not a wheel"),
    ],
)
def test_anything_else_is_not_the_libs_wheel(name, why):
    assert not release_manifest.exactly([name], libs_entries()), why


def test_the_job_holds_exactly_one_libs_wheel():
    assert not release_manifest.exactly([], libs_entries())
    assert not release_manifest.exactly([FLOOR_ONLY, WITH_2_27], libs_entries())


def test_expected_prints_the_pattern(capsys):
    assert release_manifest.main(["expected", "--tag", TAG]) == 0
    lines = dict(line.split("\t") for line in capsys.readouterr().out.splitlines() if line.startswith("cuda-libs-"))
    assert set(lines) == {f"cuda-libs-{a}" for a in release_manifest.ARCHS}
    x86 = lines["cuda-libs-x86_64"]
    assert "manylinux_2_28_x86_64" in x86 and VERSION.replace(".", r"\.") in x86


# ---------------------------------------------------------------------------- record and verify
def test_record_then_verify_the_libs_wheel(tmp_path, monkeypatch):
    built = tmp_path / "cuda-libs"
    built.mkdir()
    (built / WITH_2_27).write_bytes(b"the libraries")
    output = tmp_path / "github-output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    job = "cuda-libs-x86_64"
    args = ["record", "--tag", TAG, "--job", job, "--out-dir", str(tmp_path / "manifests"), str(built / WITH_2_27)]
    assert release_manifest.main(args) == 0
    key, _, text = output.read_text().strip().partition("=")
    assert key == "manifest_cuda_libs_x86_64"
    assert json.loads(text)["files"] == {WITH_2_27: hashlib.sha256(b"the libraries").hexdigest()}

    monkeypatch.setenv("MANIFEST_CUDA_LIBS_X86_64", text)
    verify = ["verify", "--tag", TAG, "--dir", str(built), "--job", job, "--manifests", str(tmp_path / "manifests")]
    assert release_manifest.main(verify) == 0
    # another file beside it, or other bytes under its name, are refused
    (built / AARCH64).write_bytes(b"x")
    with pytest.raises(SystemExit, match="unexpected"):
        release_manifest.main(verify)
    (built / AARCH64).unlink()
    (built / WITH_2_27).write_bytes(b"other libraries")
    with pytest.raises(SystemExit, match="sha256"):
        release_manifest.main(verify)


def test_record_refuses_a_libs_wheel_of_the_other_arch(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    (tmp_path / AARCH64).write_bytes(b"x")
    job = "cuda-libs-x86_64"
    args = ["record", "--tag", TAG, "--job", job, "--out-dir", str(tmp_path / "m"), str(tmp_path / AARCH64)]
    with pytest.raises(SystemExit, match="expected exactly"):
        release_manifest.main(args)


def test_verify_refuses_a_recorded_name_outside_the_table(tmp_path, monkeypatch):
    (tmp_path / AARCH64).write_bytes(b"x")
    manifest = {"job": "cuda-libs-x86_64", "files": {AARCH64: hashlib.sha256(b"x").hexdigest()}}
    monkeypatch.setenv("MANIFEST_CUDA_LIBS_X86_64", json.dumps(manifest))
    with pytest.raises(SystemExit, match="expected exactly"):
        release_manifest.main(["verify", "--tag", TAG, "--dir", str(tmp_path), "--job", "cuda-libs-x86_64"])
