"""Before an upload: which CUDA library wheels the package index already holds.

    python ci/release/libs_published.py --index-url SIMPLE_URL --dir dist

The pytinytensor-cuNN-libs version is its own (buildsys/cuda_libs.py), not the release's, so a
release that keeps the CUDA pin builds the same file again (the build is reproducible). For each
pytinytensor_cu*_libs-*.whl in --dir, its project's page on the index's simple API
(<SIMPLE_URL>/<project>/, PEP 503 HTML or PEP 691 JSON, each file with its sha256) says:
- the same file name with the same sha256: already published; the file is removed from --dir, so
  the upload skips it
- the same file name with another sha256: exit status 1. An index never takes a file name twice;
  the libraries changed without a new version: bump it (.postN) in buildsys/cuda_libs.py
- the same file name without a sha256: exit status 1 (nothing to compare)
- no such file (or no such project: 404): kept, to be uploaded
Any other answer from the index fails. Standard library only; the index comes from --index-url only.
"""

from __future__ import annotations

import argparse
import html.parser
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from release_manifest import sha256  # this folder: one sha256 for every release script

LIBS_WHEEL = "pytinytensor_cu*_libs-*.whl"
ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"


class Links(html.parser.HTMLParser):
    """The anchors of a PEP 503 page: file name (the URL's last path segment) -> its URL."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)


def project_of(wheel: str) -> str:
    """pytinytensor_cu12_libs-12.9.3.13-py3-none-...whl -> pytinytensor-cu12-libs (PEP 503 normalized)."""
    return re.sub(r"[-_.]+", "-", wheel.split("-", 1)[0]).lower()


def same_build(a: str, b: str) -> bool:
    """Two wheel names of one project version for one architecture (whatever their other tags)."""

    def arch(name: str) -> str:
        stem = name.removesuffix(".whl")
        return next((a for a in ("x86_64", "aarch64") if stem.endswith("_" + a)), stem.rsplit("_", 1)[-1])

    return a.split("-")[1] == b.split("-")[1] and arch(a) == arch(b)


def published(index_url: str, project: str) -> dict[str, str | None]:
    """The files the index holds for `project`: file name -> sha256 (None where it gives none).
    An empty dict for a project the index does not have (404)."""
    url = urllib.parse.urljoin(index_url.rstrip("/") + "/", project + "/")
    request = urllib.request.Request(url, headers={"Accept": ACCEPT})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            content_type = response.headers.get_content_type()
            body = response.read().decode(response.headers.get_content_charset() or "utf-8")
            final = response.geturl()
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return {}
        raise SystemExit(f"libs-published: {url}: HTTP {err.code} {err.reason}") from None
    except urllib.error.URLError as err:
        raise SystemExit(f"libs-published: {url}: {err.reason}") from None
    files: dict[str, str | None] = {}
    if content_type == "application/vnd.pypi.simple.v1+json":
        for entry in json.loads(body).get("files", []):
            digest = entry.get("hashes", {}).get("sha256")
            files[entry["filename"]] = digest.lower() if digest else None
        return files
    if content_type not in ("text/html", "application/vnd.pypi.simple.v1+html"):
        raise SystemExit(f"libs-published: {url} answered {content_type}, not a simple API page")
    parser = Links()
    parser.feed(body)
    for href in parser.links:
        absolute = urllib.parse.urljoin(final, href)
        parts = urllib.parse.urlsplit(absolute)
        name = urllib.parse.unquote(parts.path.rsplit("/", 1)[-1])
        fragment = urllib.parse.parse_qs(parts.fragment)
        files[name] = fragment["sha256"][0].lower() if "sha256" in fragment else None
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-url", required=True, help="the index's simple API, e.g. <index>/simple/")
    parser.add_argument("--dir", required=True, type=Path, help="the files to be uploaded")
    args = parser.parse_args(argv)
    if not args.index_url:
        raise SystemExit("libs-published: --index-url is empty")
    wheels = sorted(p for p in args.dir.glob(LIBS_WHEEL) if p.is_file())
    if not wheels:
        print(f"libs-published: no {LIBS_WHEEL} in {args.dir}")
        return 0
    pages: dict[str, dict[str, str | None]] = {}
    conflicts: list[str] = []
    unknown: list[str] = []
    already: list[Path] = []
    for wheel in wheels:
        project = project_of(wheel.name)
        if project not in pages:
            pages[project] = published(args.index_url, project)
        ours = sha256(wheel)
        siblings = [name for name in pages[project] if name != wheel.name and same_build(name, wheel.name)]
        if wheel.name not in pages[project] and siblings:
            # the same version for the same architecture under other tags: two builds of one version
            print(f"::error::{wheel.name}: the index holds {', '.join(siblings)} for this version and architecture",
                  flush=True)  # fmt: skip
            conflicts.append(wheel.name)
        elif wheel.name not in pages[project]:
            print(f"libs-published: {wheel.name}: not on the index: kept, to be uploaded")
        elif pages[project][wheel.name] == ours:
            already.append(wheel)
            print(f"libs-published: {wheel.name}: already on the index with the same sha256 {ours}: not uploaded again")
        elif pages[project][wheel.name] is None:
            print(f"::error::{wheel.name} is on the index, which gives no sha256 for it: cannot tell", flush=True)
            unknown.append(wheel.name)
        else:
            theirs = pages[project][wheel.name]
            print(f"::error::{wheel.name} is on the index with sha256 {theirs}, this build's is {ours}", flush=True)
            conflicts.append(wheel.name)
    if unknown:
        print(f"libs-published: {', '.join(unknown)}: compare the index's file with this build's", file=sys.stderr)
    if conflicts:
        print(
            f"libs-published: {', '.join(conflicts)}: the index already holds another build of this version (under "
            "this name or other tags), and an index never takes a file name twice. The CUDA libraries changed without a new version: bump the "
            "library distribution's version (a .postN suffix) in buildsys/cuda_libs.py",
            file=sys.stderr,
        )
    if conflicts or unknown:
        return 1
    for wheel in already:
        wheel.unlink()
    print(f"libs-published: {len(already)} of {len(wheels)} library wheels removed from {args.dir}, already published")
    return 0


if __name__ == "__main__":
    sys.exit(main())
