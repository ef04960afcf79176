"""PEP 643 between an sdist and the wheels built from it: a field the sdist does not mark Dynamic has
the sdist's value in every one of its wheels (buildsys/variant.py's sdist_dynamic says which fields
are Dynamic). ci/release/check_wheel.py holds each wheel given with its sdist to it.
"""

from __future__ import annotations

import email.message
import email.parser
import tarfile
import zipfile
from pathlib import Path

from ci.release.release_manifest import normalized


def sdist_metadata(sdist: Path) -> email.message.Message:
    """The PKG-INFO at the root of an sdist."""
    with tarfile.open(sdist) as tar:
        top = sdist.name.removesuffix(".tar.gz")
        return email.parser.Parser().parsestr(tar.extractfile(f"{top}/PKG-INFO").read().decode())


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(zf.read(name).decode())


def metadata_differences(sdist: email.message.Message, wheel: email.message.Message) -> list[str]:
    """PEP 643: a field the sdist does not mark Dynamic has the sdist's value in every wheel built from
    it, and one the sdist lacks is absent from the wheel too. Dynamic itself is the sdist's to state."""
    dynamic = {field.lower() for field in sdist.get_all("Dynamic") or []}
    fields = ({k.lower() for k in sdist.keys()} | {k.lower() for k in wheel.keys()}) - dynamic - {"dynamic"}
    differences = []
    for field in sorted(fields):
        ours, theirs = sorted(sdist.get_all(field) or []), sorted(wheel.get_all(field) or [])
        if ours != theirs:
            differences.append(f"{field}: the sdist says {ours}, the wheel {theirs}")
    if "description" not in dynamic and sdist.get_payload() != wheel.get_payload():
        differences.append("description: the wheel's differs from the sdist's")
    return differences


def check_against_sdist(wheel: Path, sdists: list[Path]) -> tuple[str | None, list[str]]:
    """(the sdist of the wheel's project and version among `sdists`, or None; what differs from it)."""
    meta = wheel_metadata(wheel)
    stem = f"{normalized(meta['Name'])}-{meta['Version']}.tar.gz"
    sdist = next((s for s in sdists if s.name == stem), None)
    if sdist is None:
        return None, []
    found = metadata_differences(sdist_metadata(sdist), meta)
    return sdist.name, [f"its metadata is not its sdist's {sdist.name} (PEP 643): {d}" for d in found]
