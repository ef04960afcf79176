"""Publishing in an order that never leaves an index broken, and again after a failure until all is
there (docs/maintainers/release.md, "Publishing"): `plan` skips what the index already holds with the same sha256, fails
on any other file under a taken name, and stages the library wheels before the packages that
require them; `wait` holds until the index serves a stage.

    python -m ci.release.publish plan --index-url SIMPLE_URL --dir dist --out stages
    python -m ci.release.publish wait --index-url SIMPLE_URL --dir stages/1-libraries [--timeout 600] [--interval 10]

Standard library only (it runs before and without the release tools).
"""

from __future__ import annotations

import argparse
import fnmatch
import html.parser
import json
import os
import re
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ci import commands
from ci.release.release_manifest import sha256  # one sha256 for every release script

LIBS_WHEEL = "pytinytensor_cu*_libs-*.whl"
STAGES = ("1-libraries", "2-packages")
SDIST_SUFFIXES = (".tar.gz", ".zip")
ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
LIBS_FIX = "bump the library distribution's version (a .postN suffix) in buildsys/cuda_libs.py and release again"
PACKAGE_FIX = "release a new version (tinytensor/_version.py, a new tag): the index never takes these names again"


class IndexUnavailable(Exception):
    """The index answered something other than a project page or a 404 (or nothing)."""


log = commands.logger("publish")


def error(message: str) -> None:
    print(f"::error::{message}", flush=True)


def normalized(project: str) -> str:
    """PEP 503: pytinytensor_cu12_libs -> pytinytensor-cu12-libs."""
    return re.sub(r"[-_.]+", "-", project).lower()


def is_distribution(name: str) -> bool:
    return name.endswith(".whl") or name.endswith(SDIST_SUFFIXES)


def is_library(name: str) -> bool:
    return fnmatch.fnmatchcase(name, LIBS_WHEEL)


@dataclass(frozen=True)
class Dist:
    """What a distribution's file name says: its project and version, and for a wheel its build
    for one Python and platform (the platform as (libc family, architecture) pairs)."""

    project: str
    version: str
    python: str = ""
    abi: str = ""
    platforms: frozenset[tuple[str, str]] = frozenset()
    wheel: bool = False

    def same_build(self, other: Dist) -> bool:
        """Two files of one version that serve the same installs: for wheels, the same Python and
        ABI and an architecture in common; for sdists, any two (an index takes one per version)."""
        if (self.project, self.version.lower(), self.wheel) != (other.project, other.version.lower(), other.wheel):
            return False
        if not self.wheel:
            return True
        return (self.python, self.abi) == (other.python, other.abi) and bool(self.platforms & other.platforms)


def platform(tag: str) -> tuple[str, str]:
    """manylinux_2_28_x86_64, manylinux2014_x86_64, linux_x86_64 -> ("manylinux", "x86_64");
    musllinux_1_2_aarch64 -> ("musllinux", "aarch64"); anything else stands for itself."""
    m = re.fullmatch(r"(many|musl)linux(?:_\d+_\d+|1|2010|2014)_(.+)", tag) or re.fullmatch(r"()linux_(.+)", tag)
    if m:
        return (m.group(1) or "many") + "linux", m.group(2)
    return tag, tag


def parse(name: str) -> Dist | None:
    """The file name's project and version (None for a name that is no distribution)."""
    if name.endswith(".whl"):
        parts = name[: -len(".whl")].split("-")
        if len(parts) not in (5, 6):
            return None
        project, version, python, abi, plat = parts[0], parts[1], *parts[-3:]
        platforms = frozenset(platform(t) for t in plat.split("."))
        return Dist(normalized(project), version, python, abi, platforms, wheel=True)
    for suffix in SDIST_SUFFIXES:
        if name.endswith(suffix):
            project, _, version = name[: -len(suffix)].rpartition("-")
            return Dist(normalized(project), version) if project and version else None
    return None


