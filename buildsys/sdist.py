"""A reproducible sdist: the same commit gives a byte-identical .tar.gz, wherever it is built.

setuptools' archive carries each file's mtime, the builder's uid/gid and names, the directory
order and a gzip header timestamp. This rewrites it with sorted entries, fixed owners and modes,
and one timestamp: $SOURCE_DATE_EPOCH, else the commit time of the checkout, else 1980-01-01.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import tarfile
from pathlib import Path

from setuptools.command.sdist import sdist

from . import settings

FALLBACK_EPOCH = 315532800  # 1980-01-01, the zip epoch


def source_epoch(root: Path) -> int:
    epoch = settings.source_date_epoch()
    if epoch is not None:
        return epoch
    try:
        out = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%ct"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return int(out.stdout.strip())
    except OSError:
        pass
    return FALLBACK_EPOCH


def _write(target: Path, text: str) -> None:
    """Replace a file of the release tree: it is a hard link into the source tree, never written through."""
    target.unlink(missing_ok=True)
    target.write_text(text, encoding="utf-8")


def normalize(archive: Path, epoch: int) -> None:
    """Rewrite a .tar.gz in place with deterministic metadata and order."""
    with tarfile.open(archive, "r:gz") as src:
        members = sorted(src.getmembers(), key=lambda m: m.name)
        payload = {m.name: src.extractfile(m).read() for m in members if m.isfile()}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as dst:
        for member in members:
            member.mtime = epoch
            member.uid = member.gid = 0
            member.uname = member.gname = ""
            member.pax_headers = {}
            if member.isdir():
                member.mode = 0o755
                dst.addfile(member)
            elif member.isfile():
                member.mode = 0o755 if member.mode & 0o111 else 0o644
                dst.addfile(member, io.BytesIO(payload[member.name]))
    tmp = archive.with_suffix(".tmp")
    with open(tmp, "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    tmp.replace(archive)


def with_dynamic(pkg_info: str, dynamic: list[str]) -> str:
    """PKG-INFO with exactly these fields marked Dynamic (PEP 643): setuptools marks every field it
    read from setup.py, though only the ones named here differ between the wheels built from the sdist."""
    headers, sep, body = pkg_info.partition("\n\n")
    lines = [line for line in headers.splitlines() if not line.startswith("Dynamic:")]
    return "\n".join(lines + [f"Dynamic: {field}" for field in dynamic]) + sep + body


class ReproducibleSdist(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        from .variant import RECORD, from_env

        variant = from_env()
        if variant.key:  # a -cuNN sdist builds that variant with no variable set (buildsys/variant.py)
            _write(Path(base_dir) / "buildsys" / RECORD.name, json.dumps({"variant": variant.key}) + "\n")
        for pkg_info in [Path(base_dir) / "PKG-INFO", *Path(base_dir).glob("*.egg-info/PKG-INFO")]:
            _write(pkg_info, with_dynamic(pkg_info.read_text(encoding="utf-8"), variant.sdist_dynamic()))

    def make_distribution(self):
        super().make_distribution()
        epoch = source_epoch(Path(__file__).resolve().parent.parent)
        for name in self.archive_files:
            if name.endswith(".tar.gz"):
                normalize(Path(name), epoch)
