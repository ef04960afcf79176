"""Publishing a release: ci/release/publish.py (plan: skip what the index holds, fail on a conflict,
stage library wheels before the packages that require them; wait: until the index serves them),
the size-limited index of ci/dev/package_index.py, and ci/release/placeholders.py. Against a real
package index (pypiserver on 127.0.0.1, uploads with twine: the `release` dependency group, which
nox's `release` session installs; skipped where pypi-server is not on PATH)."""

from __future__ import annotations

import base64
import contextlib
import email.parser
import hashlib
import http.server
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from checkout import ROOT, from_checkout

package_index = from_checkout("ci.dev.package_index")
placeholders = from_checkout("ci.release.placeholders")
publish = from_checkout("ci.release.publish")
LIBS = from_checkout("buildsys.cuda_libs").LIBS

LIBS_VERSION = LIBS[12].version
VERSION = "2.0.0"
LIBS_X86 = f"pytinytensor_cu12_libs-{LIBS_VERSION}-py3-none-manylinux_2_28_x86_64.whl"
LIBS_ARM = f"pytinytensor_cu12_libs-{LIBS_VERSION}-py3-none-manylinux_2_28_aarch64.whl"
LIBS_X86_2_27 = f"pytinytensor_cu12_libs-{LIBS_VERSION}-py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
CP311_X86 = f"pytinytensor_cu12-{VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl"
CP312_X86 = f"pytinytensor_cu12-{VERSION}-cp312-cp312-manylinux_2_28_x86_64.whl"
CP311_ARM = f"pytinytensor_cu12-{VERSION}-cp311-cp311-manylinux_2_28_aarch64.whl"
SDISTS = [f"pytinytensor-{VERSION}.tar.gz", f"pytinytensor_cu12-{VERSION}.tar.gz"]
PACKAGES = sorted([*SDISTS, CP311_X86, CP312_X86, CP311_ARM])
LIBRARIES = sorted([LIBS_X86, LIBS_ARM])

needs_index = pytest.mark.skipif(
    shutil.which("pypi-server") is None,
    reason="pypi-server is not on PATH: the `release` session runs these (the release lock has pypiserver and twine)",
)


# ---------------------------------------------------------------------------- distributions to publish
def make_wheel(dest: Path, filename: str, payload: bytes = b"", stored: bool = False) -> Path:
    """A wheel twine takes: its METADATA (name and version from `filename`), WHEEL, RECORD, and
    `payload` as a data file (stored uncompressed with `stored`, so its size is the file's)."""
    project, version = filename.split("-")[:2]
    info = f"{project}-{version}.dist-info"
    files = {
        f"{project}/payload.bin": payload,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\n",
    }
    files[f"{info}/RECORD"] = b""
    path = dest / filename
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def make_sdist(dest: Path, filename: str, payload: bytes = b"") -> Path:
    stem = filename.removesuffix(".tar.gz")
    project, version = stem.rsplit("-", 1)
    path = dest / filename
    with tarfile.open(path, "w:gz") as tf:
        for name, data in {
            "PKG-INFO": f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n".encode(),
            "payload.bin": payload,
        }.items():
            entry = tarfile.TarInfo(f"{stem}/{name}")
            entry.size = len(data)
            tf.addfile(entry, io.BytesIO(data))
    return path


def release_files(dest: Path, payload: bytes = b"build 1") -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in LIBRARIES + PACKAGES:
        (make_sdist if name.endswith(".tar.gz") else make_wheel)(dest, name, payload + name.encode())
    return dest


def upload(index: str, *files: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "twine", "upload", "--non-interactive", "--disable-progress-bar"]
    command += ["--repository-url", index, "-u", "test", "-p", "test", *map(str, files)]
    return subprocess.run(command, capture_output=True, text=True)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def index(tmp_path):
    """An empty pypiserver on 127.0.0.1 that, like PyPI, never takes a file name twice."""
    if shutil.which("pypi-server") is None:
        pytest.skip(reason="pypi-server is not on PATH: the `release` session runs these")
    with package_index.package_index(tmp_path, overwrite=False) as idx:
        yield idx


@pytest.fixture
def github_output(tmp_path, monkeypatch):
    path = tmp_path / "github-output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(path))
    return path


