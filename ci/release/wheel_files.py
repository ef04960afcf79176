"""Unpack a wheel into a folder and pack a folder into a wheel, reproducibly (one copy for
ci/release/build_cuda_libs.py, ci/release/repair_wheel.py and the rehearsal's next release)."""

from __future__ import annotations

import base64
import hashlib
import os
import time
import zipfile
from pathlib import Path

# Fixed timestamps make a wheel reproducible: the same inputs give the same bytes, so a release can
# tell the published library distribution from a different build of the same version.
EPOCH = 315532800  # 1980-01-01, the earliest time a ZIP file can hold


def unpack(wheel: Path, tree: Path) -> None:
    """Extract `wheel` into `tree`, keeping each file's executable bit."""
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            target = Path(zf.extract(info, tree))
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                target.chmod(mode)


def _info(arcname: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(arcname, time.gmtime(EPOCH)[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (mode | 0o100000) << 16
    return info


def write_wheel(tree: Path, path: Path) -> None:
    """A wheel of `tree` (one *.dist-info inside): sorted entries, fixed timestamps, a RECORD of
    every file (any RECORD in `tree` is replaced), written last."""
    dist_info = next(tree.glob("*.dist-info"))
    record_name = f"{dist_info.name}/RECORD"
    files = sorted(p for p in tree.rglob("*") if p.is_file() and p.relative_to(tree).as_posix() != record_name)
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for file in files:
            arcname = file.relative_to(tree).as_posix()
            digest = hashlib.sha256()
            with (
                open(file, "rb") as src,
                zf.open(_info(arcname, 0o755 if os.access(file, os.X_OK) else 0o644), "w") as dst,
            ):
                for block in iter(lambda: src.read(1 << 20), b""):
                    digest.update(block)
                    dst.write(block)
            encoded = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
            record.append(f"{arcname},sha256={encoded},{file.stat().st_size}")
        record.append(f"{record_name},,")
        zf.writestr(_info(record_name, 0o644), "\n".join(record) + "\n")
