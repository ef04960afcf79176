"""ci/project_paths.py's link_or_copy: the release steps hand a 0.5 GB library wheel from folder to
folder, and each hand-over must cost no disk where a hard link can do it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from checkout import from_checkout

link_or_copy = from_checkout("ci.project_paths").link_or_copy


def test_same_file_system_links(tmp_path):
    source = tmp_path / "a.whl"
    source.write_bytes(b"wheel bytes")
    dest = link_or_copy(source, tmp_path / "sub-b.whl")
    assert dest.read_bytes() == b"wheel bytes"
    assert os.path.samefile(source, dest)


def test_replaces_an_existing_file(tmp_path):
    source, dest = tmp_path / "a.whl", tmp_path / "b.whl"
    source.write_bytes(b"new")
    dest.write_bytes(b"old and longer")
    link_or_copy(source, dest)
    assert dest.read_bytes() == b"new"


def test_other_file_system_copies(tmp_path):
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev or not os.access(shm, os.W_OK):
        pytest.skip(reason="no writable second file system (/dev/shm) beside the temporary folder")
    source = tmp_path / "a.whl"
    source.write_bytes(b"wheel bytes")
    dest = shm / f"tt-link-or-copy-{os.getpid()}.whl"
    try:
        link_or_copy(source, dest)
        assert dest.read_bytes() == b"wheel bytes"
        assert not os.path.samefile(source, dest)
    finally:
        dest.unlink(missing_ok=True)