def plan(index: str, dist: Path, out: Path) -> int:
    return publish.main(["plan", "--index-url", index.simple, "--dir", str(dist), "--out", str(out)])


# ---------------------------------------------------------------------------- names
@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (LIBS_X86, LIBS_X86_2_27, True),  # one version and architecture under other tags
        (LIBS_X86, LIBS_ARM, False),
        (LIBS_X86, LIBS_X86.replace(LIBS_VERSION, LIBS_VERSION + ".post1"), False),
        (CP311_X86, CP311_X86.replace("manylinux_2_28", "manylinux_2_27_x86_64.manylinux_2_28"), True),
        (CP311_X86, CP312_X86, False),  # another Python
        (CP311_X86, CP311_ARM, False),
        (CP311_X86, CP311_X86.replace("manylinux_2_28", "musllinux_1_2"), False),  # another libc
        (SDISTS[1], f"pytinytensor-cu12-{VERSION}.tar.gz", True),  # one sdist per version
        (SDISTS[1], f"pytinytensor_cu12-{VERSION}.zip", True),
        (SDISTS[1], SDISTS[0], False),  # another project
        (SDISTS[1], CP311_X86, False),
    ],
)
def test_which_files_are_two_builds_of_one_version(a, b, same):
    assert publish.parse(a).same_build(publish.parse(b)) is same
    assert publish.parse(b).same_build(publish.parse(a)) is same


def test_names_that_are_no_distribution():
    for name in ("SHA256SUMS", f"{LIBS_X86}.publish.attestation", "a-b.whl", "noversion.tar.gz"):
        assert publish.parse(name) is None
    assert publish.is_library(LIBS_X86) and not publish.is_library(CP311_X86)


# ---------------------------------------------------------------------------- plan, upload, plan again
@needs_index
def test_plan_stages_libraries_first_and_a_rerun_skips_everything(index, tmp_path, github_output, capsys):
    dist = release_files(tmp_path / "dist")
    assert plan(index, dist, tmp_path / "stages") == 0
    stage1, stage2 = tmp_path / "stages" / "1-libraries", tmp_path / "stages" / "2-packages"
    assert names(stage1) == LIBRARIES
    assert names(stage2) == PACKAGES
    assert all(os.path.samefile(p, dist / p.name) for p in [*stage1.iterdir(), *stage2.iterdir()])
    assert github_output.read_text() == "libraries=2\npackages=5\n"
    assert capsys.readouterr().out.count("not on the index") == 7

    for stage in (stage1, stage2):
        proc = upload(index, *sorted(stage.iterdir()))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        if stage is stage1:
            assert publish.main(["wait", "--index-url", index.simple, "--dir", str(stage), "--timeout", "30"]) == 0

    github_output.unlink()
    assert plan(index, dist, tmp_path / "again") == 0
    assert names(tmp_path / "again") == ["1-libraries", "2-packages"]
    assert names(tmp_path / "again" / "1-libraries") == names(tmp_path / "again" / "2-packages") == []
    assert github_output.read_text() == "libraries=0\npackages=0\n"
    out = capsys.readouterr().out
    assert out.count("same sha256") == 7 and "7 of 7 files already published" in out


@needs_index
def test_a_partly_published_release_uploads_only_the_rest(index, tmp_path, github_output):
    dist = release_files(tmp_path / "dist")
    assert upload(index, dist / LIBS_X86, dist / CP311_X86).returncode == 0
    assert plan(index, dist, tmp_path / "stages") == 0
    assert names(tmp_path / "stages" / "1-libraries") == [LIBS_ARM]
    assert names(tmp_path / "stages" / "2-packages") == sorted(set(PACKAGES) - {CP311_X86})
    assert github_output.read_text() == "libraries=1\npackages=4\n"


