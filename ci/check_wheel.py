"""The contract every repaired pytinytensor CUDA wheel must meet, checked file by file.

    python ci/check_wheel.py [--plat manylinux_2_28_x86_64] [--json out.json] WHEEL...

What the packaging tools already know, they check:
- `auditwheel show --json`: the wheel qualifies for the intended manylinux floor (overall and
  symbol-version tags no newer than it), needs no external library outside the floor's allow-list,
  and uses no unsupported ISA extension
- `check-wheel-contents`: no .pyc, duplicates or stray top-level files; the top-level entries are exactly
  tinytensor/ and auditwheel's pytinytensor_cuNN.libs/ (W009/W010, "several top-level entries" and "a
  top-level folder without Python modules", are that .libs folder, so they are ignored)
- `twine check --strict`: the metadata renders

The rules that are ours:
- the file name's platform tags include the intended floor and none names a newer glibc
- tinytensor/cuda_ops is inside, and the bundled cudart, cuBLAS and cuBLASLt are too, hash-renamed
- no driver library (libcuda, libnvidia-*) is inside
- every RPATH/RUNPATH entry of every ELF file is $ORIGIN-relative
- the metadata names the variant (pytinytensor-cuNN) and requires cupy-cudaNNx
- size budgets: the whole wheel and our own files

Needs pyelftools, auditwheel, check-wheel-contents and twine (pyproject's `wheel-test` group,
ci/locks/wheel-test.txt). Exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import email.parser
import io
import json
import platform
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from release_manifest import sha256

BUNDLED = ("libcudart", "libcublas", "libcublasLt")
DRIVER = re.compile(r"(^|/)lib(cuda|nvidia-[\w-]+)\.so")
# Budgets, in MB: the whole compressed wheel (dominated by bundled cuBLAS) and our own files.
WHEEL_BUDGET_MB = 450.0
OWN_BUDGET_MB = 6.0


def _arch(plat: str) -> str:
    """manylinux_2_28_x86_64 -> x86_64; manylinux_2_28_aarch64 -> aarch64."""
    return "x86_64" if plat.endswith("_x86_64") else plat.rsplit("_", 1)[-1]


_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def _glibc(tag: str) -> tuple[int, int]:
    """(major, minor) glibc of a manylinux tag: manylinux_2_28_x86_64 -> (2, 28), manylinux2014_* -> (2, 17)."""
    name = tag[: -len(_arch(tag)) - 1]
    if name in _LEGACY:
        return _LEGACY[name]
    major, minor = re.fullmatch(r"manylinux_(\d+)_(\d+)", name).groups()
    return int(major), int(minor)


def _tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True)


def auditwheel_show(wheel: Path, plat: str) -> tuple[dict, list[str]]:
    """(facts, failures) from `auditwheel show --json`: tags, external libraries, symbol versions."""
    proc = _tool("auditwheel", "show", "--json", str(wheel))
    if proc.returncode != 0:
        return {}, [f"auditwheel show failed: {(proc.stdout + proc.stderr).strip()}"]
    show = json.loads(proc.stdout)
    failures = []
    for key in ("overall_tag", "sym_tag"):
        if _glibc(show[key]) > _glibc(plat):
            failures.append(f"auditwheel show: {key} {show[key]} needs a newer glibc than the floor {plat}")
    if show["external_libs"]:
        failures.append(f"auditwheel show: libraries outside the wheel and the policy: {sorted(show['external_libs'])}")
    if show.get("unsupported_isa"):
        failures.append("auditwheel show: the wheel uses an unsupported ISA extension")
    facts = {
        "overall_tag": show["overall_tag"],
        "sym_tag": show["sym_tag"],
        "external_libs": sorted(show["external_libs"]),
        "versioned_symbols": {lib: sorted(v) for lib, v in show["versioned_symbols"].items()},
    }
    return facts, failures


def check_wheel_contents(wheel: Path, variant: str) -> list[str]:
    toplevel = f"tinytensor,pytinytensor_{variant}.libs"
    proc = _tool("check_wheel_contents", "--ignore", "W009,W010", "--toplevel", toplevel, str(wheel))
    if proc.returncode != 0:
        return [f"check-wheel-contents failed: {(proc.stdout + proc.stderr).strip()}"]
    return []


def _elf_facts(data: bytes) -> dict:
    elf = ELFFile(io.BytesIO(data))
    needed, paths = [], []
    for section in elf.iter_sections():
        if isinstance(section, DynamicSection):
            for tag in section.iter_tags():
                if tag.entry.d_tag == "DT_NEEDED":
                    needed.append(tag.needed)
                elif tag.entry.d_tag in ("DT_RPATH", "DT_RUNPATH"):
                    value = tag.rpath if tag.entry.d_tag == "DT_RPATH" else tag.runpath
                    paths += [p for p in value.split(":") if p]
    return {"needed": needed, "rpaths": paths}


def check(wheel: Path, plat: str, variant: str) -> dict:
    failures: list[str] = []
    facts: dict = {
        "wheel": wheel.name,
        "bytes": wheel.stat().st_size,
        "sha256": sha256(wheel),
    }
    facts["auditwheel"], found = auditwheel_show(wheel, plat)
    failures += found
    failures += check_wheel_contents(wheel, variant)

    tags = wheel.name[:-4].split("-")[-1].split(".")
    facts["platform_tags"] = tags
    # The intended floor must be among the tags and none may need a newer glibc; auditwheel also adds
    # older tags (manylinux2014...) when every ELF file qualifies, which is only more compatible.
    if plat not in tags:
        failures.append(f"platform tags {tags} do not include the intended floor {plat}")
    newer = [t for t in tags if _glibc(t) > _glibc(plat)]
    if newer:
        failures.append(f"platform tags {newer} need a newer glibc than the intended floor {plat}")

    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(f"{dist_info}/METADATA").decode())
        wheel_meta = zf.read(f"{dist_info}/WHEEL").decode()
        if "Tag: cp" not in wheel_meta or not any(plat in line for line in wheel_meta.splitlines()):
            failures.append(f"WHEEL metadata tags do not name {plat}: {wheel_meta.strip()!r}")
        major = variant.removeprefix("cu")
        if meta["Name"] != f"pytinytensor-{variant}":
            failures.append(f"metadata Name is {meta['Name']!r}, expected 'pytinytensor-{variant}'")
        requires = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]  # unconditional only
        facts["requires"] = requires
        if not any(r.startswith(f"cupy-cuda{major}x") for r in requires):
            failures.append(f"Requires-Dist lacks cupy-cuda{major}x: {requires}")

        libs_dir = next((n.split("/")[0] for n in names if n.split("/")[0].endswith(".libs")), None)
        bundled = sorted(
            n.split("/")[-1] for n in names if libs_dir and n.startswith(libs_dir + "/") and not n.endswith("/")
        )
        facts["bundled_libraries"] = bundled
        for stem in BUNDLED:
            pattern = re.compile(rf"^{stem}-[0-9a-f]{{8}}\.so")
            if not any(pattern.match(b) for b in bundled):
                failures.append(f"{stem} is not bundled hash-renamed ({stem}-<hash>.so...) in {libs_dir}: {bundled}")
        drivers = [n for n in names if DRIVER.search(n)]
        if drivers:
            failures.append(f"driver libraries are inside the wheel: {drivers}")
        if not any(re.match(r"tinytensor/cuda_ops\..*\.so$", n) for n in names):
            failures.append("tinytensor/cuda_ops extension is missing")

        own_bytes = 0
        elves = {}
        for info in zf.infolist():
            data = zf.read(info) if info.filename.endswith(".so") or ".so." in info.filename else b""
            if not (libs_dir and info.filename.startswith(libs_dir + "/")):
                own_bytes += info.compress_size
            if data[:4] != b"\x7fELF":
                continue
            try:
                elf = _elf_facts(data)
            except ELFError as exc:
                failures.append(f"{info.filename} is not a valid ELF file: {exc}")
                continue
            elves[info.filename] = {"needed": elf["needed"], "rpaths": elf["rpaths"]}
            for rpath in elf["rpaths"]:
                if not rpath.startswith("$ORIGIN"):
                    failures.append(f"{info.filename} has a non-relative RPATH entry {rpath!r}")
        facts["elf_files"] = elves
        facts["own_bytes"] = own_bytes

    twine = _tool("twine", "check", "--strict", str(wheel))
    if twine.returncode != 0:
        failures.append(f"twine check failed: {(twine.stdout + twine.stderr).strip()}")
    mb, own_mb = facts["bytes"] / 1e6, own_bytes / 1e6
    facts["size_mb"], facts["own_mb"] = round(mb, 1), round(own_mb, 2)
    facts["budget_mb"], facts["own_budget_mb"] = WHEEL_BUDGET_MB, OWN_BUDGET_MB
    if mb > WHEEL_BUDGET_MB:
        failures.append(f"wheel is {mb:.1f} MB, over its {WHEEL_BUDGET_MB} MB budget")
    if own_mb > OWN_BUDGET_MB:
        failures.append(f"our own files are {own_mb:.2f} MB compressed, over their {OWN_BUDGET_MB} MB budget")
    facts["failures"] = failures
    return facts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("--plat", default=f"manylinux_2_28_{platform.machine()}")
    parser.add_argument("--variant", default="cu12")
    parser.add_argument("--json", type=Path, help="write the facts of every wheel here")
    args = parser.parse_args(argv)
    results = [check(w, args.plat, args.variant) for w in args.wheels]
    for r in results:
        print(
            f"{r['wheel']}: {r['size_mb']} MB (budget {r['budget_mb']} MB), our own files {r['own_mb']} MB "
            f"(budget {r['own_budget_mb']} MB); bundled: {', '.join(r.get('bundled_libraries', []))}"
        )
        print(f"  sha256 {r['sha256']}")
        for failure in r["failures"]:
            print(f"  FAIL: {failure}")
        if not r["failures"]:
            print(
                f"  OK: {args.plat} floor, cuda_ops present, bundled libraries hash-renamed, no driver library, "
                "RPATHs relative, metadata; auditwheel show, check-wheel-contents and twine check pass"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if any(r["failures"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