class Links(html.parser.HTMLParser):
    """The anchors' href of a PEP 503 page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)


def published(index_url: str, project: str, fresh: bool = False) -> dict[str, str | None]:
    """The files the index holds for `project`: file name -> sha256 (None where it gives none); an
    empty dict for a project the index does not have (404). `fresh` asks caches in front of the
    index for a current page. Raises IndexUnavailable for any other answer."""
    url = urllib.parse.urljoin(index_url.rstrip("/") + "/", normalized(project) + "/")
    headers = {"Accept": ACCEPT, **({"Cache-Control": "no-cache"} if fresh else {})}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as response:
            content_type = response.headers.get_content_type()
            body = response.read().decode(response.headers.get_content_charset() or "utf-8")
            final = response.geturl()
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return {}
        raise IndexUnavailable(f"{url}: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        raise IndexUnavailable(f"{url}: {getattr(err, 'reason', err)}") from None
    files: dict[str, str | None] = {}
    if content_type == "application/vnd.pypi.simple.v1+json":
        for entry in json.loads(body).get("files", []):
            digest = entry.get("hashes", {}).get("sha256")
            files[entry["filename"]] = digest.lower() if digest else None
        return files
    if content_type not in ("text/html", "application/vnd.pypi.simple.v1+html"):
        raise IndexUnavailable(f"{url} answered {content_type}, not a simple API page")
    parser = Links()
    parser.feed(body)
    for href in parser.links:
        parts = urllib.parse.urlsplit(urllib.parse.urljoin(final, href))
        name = urllib.parse.unquote(parts.path.rsplit("/", 1)[-1])
        fragment = urllib.parse.parse_qs(parts.fragment)
        files[name] = fragment["sha256"][0].lower() if "sha256" in fragment else None
    return files


def project_exists(index_url: str, project: str) -> bool:
    """Whether the index has `project` at all (its simple page answers), files or not."""
    url = urllib.parse.urljoin(index_url.rstrip("/") + "/", normalized(project) + "/")
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": ACCEPT}), timeout=60):
            return True
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return False
        raise IndexUnavailable(f"{url}: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        raise IndexUnavailable(f"{url}: {getattr(err, 'reason', err)}") from None


def link_or_copy(source: Path, dest: Path) -> None:
    try:
        os.link(source, dest)
    except OSError:  # another file system, or one without hard links
        shutil.copy2(source, dest)


def cmd_plan(args) -> int:
    """Each file of --dir against the index's simple API (PEP 503 or 691, with sha256s): the same name
    and sha256 is skipped; another sha256 (or none to compare) under that name fails, as does the same
    version of the project for the same Python and architecture under other platform tags; anything
    else goes into --out/1-libraries or --out/2-packages. On a failure it names each file and the fix
    and writes nothing; $GITHUB_OUTPUT gets libraries=N and packages=M."""
    out: Path = args.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SystemExit(
            f"publish: {out} exists and is not an empty folder: give a new one (a stale file would be uploaded)"
        )
    files = sorted(p for p in args.dir.iterdir() if p.is_file()) if args.dir.is_dir() else []
    if not files:
        raise SystemExit(f"publish: {args.dir} holds no files to publish")
    pages: dict[str, dict[str, str | None]] = {}
    stages: dict[str, list[Path]] = {stage: [] for stage in STAGES}
    problems: list[tuple[str, str]] = []  # (file, what is wrong and what to do)
    skipped = 0
    for path in files:
        name = path.name
        dist = parse(name)
        if dist is None:
            error(f"{name} is not a distribution (wheel or sdist) by its name")
            problems.append((name, "not a distribution: only wheels and sdists belong in the folder to publish"))
            continue
        fix = LIBS_FIX if is_library(name) else PACKAGE_FIX
        if dist.project not in pages:
            try:
                pages[dist.project] = published(args.index_url, dist.project)
            except IndexUnavailable as err:
                raise SystemExit(f"publish: the index could not be read, nothing planned: {err}") from None
        page = pages[dist.project]
        if name in page:
            ours, theirs = sha256(path), page[name]
            if theirs == ours:
                skipped += 1
                log(f"{name}: on the index with the same sha256 {ours}: skipped")
            elif theirs is None:
                error(f"{name} is on the index, which gives no sha256 for it: it cannot be compared with this build")
                problems.append((name, f"the index must list its files with their sha256 (PEP 503, PEP 691); or {fix}"))
            else:
                error(f"{name} is on the index with sha256 {theirs}; this build's is {ours}")
                problems.append((name, f"the index holds other bytes under this name: {fix}"))
            continue
        others = sorted(n for n in page if (o := parse(n)) is not None and o.same_build(dist))
        if others:
            error(f"{name}: the index holds {', '.join(others)}, another build of this version for the same installs")
            problems.append((name, f"another build of this version is on the index ({', '.join(others)}): {fix}"))
            continue
        stage = STAGES[0] if is_library(name) else STAGES[1]
        stages[stage].append(path)
        log(f"{name}: not on the index: to upload in stage {stage}")
    if problems:
        lines = "".join(f"\n  {name}: {what}" for name, what in problems)
        print(
            f"publish: {len(problems)} of {len(files)} files cannot be published; nothing planned:{lines}",
            file=sys.stderr,
        )
        return 1
    for stage, paths in stages.items():
        (out / stage).mkdir(parents=True, exist_ok=True)
        for path in paths:
            link_or_copy(path, out / stage / path.name)
    counts = {"libraries": len(stages[STAGES[0]]), "packages": len(stages[STAGES[1]])}
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a") as fh:
            fh.write("".join(f"{key}={value}\n" for key, value in counts.items()))
    log(
        f"{skipped} of {len(files)} files already published; to upload: {counts['libraries']} in "
        f"{out / STAGES[0]}, then {counts['packages']} in {out / STAGES[1]}"
    )
    return 0


def cmd_wait(args) -> int:
    """Until the index lists every distribution of --dir with its sha256 (what the uploader adds beside
    them, *.publish.attestation, is ignored); exit 1 on timeout, naming what is missing."""
    files = (
        sorted(p for p in args.dir.iterdir() if p.is_file() and is_distribution(p.name)) if args.dir.is_dir() else []
    )
    if not files:
        log(f"no distributions in {args.dir}: nothing to wait for")
        return 0
    dists = {p.name: parse(p.name) for p in files}
    unnamed = [name for name, dist in dists.items() if dist is None]
    if unnamed:
        raise SystemExit(f"publish: {', '.join(unnamed)}: not a distribution's file name, never listed as one")
    wanted = {p.name: sha256(p) for p in files}
    projects = sorted({d.project for d in dists.values() if d is not None})
    deadline = time.monotonic() + args.timeout
    while True:
        missing: dict[str, str] = {}  # file -> why it is not there yet
        pages: dict[str, dict[str, str | None]] = {}
        for project in projects:
            try:
                pages[project] = published(args.index_url, project, fresh=True)
            except IndexUnavailable as err:
                pages[project] = {}
                log(f"{err}: asking again")
        for name, ours in wanted.items():
            dist = dists[name]
            theirs = pages[dist.project].get(name, "") if dist else ""
            if theirs == ours:
                continue
            if theirs:  # another file under this name never turns into ours
                raise SystemExit(f"publish: {name} is on the index with sha256 {theirs}, not the uploaded {ours}")
            missing[name] = "listed without a sha256" if theirs is None else "not listed"
        if not missing:
            log(f"all {len(wanted)} files of {args.dir} are on the index with their sha256")
            return 0
        left = deadline - time.monotonic()
        if left <= 0:
            for name, why in missing.items():
                error(f"{name}: {why} on the index after {args.timeout:g} s")
            print(
                f"publish: the index does not serve {', '.join(missing)} after {args.timeout:g} s: nothing that "
                "requires them may be uploaded; see the upload's log, then run the publishing job again",
                file=sys.stderr,
            )
            return 1
        log(f"waiting for {', '.join(missing)}")
        time.sleep(min(args.interval, left))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="skip what the index holds, fail on a conflict, stage the rest")
    p.add_argument("--index-url", required=True, help="the index's simple API, e.g. <index>/simple/")
    p.add_argument("--dir", required=True, type=Path, help="the release's files")
    p.add_argument("--out", required=True, type=Path, help=f"a new folder for the stages {', '.join(STAGES)}")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser("wait", help="until the index serves every file of --dir with its sha256")
    p.add_argument("--index-url", required=True, help="the index's simple API, e.g. <index>/simple/")
    p.add_argument("--dir", required=True, type=Path, help="the uploaded stage, e.g. stages/1-libraries")
    p.add_argument("--timeout", type=float, default=600, help="seconds (default 600)")
    p.add_argument("--interval", type=float, default=10, help="seconds between looks (default 10)")
    p.set_defaults(func=cmd_wait)
    args = parser.parse_args(argv)
    if not args.index_url:
        raise SystemExit("publish: --index-url is empty: give the index's simple API URL")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