@needs_index
def test_other_bytes_under_an_uploaded_name_fail_naming_it_and_write_nothing(index, tmp_path, github_output, capsys):
    first = release_files(tmp_path / "first")
    assert upload(index, first / CP311_X86, first / LIBS_X86).returncode == 0
    rebuilt = release_files(tmp_path / "rebuilt", payload=b"build 2")  # every file: other bytes
    assert plan(index, rebuilt, tmp_path / "stages") == 1
    captured = capsys.readouterr()
    assert not (tmp_path / "stages").exists() and not github_output.exists()
    problems = dict(line.strip().split(": ", 1) for line in captured.err.splitlines()[1:])
    assert sorted(problems) == sorted([CP311_X86, LIBS_X86])
    assert "new version" in problems[CP311_X86] and "tinytensor/_version.py" in problems[CP311_X86]
    assert ".postN" in problems[LIBS_X86] and "buildsys/cuda_libs.py" in problems[LIBS_X86]
    assert f"::error::{CP311_X86} is on the index with sha256 " in captured.out


@needs_index
def test_another_build_of_the_library_version_under_other_tags_fails(index, tmp_path, capsys):
    published = make_wheel(tmp_path, LIBS_X86, b"published")
    assert upload(index, published).returncode == 0
    dist = tmp_path / "dist"
    dist.mkdir()
    make_wheel(dist, LIBS_X86_2_27, b"a rebuild that came out with an older tag too")
    assert plan(index, dist, tmp_path / "stages") == 1
    err = capsys.readouterr().err
    assert LIBS_X86_2_27 in err and "another build of this version" in err and ".postN" in err
    assert not (tmp_path / "stages").exists()


def test_plan_refuses_a_stage_folder_that_holds_anything(tmp_path):
    dist = release_files(tmp_path / "dist")
    (tmp_path / "stages" / "2-packages").mkdir(parents=True)
    (tmp_path / "stages" / "2-packages" / "old.whl").write_bytes(b"")
    args = ["plan", "--index-url", "http://127.0.0.1:9/simple/", "--dir", str(dist), "--out", str(tmp_path / "stages")]
    with pytest.raises(SystemExit, match="not an empty folder"):
        publish.main(args)


@needs_index
def test_plan_refuses_a_file_that_is_no_distribution(index, tmp_path, capsys):
    dist = release_files(tmp_path / "dist")
    (dist / "SHA256SUMS").write_text("")
    assert plan(index, dist, tmp_path / "stages") == 1
    assert "SHA256SUMS: not a distribution" in capsys.readouterr().err


