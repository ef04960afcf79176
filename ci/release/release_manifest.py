"""The release's files in one place: which files each building job of release.yml produces, the
sha256 manifest each such job records (a job output and a fixed-name artifact), and the check every
later job runs before it installs or publishes them (docs/maintainers/security.md).

    release_manifest.py expected --tag v2.0.0                  # every file a release publishes
    release_manifest.py record --tag v2.0.0 --job sdist FILE...
    release_manifest.py verify --tag v2.0.0 --dir dist [--job JOB]... [--manifests DIR] [--sums FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path

from buildsys.cuda_libs import LibsDist
from buildsys.release_matrix import ARCHS, CPU_DIST, CUDA_RELEASES, PYTHON_TAGS, SDISTS, platform, python_tag

# What a release publishes is buildsys/release_matrix.py's matrix; this turns it into files per
# building job. (Standard library only, Python >= 3.11: the GPU runner runs it with the oldest
# supported Python.) The sdist job builds the sdists (one per name, what pip falls back to where no
# wheel fits; a CUDA variant's records its variant) and the plain name's CPU wheel. The CUDA
# library wheel of each variant (buildsys/cuda_libs.py) is one Python-independent wheel per
# architecture (job cuda-libs-<arch>, ci/release/build_cuda_libs.py), which every per-Python wheel
# of the variant requires at exactly its version. Its version is its own (cuBLAS's), not the
# release's: a release that keeps it publishes the same file again, and the publishing jobs skip
# what the index already holds with the same sha256 (ci/release/publish.py).


def version_of(tag: str) -> str:
    if not re.fullmatch(r"v\d+(\.\d+)*([abc]|rc|\.post|\.dev)?\d*", tag):
        raise SystemExit(f"release tag {tag!r} is not v<version>")
    return tag[1:]


def normalized(dist: str) -> str:
    return re.sub(r"[-_.]+", "_", dist).lower()


def libs_wheel_pattern(libs: LibsDist, arch: str) -> re.Pattern[str]:
    """A CUDA library wheel's name for `arch`: exact but for its platform tags. auditwheel tags it
    with the floor and adds the oldest manylinux tag its libraries qualify for, with that tag's
    legacy alias, sorted (manylinux_2_27_x86_64.manylinux_2_28_x86_64); so the floor must be there
    and any other tag must be a manylinux tag of the same architecture (ci/release/check_wheel.py,
    run before `record`, refuses one newer than the floor)."""
    tag = f"manylinux(?:_\\d+_\\d+|1|2010|2014)_{re.escape(arch)}"
    floor = re.escape(platform(arch))
    stem = f"{normalized(libs.name)}-{re.escape(libs.version)}-py3-none-"
    return re.compile(f"{stem}(?:{tag}\\.)*{floor}(?:\\.{tag})*\\.whl")


def expected_by_job(version: str) -> dict[str, list[str | re.Pattern[str]]]:
    """The one table: building job -> the files it must produce, each an exact file name, or a
    pattern a file name must match in full (the CUDA library wheel's platform tags)."""
    jobs: dict[str, list[str | re.Pattern[str]]] = {
        "sdist": [f"{normalized(d)}-{version}.tar.gz" for d in SDISTS]
        + [f"{normalized(CPU_DIST)}-{version}-py3-none-any.whl"]
    }
    for arch in ARCHS:
        jobs[f"wheels-{arch}"] = [
            f"{normalized(r.dist)}-{version}-{t}-{t}-{platform(arch)}.whl" for r in CUDA_RELEASES for t in PYTHON_TAGS
        ]
    for arch in ARCHS:
        jobs[f"cuda-libs-{arch}"] = [libs_wheel_pattern(r.libs, arch) for r in CUDA_RELEASES]
    return jobs


def describe(entry: str | re.Pattern[str]) -> str:
    return entry if isinstance(entry, str) else f"/{entry.pattern}/"


def listed(entries: list[str | re.Pattern[str]]) -> str:
    return "[" + ", ".join(describe(e) for e in entries) + "]"


def matches(entry: str | re.Pattern[str], name: str) -> bool:
    return name == entry if isinstance(entry, str) else entry.fullmatch(name) is not None


def exactly(names: list[str], entries: list[str | re.Pattern[str]]) -> bool:
    """Whether `names` are exactly the job's expected files: one name per entry, each entry matching
    exactly one of the names and each name exactly one entry."""
    if len(names) != len(entries) or len(set(names)) != len(names):
        return False
    return all(sum(matches(e, n) for n in names) == 1 for e in entries) and all(
        sum(matches(e, n) for e in entries) == 1 for n in names
    )


def output_name(job: str) -> str:
    """The job output holding a job's manifest: a matrix job's outputs are combined across its
    entries, so each entry sets its own (manifest_wheels_x86_64, manifest_cuda_libs_aarch64, ...)."""
    return "manifest_" + job.replace("-", "_")


def env_name(job: str) -> str:
    return output_name(job).upper()


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fail(message: str) -> None:
    print(f"::error::{message}", flush=True)
    raise SystemExit(f"release_manifest: {message}")


def parse_manifest(text: str, origin: str, job: str) -> dict[str, str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        fail(f"{origin}: not JSON ({err})")
    if not isinstance(data, dict) or data.get("job") != job or not isinstance(data.get("files"), dict):
        fail(f"{origin}: not the manifest of job {job!r}")
    files = data["files"]
    for name, digest in files.items():
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            fail(f"{origin}: {name}: {digest!r} is not a sha256")
    return files


def cmd_expected(args) -> int:
    for job, names in expected_by_job(version_of(args.tag)).items():
        for entry in names:
            print(f"{job}\t{describe(entry)}")
    return 0


def cmd_record(args) -> int:
    expected = expected_by_job(version_of(args.tag))
    if args.job not in expected:
        fail(f"unknown job {args.job!r}; jobs: {sorted(expected)}")
    files = [Path(f) for f in args.files]
    names = sorted(f.name for f in files)
    if not exactly(names, expected[args.job]):
        fail(f"job {args.job} built {names}, expected exactly {listed(expected[args.job])}")
    manifest = {"job": args.job, "files": {f.name: sha256(f) for f in sorted(files, key=lambda f: f.name)}}
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    out = Path(args.out_dir) / f"manifest-{args.job}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    for name, digest in manifest["files"].items():
        print(f"{digest}  {name}")
    if os.environ.get("GITHUB_OUTPUT"):
        with open(os.environ["GITHUB_OUTPUT"], "a") as fh:
            fh.write(f"{output_name(args.job)}={text}\n")
    return 0


def cmd_verify(args) -> int:
    """--dir must hold exactly the expected files of the jobs (all unless --job is given), each with the
    sha256 in its job's output (environment variable MANIFEST_<JOB>); with --manifests, each
    manifest artifact must equal that output too. Job outputs are the anchor: only their job sets
    them, while any job holding the run's artifact token can replace an artifact."""
    expected = expected_by_job(version_of(args.tag))
    jobs = args.job or sorted(expected)
    for job in jobs:
        if job not in expected:
            fail(f"unknown job {job!r}; jobs: {sorted(expected)}")
    recorded: dict[str, str] = {}
    for job in jobs:
        text = os.environ.get(env_name(job), "")
        if not text:
            fail(f"{env_name(job)} is empty: job {job} recorded no manifest (needs.<job>.outputs.{output_name(job)})")
        files = parse_manifest(text, f"the output of job {job}", job)
        if not exactly(sorted(files), expected[job]):
            fail(f"job {job} recorded {sorted(files)}, expected exactly {listed(expected[job])}")
        if args.manifests:
            artifact = Path(args.manifests) / f"manifest-{job}.json"
            if not artifact.is_file():
                fail(f"{artifact} is missing (artifact manifest-{job})")
            if parse_manifest(artifact.read_text(), str(artifact), job) != files:
                fail(f"{artifact} differs from job {job}'s output: the artifact was changed after that job")
        for name, digest in files.items():
            if name in recorded:
                fail(f"{name} is recorded by two jobs")
            recorded[name] = digest
    present = sorted(p.name for p in Path(args.dir).iterdir()) if Path(args.dir).is_dir() else []
    missing = sorted(set(recorded) - set(present))
    extra = sorted(set(present) - set(recorded))
    if missing or extra:
        fail(f"{args.dir} does not hold exactly the expected files: missing {missing}, unexpected {extra}")
    for name, digest in sorted(recorded.items()):
        path = Path(args.dir) / name
        if not path.is_file() or path.is_symlink():
            fail(f"{path} is not a regular file")
        got = sha256(path)
        if got != digest:
            fail(f"{name}: sha256 {got}, but its building job recorded {digest}")
        print(f"{digest}  {name}  verified")
    if args.sums:
        Path(args.sums).write_text("".join(f"{d}  {n}\n" for n, d in sorted(recorded.items())))
    print(f"release_manifest: {len(recorded)} files of jobs {', '.join(jobs)} present and as built", flush=True)
    return 0


def cmd_wheel(args) -> int:
    tag = python_tag(args.python)
    wheels = expected_by_job(version_of(args.tag))[f"wheels-{args.arch}"]
    names = [n for n in wheels if isinstance(n, str) and n.startswith(f"{normalized(args.dist)}-") and f"-{tag}-" in n]
    if len(names) != 1:
        fail(f"no {args.dist} wheel for Python {args.python} on {args.arch} in the release")
    print(names[0])
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("expected", help="list every file the release publishes, by building job")
    p.add_argument("--tag", required=True)
    p.set_defaults(func=cmd_expected)
    p = sub.add_parser("record", help="a building job's manifest: output and artifact file")
    p.add_argument("--tag", required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--out-dir", default="manifests")
    p.add_argument("files", nargs="+")
    p.set_defaults(func=cmd_record)
    p = sub.add_parser("verify", help="refuse unless DIR holds exactly the recorded files, as built")
    p.add_argument("--tag", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--job", action="append", help="only these building jobs' files (default: all)")
    p.add_argument("--manifests", help="folder of the manifest-<job>.json artifacts, checked against the outputs")
    p.add_argument("--sums", help="write a SHA256SUMS of the verified files here")
    p.set_defaults(func=cmd_verify)
    p = sub.add_parser("wheel", help="the name of the release's wheel for one Python and architecture")
    p.add_argument("--tag", required=True)
    p.add_argument("--arch", required=True, choices=ARCHS)
    p.add_argument("--python", required=True, help="e.g. 3.11")
    p.add_argument("--dist", default=CUDA_RELEASES[0].dist, choices=[r.dist for r in CUDA_RELEASES])
    p.set_defaults(func=cmd_wheel)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
