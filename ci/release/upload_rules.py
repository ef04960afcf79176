"""PyPI's upload rules, checked on every file of a release before anything is uploaded: twine
check, check-wheel-contents and pypiserver accept files that PyPI refuses with a 400, and a refusal
midway leaves part of a release published. The rules (archive, metadata, license-file, filename,
platform, description, classifiers, size) are the checks in check_file.

    python -m ci.release.upload_rules --index pypi [--limits ci/release/index-limits.toml] [--json OUT.json] FILE...

Needs packaging, readme-renderer[md] and trove-classifiers (the `release` group). Exit status 1
when any file breaks a rule.
"""

from __future__ import annotations

import argparse
import email.message
import importlib
import importlib.metadata
import io
import json
import re
import sys
import tarfile
import tomllib
import warnings
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import readme_renderer.rst
import readme_renderer.txt
import trove_classifiers
from packaging.metadata import Metadata, parse_email
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[2]
LIMITS = Path(__file__).resolve().parent / "index-limits.toml"

# A zip that inflates to more than 50 times its size, once past 64 MiB, is refused as a zip bomb.
RATIO_MIN_BYTES = 64 * 2**20
RATIO_MAX = 50
# The Metadata-Versions PyPI takes: 2.0 was never a specification, so PyPI refuses it.
PYPI_METADATA_VERSIONS = {"1.0", "1.1", "1.2", "2.1", "2.2", "2.3", "2.4", "2.5"}
SUMMARY_MAX = 512
URL_LABEL_MAX = 32

# The wheel platform tags PyPI accepts. A tag must name an ABI with a specification behind it: on
# Linux that is manylinux (PEP 600 and its legacy aliases) or musllinux (PEP 656); a plain
# linux_<arch> promises nothing about the glibc or libraries a machine has (the two 32-bit ARM tags
# are PyPI's long-standing exception).
_PLATFORMS = {"any", "win32", "win_amd64", "win_arm64", "win_ia64", "linux_armv6l", "linux_armv7l"}
_PLATFORMS |= {f"manylinux{v}_{a}" for v in ("1", "2010") for a in ("x86_64", "i686")}
_PLATFORMS |= {f"manylinux2014_{a}" for a in ("x86_64", "i686", "aarch64", "armv7l", "ppc64", "ppc64le", "s390x")}
_MUSLLINUX_ARCHS = {"x86_64", "i686", "aarch64", "armv7l", "ppc64le", "s390x", "riscv64"}
_MANYLINUX_ARCHS = _MUSLLINUX_ARCHS | {"ppc64"}
_MACOS_ARCHS = {"ppc", "ppc64", "i386", "x86_64", "arm64", "intel", "fat", "fat3", "fat64", "universal", "universal2"}
_MACOS_MAJORS = {"11", "12", "13", "14", "15", "26"}  # macOS 11 on: <major>_0 only; 10: any minor
_IOS_ARCHS = {"arm64", "x86_64"}
_ANDROID_ARCHS = {"armeabi_v7a", "arm64_v8a", "x86", "x86_64"}


def platform_accepted(tag: str) -> bool:
    """Whether PyPI accepts a wheel with this platform tag."""
    if tag in _PLATFORMS:
        return True
    if m := re.fullmatch(r"(many|musl)linux_\d+_\d+_(.+)", tag):
        return m[2] in (_MANYLINUX_ARCHS if m[1] == "many" else _MUSLLINUX_ARCHS)
    if m := re.fullmatch(r"macosx_(\d+)_(\d+)_(.+)", tag):
        return m[3] in _MACOS_ARCHS and (m[1] == "10" or (m[1] in _MACOS_MAJORS and m[2] == "0"))
    if m := re.fullmatch(r"ios_\d+_\d+_(.+)_(iphoneos|iphonesimulator)", tag):
        return m[1] in _IOS_ARCHS
    if m := re.fullmatch(r"android_\d+_(.+)", tag):
        return m[1] in _ANDROID_ARCHS
    return False