# ---------------------------------------------------------------------------- simple pages pypiserver does not serve
@contextlib.contextmanager
def static_index(pages: dict[str, tuple[str, bytes]]):
    """A simple API on 127.0.0.1 answering each path of `pages` with (content type, body), else 404."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path not in pages:
                self.send_error(404)
                return
            content_type, body = pages[self.path]
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


def test_pep_691_json_and_an_html_page_without_hashes(tmp_path, capsys):
    dist = tmp_path / "dist"
    dist.mkdir()
    same = make_wheel(dist, CP311_X86, b"x")
    make_wheel(dist, LIBS_X86, b"y")
    listing = {"files": [{"filename": CP311_X86, "url": "../f", "hashes": {"sha256": publish.sha256(same).upper()}}]}
    pages = {
        "/simple/pytinytensor-cu12/": ("application/vnd.pypi.simple.v1+json", json.dumps(listing).encode()),
        "/simple/pytinytensor-cu12-libs/": ("text/html", f'<a href="../../files/{LIBS_X86}">{LIBS_X86}</a>'.encode()),
    }
    with static_index(pages) as url:
        assert publish.published(url, "pytinytensor_cu12") == {CP311_X86: publish.sha256(same)}
        assert publish.main(["plan", "--index-url", url, "--dir", str(dist), "--out", str(tmp_path / "s")]) == 1
    captured = capsys.readouterr()
    assert f"{CP311_X86}: on the index with the same sha256" in captured.out
    assert f"{LIBS_X86} is on the index, which gives no sha256 for it" in captured.out
    assert f"{LIBS_X86}: the index must list its files with their sha256" in captured.err


# ---------------------------------------------------------------------------- wait
@needs_index
def test_wait_returns_once_the_upload_appears(index, tmp_path):
    stage = tmp_path / "1-libraries"
    stage.mkdir()
    wheel = make_wheel(stage, LIBS_X86, b"libraries")
    (stage / f"{LIBS_X86}.publish.attestation").write_text("{}")  # what the uploader adds: not waited for
    command = [sys.executable, "-m", "ci.release.publish", "wait", "--index-url", index.simple, "--dir", str(stage)]
    waiting = subprocess.Popen(
        command + ["--timeout", "60", "--interval", "0.2"], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        time.sleep(1)
        assert waiting.poll() is None, "wait returned before the upload"
        assert upload(index, wheel).returncode == 0
        out, _ = waiting.communicate(timeout=60)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0
    assert f"waiting for {LIBS_X86}" in out and "all 1 files" in out


@needs_index
def test_wait_times_out_naming_what_never_appears(index, tmp_path, capsys):
    stage = tmp_path / "1-libraries"
    stage.mkdir()
    uploaded, never = make_wheel(stage, LIBS_X86, b"up"), make_wheel(stage, LIBS_ARM, b"never")
    assert upload(index, uploaded).returncode == 0
    started = time.monotonic()
    args = ["wait", "--index-url", index.simple, "--dir", str(stage), "--timeout", "1", "--interval", "0.2"]
    assert publish.main(args) == 1
    assert time.monotonic() - started < 15
    captured = capsys.readouterr()
    assert f"::error::{never.name}: not listed on the index after 1 s" in captured.out
    assert never.name in captured.err and LIBS_X86 not in captured.err


@needs_index
def test_wait_fails_at_once_on_other_bytes_and_not_at_all_on_an_empty_stage(index, tmp_path):
    assert upload(index, make_wheel(tmp_path, LIBS_X86, b"published")).returncode == 0
    stage = tmp_path / "1-libraries"
    stage.mkdir()
    args = ["wait", "--index-url", index.simple, "--dir", str(stage), "--timeout", "60"]
    assert publish.main(args) == 0  # empty
    make_wheel(stage, LIBS_X86, b"other bytes")
    started = time.monotonic()
    with pytest.raises(SystemExit, match=f"{LIBS_X86} is on the index with sha256"):
        publish.main(args)
    assert time.monotonic() - started < 15


# ---------------------------------------------------------------------------- the size-limited index
def test_a_package_index_that_never_answers_fails_naming_its_log(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "pypi-server"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'listening nowhere'\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(RuntimeError, match="did not answer") as raised:
        with package_index.package_index(tmp_path, wait_s=1):
            pass
    assert str(tmp_path / "index-pypiserver.log") in str(raised.value) and "listening nowhere" in str(raised.value)


@needs_index
def test_an_upload_over_the_project_limit_is_refused_until_the_limit_is_raised(tmp_path, github_output):
    mib = 1 << 20
    limits = {"pytinytensor-cu12-libs": 1 * mib}
    with package_index.package_index(tmp_path, overwrite=False, size_limits=limits) as index:
        dist = tmp_path / "dist"
        dist.mkdir()
        libs = make_wheel(dist, LIBS_X86, os.urandom(mib + 4096), stored=True)
        package = make_wheel(dist, CP311_X86, b"small")
        assert plan(index, dist, tmp_path / "run-1") == 0
        refused = upload(index, *(tmp_path / "run-1" / "1-libraries").iterdir())
        assert refused.returncode != 0
        assert "File too large. Limit for project 'pytinytensor-cu12-libs' is 1 MB." in refused.stdout + refused.stderr
        assert publish.published(index.simple, "pytinytensor-cu12-libs") == {}
        # the release stops here: stage 2 is never uploaded while stage 1 is not served

        index.set_limit("pytinytensor_cu12_libs", 4 * mib)  # the granted request, any spelling of the name
        assert plan(index, dist, tmp_path / "run-2") == 0
        for stage in ("1-libraries", "2-packages"):
            proc = upload(index, *(tmp_path / "run-2" / stage).iterdir())
            assert proc.returncode == 0, proc.stdout + proc.stderr
        assert publish.published(index.simple, "pytinytensor-cu12-libs") == {LIBS_X86: publish.sha256(libs)}
        assert publish.published(index.simple, "pytinytensor-cu12") == {CP311_X86: publish.sha256(package)}
        # downloads go through the proxy unchanged
        with urllib.request.urlopen(f"{index}/packages/{LIBS_X86}") as r:
            assert hashlib.sha256(r.read()).hexdigest() == publish.sha256(libs)
    assert "refused: File too large" in (tmp_path / "index-proxy.log").read_text()


# ---------------------------------------------------------------------------- placeholders
# placeholders.py reads the release's version from the checkout: absent where only the installed
# wheel and the tests are (cibuildwheel's test step)
needs_checkout = pytest.mark.skipif(
    not (ROOT / "tinytensor" / "_version.py").is_file(), reason="placeholders are made from a source checkout"
)


@needs_checkout
def test_placeholder_wheels_are_valid_and_hold_no_package(tmp_path, github_output):
    assert placeholders.main(["--out", str(tmp_path / "a")]) == 0
    assert placeholders.main(["--out", str(tmp_path / "b")]) == 0
    assert github_output.read_text() == "placeholders=3\nplaceholders=3\n"
    wheels = names(tmp_path / "a")
    assert wheels == [
        "pytinytensor-0.0.0a0-py3-none-any.whl",
        "pytinytensor_cu12-0.0.0a0-py3-none-any.whl",
        "pytinytensor_cu12_libs-0.0.0a0-py3-none-any.whl",
    ]
    release = placeholders.first_release()
    for wheel in wheels:
        path = tmp_path / "a" / wheel
        assert path.read_bytes() == (tmp_path / "b" / wheel).read_bytes(), "not reproducible"
        stem = wheel.split("-")[0]
        info = f"{stem}-0.0.0a0.dist-info"
        with zipfile.ZipFile(path) as zf:
            assert zf.testzip() is None
            members = {name: zf.read(name) for name in zf.namelist()}
        # nothing but the .dist-info: no importable package that could shadow tinytensor
        assert sorted(members) == [f"{info}/METADATA", f"{info}/RECORD", f"{info}/WHEEL"]
        record = [line.split(",") for line in members[f"{info}/RECORD"].decode().splitlines()]
        assert sorted(row[0] for row in record) == sorted(members)
        for name, digest, size in record:
            if name == f"{info}/RECORD":
                assert digest == size == ""
                continue
            expected = base64.urlsafe_b64encode(hashlib.sha256(members[name]).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={expected}" and int(size) == len(members[name])
        wheel_meta = email.parser.BytesParser().parsebytes(members[f"{info}/WHEEL"])
        assert wheel_meta["Wheel-Version"] == "1.0" and wheel_meta.get_all("Tag") == ["py3-none-any"]
        meta = email.parser.BytesParser().parsebytes(members[f"{info}/METADATA"])
        assert meta["Metadata-Version"] == "2.4" and meta["Version"] == "0.0.0a0"
        assert publish.normalized(meta["Name"]) == publish.normalized(stem)
        target = "pytinytensor-cu12" if meta["Name"] == "pytinytensor-cu12-libs" else meta["Name"]
        assert "only reserves the name" in meta["Summary"] and f"{target}>={release}" in meta["Summary"]
        body = meta.get_payload()
        assert "placeholder" in body and f'pip install "{target}>={release}"' in body


@needs_checkout
@pytest.mark.skipif(
    importlib.util.find_spec("twine") is None,
    reason="twine checks the placeholders in the `release` session, whose lock has it",
)
def test_placeholder_wheels_pass_twine_check(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    assert placeholders.main(["--out", str(tmp_path)]) == 0
    check = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, tmp_path.iterdir())])
    assert check.returncode == 0


@needs_index
@needs_checkout
def test_a_name_the_index_already_has_gets_no_placeholder(index, tmp_path, github_output, capsys):
    assert upload(index, make_sdist(tmp_path, "pytinytensor-1.0.4.tar.gz")).returncode == 0
    assert placeholders.main(["--out", str(tmp_path / "out"), "--index-url", index.simple]) == 0
    assert names(tmp_path / "out") == [
        "pytinytensor_cu12-0.0.0a0-py3-none-any.whl",
        "pytinytensor_cu12_libs-0.0.0a0-py3-none-any.whl",
    ]
    assert github_output.read_text() == "placeholders=2\n"
    assert "pytinytensor exists on the index: no placeholder" in capsys.readouterr().out
    proc = upload(index, *(tmp_path / "out").iterdir())
    assert proc.returncode == 0, proc.stdout + proc.stderr
