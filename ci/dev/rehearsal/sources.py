"""Step 1: the sdists (pytinytensor; pytinytensor-cu12, which records its variant) and
pytinytensor's CPU wheel (py3-none-any, built from its sdist), each built twice from fresh clones
of HEAD: every file must be byte-identical; then the hash locks must be current."""

from __future__ import annotations

import os
import re
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from buildsys.release_matrix import CPU_DIST, CUDA_RELEASES
from ci.project_paths import copy_worktree
from ci.release.release_manifest import normalized, sha256

from .common import LOCKS, ROOT, build_locked, sh, step

# file name stem -> TINYTENSOR_CUDA_VARIANT of each sdist
SDIST_VARIANTS = {normalized(CPU_DIST): "", **{normalized(r.dist): r.key for r in CUDA_RELEASES}}


@dataclass
class Sources:
    source: Path  # the first clone: what the later steps build from and test with
    sdists: dict[str, Path]  # file name stem -> sdist
    cpu_wheel: Path
    version: str
    locks: dict[str, str]  # lock name -> sha256


def clone_head(dest: Path, worktree: bool = False) -> Path:
    """A fresh clone of HEAD; with ``worktree``, a copy of the working tree's files (tracked and
    untracked-but-not-ignored), for rehearsing uncommitted work."""
    if not worktree:
        sh(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(dest)])
        return dest
    copy_worktree(dest)
    sh(["git", "-C", str(dest), "init", "-q"])  # so setup.py's epoch falls back the same way twice
    return dest


def build_sdists(source: Path, out: Path) -> dict[str, Path]:
    """Every sdist: the forgiving pytinytensor and each CUDA variant's, which records its variant."""
    built = {}
    for stem, variant in SDIST_VARIANTS.items():
        env = dict(os.environ, TINYTENSOR_CUDA_VARIANT=variant)
        sh(["uv", "build", "--sdist", *build_locked(source), "-o", str(out), str(source)], capture=True, env=env)
        built[stem] = next(out.glob(f"{stem}-[0-9]*.tar.gz"))
    return built


def sdist_epoch(sdist: Path) -> int:
    """The one timestamp the sdist's members carry (buildsys/sdist.py): the wheel built from it gets it too."""
    with tarfile.open(sdist) as tar:
        return next(m.mtime for m in tar.getmembers() if m.name.endswith("/setup.py"))


def build_cpu_wheel(source: Path, sdist: Path, out: Path) -> Path:
    """pytinytensor's pure wheel from its sdist, as release.yml's sdist job builds it."""
    env = dict(os.environ, TINYTENSOR_CUDA_VARIANT="", TINYTENSOR_BUILD_EXTENSION="0")
    env["SOURCE_DATE_EPOCH"] = str(sdist_epoch(sdist))
    sh(["uv", "build", "--wheel", *build_locked(source), "-o", str(out), str(sdist)], capture=True, env=env)
    return next(out.glob(f"{normalized(CPU_DIST)}-*-py3-none-any.whl"))


def build_twice(work: Path, out: Path, worktree: bool) -> Sources:
    with step("sdists and the CPU wheel, twice"):
        source = clone_head(work / "clone-a", worktree)
        sdists = build_sdists(source, out)
        cpu_wheel = build_cpu_wheel(source, sdists[normalized(CPU_DIST)], out)
        again_dir = work / "sources-b"
        again = build_sdists(clone_head(work / "clone-b", worktree), again_dir)
        cpu_again = build_cpu_wheel(source, again[normalized(CPU_DIST)], again_dir)
        pairs = [(p, again[stem]) for stem, p in sdists.items()] + [(cpu_wheel, cpu_again)]
        differ = [a.name for a, b in pairs if sha256(a) != sha256(b)]
        if differ:
            raise SystemExit(f"not reproducible: two builds of one commit differ for {', '.join(differ)}")
        shutil.rmtree(work / "clone-b", ignore_errors=True)
    cu12 = sdists[normalized(CUDA_RELEASES[0].dist)]
    version = re.sub(r"^[^-]+-|\.tar\.gz$", "", cu12.name)
    with step("hash locks current"):
        # ci/release/locks/update.sh --check recompiles every lock from pyproject.toml, keeping the current pins
        sh(["bash", str(source / LOCKS / "update.sh"), "--check"], env=dict(os.environ, UV=shutil.which("uv") or "uv"))
        locks = {
            name: sha256(source / LOCKS / f"{name}.txt")
            for name in ("build", "repair", "wheel-test", "release", "cuda-libs-cu12")
            if (source / LOCKS / f"{name}.txt").exists()
        }
    return Sources(source, sdists, cpu_wheel, version, locks)
