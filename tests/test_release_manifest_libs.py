"""The CUDA library wheel in the release's files: its entries in ci/release/release_manifest.py's table (a
pattern: auditwheel may add older manylinux tags to its name), record and verify with it, and
ci/release/libs_published.py against a real package index (pypiserver on 127.0.0.1, the `release`
dependency group; skipped where pypi-server is not on PATH)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Imported with the checkout on sys.path only while importing: left there, importlib.metadata would
# also read the checkout's *.egg-info (tests/release checks an installed wheel's metadata).
_saved_path = list(sys.path)
sys.path[:0] = [str(ROOT), str(ROOT / "ci" / "release")]
try:
    import libs_published
    import release_manifest

    from buildsys.cuda_libs import LIBS
finally:
    sys.path[:] = _saved_path

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


# ---------------------------------------------------------------------------- ci/release/libs_published.py
PUBLISHED = b"the libraries as published"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """pypiserver on 127.0.0.1 serving FLOOR_ONLY (PUBLISHED); yields its simple API URL."""
    server_exe = shutil.which("pypi-server")
    if server_exe is None:
        pytest.skip(
            reason="pypi-server is not on PATH: the `release` session runs these (ci/release/libs_published.py)"
        )
    packages = tmp_path_factory.mktemp("index-packages")
    (packages / FLOOR_ONLY).write_bytes(PUBLISHED)
    port = free_port()
    log_path = packages.parent / "pypiserver.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [server_exe, "run", "-i", "127.0.0.1", "-p", str(port), "-a", ".", "-P", ".", "--disable-fallback"]
            + [str(packages)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/simple/"
    try:
        for _ in range(150):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url, timeout=2).close()
                break
            if server.poll() is not None:
                pytest.fail(f"pypi-server exited: {log_path.read_text()}")
            time.sleep(0.2)
        else:
            pytest.fail(f"pypi-server did not answer at {url}: {log_path.read_text()}")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def dist_with(tmp_path: Path, files: dict[str, bytes]) -> Path:
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "pytinytensor_cu12-2.0.0.tar.gz").write_bytes(b"not a libs wheel: never looked up")
    for name, data in files.items():
        (dist / name).write_bytes(data)
    return dist


def test_the_same_file_already_published_is_not_uploaded_again(index, tmp_path, capsys):
    dist = dist_with(tmp_path, {FLOOR_ONLY: PUBLISHED})
    assert libs_published.main(["--index-url", index, "--dir", str(dist)]) == 0
    assert sorted(p.name for p in dist.iterdir()) == ["pytinytensor_cu12-2.0.0.tar.gz"]
    assert "same sha256" in capsys.readouterr().out


def test_other_bytes_under_a_published_name_fail_and_ask_for_a_new_version(index, tmp_path, capsys):
    dist = dist_with(tmp_path, {FLOOR_ONLY: b"other libraries", AARCH64: b"new"})
    assert libs_published.main(["--index-url", index, "--dir", str(dist)]) == 1
    err = capsys.readouterr().err
    assert FLOOR_ONLY in err and "bump" in err and ".postN" in err and "buildsys/cuda_libs.py" in err
    # nothing is removed when the check fails
    assert sorted(p.name for p in dist.iterdir()) == sorted([FLOOR_ONLY, AARCH64, "pytinytensor_cu12-2.0.0.tar.gz"])


def test_another_build_of_the_version_under_other_tags_fails(index, tmp_path, capsys):
    # FLOOR_ONLY is published: a rebuild of the same version for x86_64 that came out with an extra tag
    # is a second build of one version, not a new file to add beside it
    dist = dist_with(tmp_path, {WITH_2_27: b"a rebuild"})
    assert libs_published.main(["--index-url", index, "--dir", str(dist)]) == 1
    err = capsys.readouterr().err
    assert WITH_2_27 in err and "another build of this version" in err
    assert WITH_2_27 in {p.name for p in dist.iterdir()}


def test_a_file_the_index_lacks_is_kept(index, tmp_path, capsys):
    absent_project = f"pytinytensor_cu13_libs-{VERSION}-py3-none-manylinux_2_28_x86_64.whl"  # 404 on the index
    dist = dist_with(tmp_path, {AARCH64: b"new", absent_project: b"new too"})
    assert libs_published.main(["--index-url", index.rstrip("/"), "--dir", str(dist)]) == 0
    assert {AARCH64, absent_project} <= {p.name for p in dist.iterdir()}
    out = capsys.readouterr().out
    assert out.count("not on the index: kept") == 2


def test_the_command_line_runs_as_the_workflow_runs_it(index, tmp_path):
    dist = dist_with(tmp_path, {FLOOR_ONLY: PUBLISHED, AARCH64: b"new"})
    proc = subprocess.run(
        [sys.executable, str(ROOT / "ci" / "release" / "libs_published.py"), "--index-url", index, "--dir", str(dist)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in dist.iterdir()) == sorted([AARCH64, "pytinytensor_cu12-2.0.0.tar.gz"])
    assert len(proc.stdout.strip().splitlines()) == 3  # one line per wheel, and the summary
