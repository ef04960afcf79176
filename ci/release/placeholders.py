"""Placeholder wheels that create the release's projects on an index before their first release.

    python -m ci.release.placeholders --out DIR [--index-url SIMPLE_URL]

An index raises a project's file-size limit only on request, and only for a project that exists;
pytinytensor-cu12-libs's wheel is far above the default limit. So each name the release publishes
(pytinytensor, pytinytensor-cu12, pytinytensor-cu12-libs: buildsys/release_matrix.py) is
created first with a placeholder (.github/workflows/placeholders.yml): a tiny `py3-none-any`
wheel, metadata 2.4, version 0.0.0a0 (below every real release, and a pre-release, which pip
takes only while nothing else exists), whose summary and description say it only reserves the
name and which release to install. It holds nothing but its .dist-info: no importable package, so
installing it can never shadow `tinytensor`. The wheel is reproducible (fixed timestamps, order).

With --index-url (the index's simple API), a name whose project page answers already exists there
and gets no placeholder. With $GITHUB_OUTPUT set, `placeholders=N` (the wheels written) goes
there. Needs the wheel project (`wheel pack`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

from buildsys.release_matrix import CUDA_RELEASES, SDISTS
from ci.release import publish  # the simple API lookups
from ci.release.wheel_files import pack

ROOT = Path(__file__).resolve().parents[2]
VERSION = "0.0.0a0"
TAG = "py3-none-any"
NAMES = tuple(dict.fromkeys((*SDISTS, *(r.dist for r in CUDA_RELEASES), *(r.libs.name for r in CUDA_RELEASES))))
LIBS_OF = {r.libs.name: r.dist for r in CUDA_RELEASES}  # library distribution -> the package installing it


def first_release() -> str:
    """The release these placeholders stand in front of: tinytensor/_version.py's version."""
    text = (ROOT / "tinytensor" / "_version.py").read_text()
    m = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", text, re.M)
    if not m:
        raise SystemExit("placeholders: no __version__ in tinytensor/_version.py")
    return m.group(1)


def metadata(name: str, release: str) -> str:
    """Core metadata 2.4; the description (plain text, which every index renders) is the body."""
    # the library distribution is installed by the package that requires it, never on its own
    target = LIBS_OF.get(name, name)
    what = f"{name} holds the CUDA libraries of {target}, which installs it" if target != name else "install a release"
    install = f'pip install "{target}>={release}"'
    summary = f"Placeholder that only reserves the name {name}: install {target}>={release}"
    body = (
        f"This {VERSION} release of {name} is a placeholder. It only reserves the name on this index\n"
        "before the project's first release, and holds no code and no importable package.\n\n"
        f"{what}:\n\n    {install}\n\n"
        "Installed, it adds nothing; every real release is above this version.\n"
    )
    headers = [
        ("Metadata-Version", "2.4"),
        ("Name", name),
        ("Version", VERSION),
        ("Summary", summary),
        ("Description-Content-Type", "text/plain"),
    ]
    return "".join(f"{key}: {value}\n" for key, value in headers) + "\n" + body


def build(name: str, out: Path, release: str) -> Path:
    """The placeholder wheel of `name` in `out`: METADATA, WHEEL and RECORD, nothing else."""
    with tempfile.TemporaryDirectory(prefix="placeholder-") as tmp:
        info = Path(tmp) / f"{re.sub(r'[-_.]+', '_', name).lower()}-{VERSION}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(metadata(name, release))
        (info / "WHEEL").write_text(
            f"Wheel-Version: 1.0\nGenerator: ci/release/placeholders.py\nRoot-Is-Purelib: true\nTag: {TAG}\n"
        )
        return pack(Path(tmp), out)  # RECORD, fixed timestamps: the same bytes on every build


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="where the placeholder wheels go")
    parser.add_argument("--index-url", help="the index's simple API: names it already has get no placeholder")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    release = first_release()
    written = []
    for name in NAMES:
        if args.index_url:
            try:
                exists = publish.project_exists(args.index_url, name)
            except publish.IndexUnavailable as err:
                raise SystemExit(f"placeholders: the index could not be read: {err}") from None
            if exists:
                print(f"placeholders: {name} exists on the index: no placeholder (its owners must be this project's)")
                continue
        written.append(build(name, args.out, release))
        print(f"placeholders: {written[-1].name}")
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a") as fh:
            fh.write(f"placeholders={len(written)}\n")
    print(f"placeholders: {len(written)} of {len(NAMES)} names need one; wheels in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