def shown(path: Path) -> str:
    """The path as the repository's files name it (ci/release/...), else as given."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def human(size: int) -> str:
    return f"{size} bytes ({size / 1e6:.1f} MB, {size / 2**20:.1f} MiB)"


# ---------------------------------------------------------------------------- size limits
class LimitsError(Exception):
    """The limits file is unreadable or malformed, or has no table for the index."""


@dataclass(frozen=True)
class Limits:
    """Per-file upload limits, in bytes: index -> (default, {normalized project: limit})."""

    path: Path
    indexes: dict[str, tuple[int, dict[str, int]]]

    def require(self, index: str) -> None:
        if index not in self.indexes:
            raise LimitsError(
                f"index {index!r} is not in {shown(self.path)}, which has {', '.join(sorted(self.indexes))}"
            )

    def of(self, index: str, project: str) -> int:
        self.require(index)
        default, projects = self.indexes[index]
        return projects.get(canonicalize_name(project), default)


def _is_bytes(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def load_limits(path: Path = LIMITS) -> Limits:
    """The limits file: a table per index with `default` and an optional `projects` table, in bytes."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise LimitsError(f"cannot read the index limits {shown(path)}: {err}") from None
    indexes = {}
    for index, table in data.items():
        form = f"[{index}] needs default = <bytes> and may have a [{index}.projects] table of <project> = <bytes>"
        if not isinstance(table, dict) or set(table) - {"default", "projects"} or not _is_bytes(table.get("default")):
            raise LimitsError(f"{shown(path)}: {form}")
        projects: dict[str, int] = {}
        listed = table.get("projects", {})
        if not isinstance(listed, dict):
            raise LimitsError(f"{shown(path)}: {form}")
        for name, value in listed.items():
            if not _is_bytes(value):
                raise LimitsError(f"{shown(path)}: [{index}.projects] {name} = {value!r} is not a size in bytes")
            if canonicalize_name(name) in projects:
                raise LimitsError(f"{shown(path)}: [{index}.projects] names {canonicalize_name(name)} twice")
            projects[canonicalize_name(name)] = value
        indexes[index] = (table["default"], projects)
    if not indexes:
        raise LimitsError(f"{shown(path)} has no index")
    return Limits(path, indexes)


# ---------------------------------------------------------------------------- archives
@dataclass
class Archive:
    """What the rules need from a wheel or an sdist."""

    kind: str  # "wheel" or "sdist"
    members: set[str]
    metadata: bytes | None  # METADATA or PKG-INFO
    license_root: str  # where PEP 639 resolves a License-File path
    top: str = ""  # an sdist's top-level folder


def open_wheel(path: Path, fail) -> Archive | None:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        fail("archive", f"not a zip file: {err}")
        return None
    with zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        repeated = sorted(n for n, count in Counter(names).items() if count > 1)
        if repeated:
            fail("archive", f"members appear more than once: {repeated}")
        odd = sorted(i.filename for i in infos if i.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED))
        if odd:
            fail("archive", f"members compressed other than stored or deflated: {odd}")
        # Local headers that defer their sizes to a data descriptor, and member comments, let two zip
        # readers see different files: PyPI refuses both.
        streamed = sorted(i.filename for i in infos if i.flag_bits & 0x08)
        if streamed:
            fail("archive", f"members with a data descriptor (written to a stream): {streamed}")
        commented = sorted(i.filename for i in infos if i.comment)
        if commented:
            fail("archive", f"members with a comment: {commented}")
        inflated = sum(i.file_size for i in infos)
        if inflated > RATIO_MIN_BYTES and inflated / path.stat().st_size > RATIO_MAX:
            fail(
                "archive",
                f"inflates to {human(inflated)}, over {RATIO_MAX} times its size: PyPI takes it for a zip bomb",
            )
        # PyPI finds the .dist-info by the file name, as spelled, not by a search.
        parts = path.name.split("-", 2)
        if len(parts) < 3:
            fail("archive", "the file name is not <name>-<version>-<tags>.whl, so it names no .dist-info folder")
            return None
        dist_info = f"{parts[0]}-{parts[1]}.dist-info"
        missing = [f"{dist_info}/{f}" for f in ("WHEEL", "METADATA", "RECORD") if f"{dist_info}/{f}" not in names]
        if missing:
            fail("archive", f"the wheel lacks {', '.join(missing)} (the .dist-info its file name names)")
        metadata = zf.read(f"{dist_info}/METADATA") if f"{dist_info}/METADATA" in names else None
    return Archive("wheel", set(names), metadata, f"{dist_info}/licenses/")


def open_sdist(path: Path, fail) -> Archive | None:
    try:
        with tarfile.open(path, "r:gz") as tar:
            members = tar.getmembers()
            names = [m.name for m in members]
            tops = sorted({n.split("/", 1)[0] for n in names})
            if len(tops) != 1:
                fail("archive", f"an sdist holds exactly one top-level folder; this one has {tops}")
                return None
            top = tops[0]
            info = next((m for m in members if m.name == f"{top}/PKG-INFO"), None)
            if info is None or not info.isfile():
                fail("archive", f"PKG-INFO not found at {top}/PKG-INFO")
                metadata = None
            else:
                metadata = tar.extractfile(info).read()
    except (tarfile.TarError, OSError, EOFError) as err:
        fail("archive", f"not a gzip-compressed tar file: {err}")
        return None
    return Archive("sdist", set(names), metadata, f"{top}/", top)


# ---------------------------------------------------------------------------- metadata rules
def _flat(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [e for sub in error.exceptions for e in _flat(sub)]
    return [error]


def metadata_failures(text: bytes) -> list[str]:
    """packaging's validation messages, then PyPI's own additions (for the fields packaging passed)."""
    failures, flagged = [], set()
    try:
        Metadata.from_email(text, validate=True)
    except ExceptionGroup as group:
        for error in _flat(group):
            failures.append(str(error))
            flagged.add(getattr(error, "field", None))
    raw, _ = parse_email(text)
    version = raw.get("metadata_version")
    if "metadata-version" not in flagged and version not in PYPI_METADATA_VERSIONS:
        failures.append(
            f"Metadata-Version {version} is not one PyPI takes ({', '.join(sorted(PYPI_METADATA_VERSIONS))})"
        )
    if "version" not in flagged and raw.get("version"):
        try:
            if Version(raw["version"]).local:
                failures.append(f"Version {raw['version']} has a local part (+...), which PyPI refuses")
        except InvalidVersion:
            pass
    if len(raw.get("summary") or "") > SUMMARY_MAX:
        failures.append(f"Summary is {len(raw['summary'])} characters, PyPI takes at most {SUMMARY_MAX}")
    if raw.get("license") and raw.get("license_expression"):
        failures.append("both License and License-Expression are set: PyPI takes License-Expression alone (PEP 639)")
    if "requires-dist" not in flagged:
        for text_req in raw.get("requires_dist") or []:
            try:
                if Requirement(text_req).url:
                    failures.append(f"Requires-Dist {text_req!r} is a direct URL reference, which PyPI refuses")
            except InvalidRequirement:
                pass
    urls = {"Home-page": raw.get("home_page"), "Download-URL": raw.get("download_url")}
    urls.update({f"Project-URL {label}": url for label, url in (raw.get("project_urls") or {}).items()})
    for field, url in urls.items():
        if url is not None and urlsplit(url).scheme not in ("http", "https"):
            failures.append(f"{field}: {url!r} is not an http(s) URL")
    for label in raw.get("project_urls") or {}:
        if not label or len(label) > URL_LABEL_MAX:
            failures.append(f"Project-URL label {label!r} is empty or longer than {URL_LABEL_MAX} characters")
    return failures


def render_failure(description: str | None, content_type: str | None) -> str | None:
    """None when the description renders as PyPI renders it on upload, else why it does not."""
    if not description:
        return None
    kind = None
    if content_type:
        message = email.message.EmailMessage()
        message["content-type"] = content_type
        kind = message.get_content_type()
    if kind in (None, "text/x-rst"):
        stream = io.StringIO()
        if readme_renderer.rst.render(description, stream=stream) is not None:
            return None
        default = "" if content_type else " (no Description-Content-Type: PyPI's default)"
        said = "; ".join(line.strip() for line in stream.getvalue().splitlines() if line.strip())
        return f"the description does not render as reStructuredText{default}: {said}"
    if kind == "text/markdown":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # without the [md] extra it warns on import: said below instead
            markdown = importlib.import_module("readme_renderer.markdown")
        if not getattr(markdown, "variants", None):
            return "cannot check Markdown: readme-renderer's Markdown renderer is not installed (readme-renderer[md])"
        if markdown.render(description) is None:
            return "the description does not render as Markdown (readme_renderer.markdown returned nothing)"
        return None
    if readme_renderer.txt.render(description) is None:
        return f"the description does not render as {kind}"
    return None


def classifier_failures(classifiers: list[str]) -> list[str]:
    version = importlib.metadata.version("trove-classifiers")
    failures = []
    for classifier in classifiers:
        if classifier in trove_classifiers.deprecated_classifiers:
            instead = trove_classifiers.deprecated_classifiers[classifier]
            failures.append(
                f"Classifier {classifier!r} is deprecated"
                + (f"; use {' or '.join(map(repr, instead))}" if instead else "")
            )
        elif classifier not in trove_classifiers.classifiers:
            failures.append(f"Classifier {classifier!r} is not a trove classifier (trove-classifiers {version})")
    return failures


# ---------------------------------------------------------------------------- one file
def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def _project(name: str, raw: dict) -> str:
    """The project the file belongs to: its metadata's Name, else its file name's first part."""
    return canonicalize_name(raw.get("name") or re.split(r"-(?=\d)", name.removesuffix(".tar.gz"), maxsplit=1)[0])


def _license_files(archive: Archive, name: str, paths: list[str], fail) -> None:
    where = "its .dist-info/licenses/ folder" if archive.kind == "wheel" else "its top-level folder"
    for path in paths:
        at = archive.license_root + path
        if at in archive.members:
            continue
        base = path.rsplit("/", 1)[-1]
        there = sorted(
            m[len(archive.license_root) :]
            for m in archive.members
            if m.startswith(archive.license_root) and m.rsplit("/", 1)[-1] == base
        )
        hint = (
            f"; the {archive.kind} holds {archive.license_root}{there[0]}, so the field must say License-File: {there[0]}"
            if there
            else ""
        )
        fail(
            "license-file",
            f"License-File {path} does not exist in {name} at {at}: PEP 639 resolves a {archive.kind}'s "
            f"License-File paths under {where}{hint}",
        )


def _filename(archive: Archive, name: str, raw: dict, fail) -> None:
    meta_name, meta_version = raw.get("name"), _version(raw.get("version"))
    normalized = canonicalize_name(meta_name).replace("-", "_") if meta_name else None
    if archive.kind == "wheel":
        try:
            _, version, _, tags = parse_wheel_filename(name)
        except InvalidWheelFilename as err:
            fail("filename", str(err))
            return
        first = name.split("-", 1)[0]
        if normalized and first != normalized:
            fail(
                "filename",
                f"the file name starts with {first!r}, not the normalized project name {normalized!r} (Name: {meta_name})",
            )
        if meta_version and version != meta_version:
            fail("filename", f"the file name says version {version}, the metadata {raw['version']}")
        for platform in sorted({t.platform for t in tags}):
            if not platform_accepted(platform):
                fail(
                    "platform",
                    f"platform tag {platform} is one PyPI refuses: a Linux wheel needs a manylinux or musllinux tag "
                    "(auditwheel repair gives it one)",
                )
    elif normalized and meta_version:
        stem = f"{normalized}-{meta_version}"
        if name != f"{stem}.tar.gz":
            fail(
                "filename", f"PEP 625: the sdist of {meta_name} {meta_version} must be named {stem}.tar.gz, not {name}"
            )
        if archive.top != stem:
            fail("filename", f"the top-level folder is {archive.top}/; PEP 625 wants the file name's stem, {stem}/")


def check_file(path: Path, index: str, limits: Limits) -> dict:
    """Every rule on one file: {"file", "bytes", "project", "limit", "failures": [{"rule", "detail"}]}."""
    name = path.name
    failures: list[dict[str, str]] = []

    def fail(rule: str, detail: str) -> None:
        failures.append({"rule": rule, "detail": detail})

    limits.require(index)
    if not path.is_file():
        fail("archive", f"{path} is not a file")
        return {"file": name, "bytes": None, "project": None, "limit": None, "failures": failures}
    size = path.stat().st_size
    archive = None
    if name.endswith(".whl"):
        archive = open_wheel(path, fail)
    elif name.endswith(".tar.gz"):
        archive = open_sdist(path, fail)
    else:
        fail("archive", "neither a wheel (.whl) nor an sdist (.tar.gz)")
    raw: dict = {}
    if archive is not None and archive.metadata is not None:
        raw, _ = parse_email(archive.metadata)
        for detail in metadata_failures(archive.metadata):
            fail("metadata", detail)
        _license_files(archive, name, raw.get("license_files") or [], fail)
        _filename(archive, name, raw, fail)
        problem = render_failure(raw.get("description"), raw.get("description_content_type"))
        if problem:
            fail("description", problem)
        for detail in classifier_failures(raw.get("classifiers") or []):
            fail("classifiers", detail)
    project = _project(name, raw)
    limit = limits.of(index, project)
    if size > limit:
        fail(
            "size",
            f"{name} is {human(size)}, over the {human(limit)} per-file limit that project {project} holds on "
            f"index {index}: the index refuses it (File too large). The limit is raised after {index} grants the "
            f"project's request for a larger one (a project can ask once it exists), then changed in {shown(limits.path)}",
        )
    return {"file": name, "bytes": size, "project": project, "limit": limit, "failures": failures}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.add_argument("--index", required=True, help="the index the files go to: a table of --limits")
    parser.add_argument("--limits", type=Path, default=LIMITS, help=f"per-index size limits (default {shown(LIMITS)})")
    parser.add_argument("--json", type=Path, help="write every file's failures here")
    args = parser.parse_args(argv)
    try:
        limits = load_limits(args.limits)
        limits.require(args.index)
        results = [check_file(f, args.index, limits) for f in args.files]
    except LimitsError as err:
        raise SystemExit(f"upload_rules: {err}") from None
    for r in results:
        for failure in r["failures"]:
            print(f"{r['file']}: FAIL [{failure['rule']}] {failure['detail']}")
        if not r["failures"]:
            print(f"{r['file']}: OK for {args.index} ({r['bytes']} bytes, limit {r['limit']} for {r['project']})")
    if args.json:
        args.json.write_text(json.dumps({"index": args.index, "files": results}, indent=1) + "\n")
    return 1 if any(r["failures"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
