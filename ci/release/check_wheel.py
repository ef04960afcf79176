"""The wheel contract: what every published wheel must be, checked file by file (docs/maintainers/wheel-contract.md):
the per-Python pytinytensor-cuNN wheels, the per-architecture pytinytensor-cuNN-libs wheel, and the
plain pytinytensor's pure wheel. What the packaging tools know, they check (`auditwheel show`,
check-wheel-contents, `twine check --strict`); the rules that are ours are the functions below.

    python -m ci.release.check_wheel [--plat manylinux_2_28_x86_64] [--json out.json] WHEEL... [SDIST...]

Each wheel given with the sdist of its project and version is also held to that sdist's metadata (PEP 643).

Needs the `wheel-test` dependency group (ci/release/locks/wheel-test.txt). Exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
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

from buildsys.cuda_libs import LIBS, version_node
from buildsys.release_matrix import CPU_DIST, requires_python
from buildsys.release_matrix import platform as release_matrix_platform
from ci.release.elf_versions import version_nodes
from ci.release.release_manifest import normalized, sha256
from ci.release.sdist_metadata import check_against_sdist

CUDA_LIBRARY = re.compile(r"(^|/)lib(cudart|cublas|cublasLt)[-.]")
DRIVER = re.compile(r"(^|/)lib(cuda|nvidia-[\w-]+)\.so")
# Budgets, in MB, compressed: a per-Python wheel holds our code and the extension only (the target:
# an upgrade that keeps the CUDA pin downloads <= 10 MB); the library wheel is cuBLAS.
WHEEL_BUDGET_MB = 10.0
LIBS_BUDGET_MB = 650.0


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


def auditwheel_show(wheel: Path, plat: str, provided: tuple[str, ...] = ()) -> tuple[dict, list[str]]:
    """(facts, failures) from `auditwheel show --json`: tags, external libraries (other than the
    `provided` ones, which a dependency supplies), symbol versions."""
    proc = _tool("auditwheel", "show", "--json", str(wheel))
    if proc.returncode != 0:
        return {}, [f"auditwheel show failed: {(proc.stdout + proc.stderr).strip()}"]
    show = json.loads(proc.stdout)
    failures = []
    external = sorted(set(show["external_libs"]) - set(provided))
    for key in ("overall_tag", "sym_tag"):
        tag = show[key]
        if key == "overall_tag" and tag.startswith("linux_") and provided and not external:
            continue  # only the dependency's libraries keep it from a manylinux tag: sym_tag decides
        if not tag.startswith("manylinux"):
            failures.append(f"auditwheel show: {key} is {tag}, not a manylinux tag")
        elif _glibc(tag) > _glibc(plat):
            failures.append(f"auditwheel show: {key} {tag} needs a newer glibc than the floor {plat}")
    if external:
        failures.append(f"auditwheel show: libraries outside the wheel and the policy: {external}")
    if show.get("unsupported_isa"):
        failures.append("auditwheel show: the wheel uses an unsupported ISA extension")
    facts = {
        "overall_tag": show["overall_tag"],
        "sym_tag": show["sym_tag"],
        "external_libs": sorted(show["external_libs"]),
        "versioned_symbols": {lib: sorted(v) for lib, v in show["versioned_symbols"].items()},
    }
    return facts, failures


def check_wheel_contents(wheel: Path, toplevel: str, ignore: tuple[str, ...] = ()) -> list[str]:
    proc = _tool(
        "check_wheel_contents", "--toplevel", toplevel, *(["--ignore", ",".join(ignore)] if ignore else []), str(wheel)
    )
    if proc.returncode != 0:
        return [f"check-wheel-contents failed: {(proc.stdout + proc.stderr).strip()}"]
    return []


def _elf_facts(data: bytes) -> dict:
    elf = ELFFile(io.BytesIO(data))
    needed, paths, soname = [], [], None
    for section in elf.iter_sections():
        if isinstance(section, DynamicSection):
            for tag in section.iter_tags():
                if tag.entry.d_tag == "DT_NEEDED":
                    needed.append(tag.needed)
                elif tag.entry.d_tag == "DT_SONAME":
                    soname = tag.soname
                elif tag.entry.d_tag in ("DT_RPATH", "DT_RUNPATH"):
                    value = tag.rpath if tag.entry.d_tag == "DT_RPATH" else tag.runpath
                    paths += [p for p in value.split(":") if p]
    return {"needed": needed, "rpaths": paths, "soname": soname, "versions": version_nodes(elf)}


def _common(wheel: Path, plat: str, failures: list[str]) -> dict:
    """Facts and failures every published wheel shares: tags, driver libraries, RPATHs, ELF facts."""
    facts: dict = {"wheel": wheel.name, "bytes": wheel.stat().st_size, "sha256": sha256(wheel)}
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
        facts["names"] = names
        drivers = [n for n in names if DRIVER.search(n)]
        if drivers:
            failures.append(f"driver libraries are inside the wheel: {drivers}")
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        facts["metadata"] = email.parser.Parser().parsestr(zf.read(f"{dist_info}/METADATA").decode())
        facts["wheel_meta"] = zf.read(f"{dist_info}/WHEEL").decode()
        if not any(plat in line for line in facts["wheel_meta"].splitlines() if line.startswith("Tag:")):
            failures.append(f"WHEEL metadata tags do not name {plat}: {facts['wheel_meta'].strip()!r}")
        elves = {}
        for info in zf.infolist():
            if not (info.filename.endswith(".so") or ".so." in info.filename):
                continue
            data = zf.read(info)
            if data[:4] != b"\x7fELF":
                continue
            try:
                elves[info.filename] = {**_elf_facts(data), "sha256": hashlib.sha256(data).hexdigest()}
            except ELFError as exc:
                failures.append(f"{info.filename} is not a valid ELF file: {exc}")
                continue
            for rpath in elves[info.filename]["rpaths"]:
                if not rpath.startswith("$ORIGIN"):
                    failures.append(f"{info.filename} has a non-relative RPATH entry {rpath!r}")
        facts["elf_files"] = elves
    twine = _tool("twine", "check", "--strict", str(wheel))
    if twine.returncode != 0:
        failures.append(f"twine check failed: {(twine.stdout + twine.stderr).strip()}")
    return facts


def _budget(facts: dict, budget_mb: float, failures: list[str]) -> None:
    facts["size_mb"], facts["budget_mb"] = round(facts["bytes"] / 1e6, 2), budget_mb
    if facts["bytes"] / 1e6 > budget_mb:
        failures.append(f"{facts['wheel']} is {facts['bytes'] / 1e6:.1f} MB, over its {budget_mb} MB budget")


def _finish(facts: dict, failures: list[str]) -> dict:
    for key in ("names", "metadata", "wheel_meta"):
        facts.pop(key, None)
    facts["failures"] = failures
    return facts


def check(wheel: Path, plat: str, variant: str) -> dict:
    """The contract of a per-Python pytinytensor-cuNN wheel."""
    failures: list[str] = []
    libs = LIBS.get(int(variant.removeprefix("cu")) if variant.removeprefix("cu").isdigit() else -1)
    provided = tuple(ours for _, _, ours in libs.libraries()) if libs else ()
    facts = _common(wheel, plat, failures)
    facts["auditwheel"], found = auditwheel_show(wheel, plat, provided)
    failures += found
    failures += check_wheel_contents(wheel, "tinytensor")
    names, meta = facts["names"], facts["metadata"]
    if "Tag: cp" not in facts["wheel_meta"]:
        failures.append(f"WHEEL metadata has no CPython tag: {facts['wheel_meta'].strip()!r}")
    major = variant.removeprefix("cu")
    if meta["Name"] != f"pytinytensor-{variant}":
        failures.append(f"metadata Name is {meta['Name']!r}, expected 'pytinytensor-{variant}'")
    requires = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]  # unconditional only
    facts["requires"] = requires
    if not any(r.startswith(f"cupy-cuda{major}x") for r in requires):
        failures.append(f"Requires-Dist lacks cupy-cuda{major}x: {requires}")
    inside = sorted(n for n in names if CUDA_LIBRARY.search(n))
    if inside:
        failures.append(f"CUDA libraries are inside the per-Python wheel (they belong to the library wheel): {inside}")
    extension = next((n for n in names if re.match(r"tinytensor/cuda_ops\..*\.so$", n)), None)
    if extension is None:
        failures.append("tinytensor/cuda_ops extension is missing")
    elif libs is None:
        failures.append(f"no CUDA library distribution is defined for {variant} (buildsys/cuda_libs.py)")
    else:
        if libs.requirement not in requires:
            failures.append(f"Requires-Dist lacks {libs.requirement} exactly: {requires}")
        elf = facts["elf_files"][extension]
        want = {ours for _, upstream, ours in libs.libraries() if not upstream.startswith("libcublasLt")}
        if not want <= set(elf["needed"]):
            failures.append(f"{extension} does not need the library wheel's {sorted(want)}: {elf['needed']}")
        upstream = [n for n in elf["needed"] if CUDA_LIBRARY.search(n) and n not in provided]
        if upstream:
            failures.append(f"{extension} needs CUDA libraries by their upstream names: {upstream}")
        # the symbol versions it needs from them are the library wheel's own, which no other CUDA defines
        versions = {lib: elf["versions"]["needs"].get(lib) for _, _, lib in libs.libraries() if lib in want}
        expected = {ours: [version_node(up)] for _, up, ours in libs.libraries() if ours in want}
        if versions != expected:
            failures.append(f"{extension} needs the symbol versions {versions}, expected {expected}")
        facts["extension_needs"] = elf["needed"]
        facts["extension_versions"] = versions
    with zipfile.ZipFile(wheel) as zf:
        facts["own_bytes"] = sum(i.compress_size for i in zf.infolist())
    _budget(facts, WHEEL_BUDGET_MB, failures)
    return _finish(facts, failures)


def check_libs(wheel: Path, plat: str, major: int = 12) -> dict:
    """The contract of a pytinytensor-cuNN-libs wheel."""
    failures: list[str] = []
    libs = LIBS[major]
    facts = _common(wheel, plat, failures)
    facts["auditwheel"], found = auditwheel_show(wheel, plat)
    failures += found
    # W010 (a top-level folder without Python modules) is the library wheel's design: data only
    failures += check_wheel_contents(wheel, libs.module, ignore=("W010",))
    names, meta = facts["names"], facts["metadata"]
    if not wheel.name.startswith(f"{libs.name.replace('-', '_')}-{libs.version}-py3-none-"):
        failures.append(f"{wheel.name} is not {libs.name} {libs.version} for any Python (py3-none)")
    if meta["Name"] != libs.name or meta["Version"] != libs.version:
        failures.append(f"metadata names {meta['Name']} {meta['Version']}, expected {libs.name} {libs.version}")
    if not meta.get_all("License-File"):
        failures.append("NVIDIA's license files are not in the metadata (License-File)")
    requires = meta.get_all("Requires-Dist") or []
    if sorted(requires) != sorted(libs.requires):
        failures.append(f"Requires-Dist is {requires}, expected exactly {list(libs.requires)} (buildsys/cuda_libs.py)")
    lib_dir = f"{libs.module}/lib/"
    expected = [ours for _, _, ours in libs.libraries()]
    present = sorted(n[len(lib_dir) :] for n in names if n.startswith(lib_dir) and not n.endswith("/"))
    if present != sorted(expected):
        failures.append(f"{lib_dir} holds {present}, expected exactly {sorted(expected)}")
    grafted = [n for n in names if ".libs/" in n]
    if grafted:
        failures.append(f"auditwheel grafted libraries into the library wheel: {grafted}")
    upstream_names = {upstream for _, upstream, _ in libs.libraries()}
    python = [n for n in names if n.startswith(libs.module + "/") and n.endswith(".py")]
    if python:
        failures.append(f"the library wheel holds code ({python}): it is data only, tinytensor loads it")
    for _, upstream, ours in libs.libraries():
        elf = facts["elf_files"].get(lib_dir + ours)
        if elf is None:
            continue
        if elf["soname"] != ours:
            failures.append(f"{ours} has the soname {elf['soname']!r}, expected its own name")
        stale = sorted(set(elf["needed"]) & upstream_names)
        if stale:
            failures.append(f"{ours} needs {stale} by the upstream name, which another CUDA could provide")
        if elf["versions"]["defines"] != [version_node(upstream)]:
            failures.append(f"{ours} defines the symbol versions {elf['versions']['defines']}, expected only "
                            f"{version_node(upstream)} (a global {upstream} would answer NVIDIA's names)")  # fmt: skip
        stale = sorted({v for vs in elf["versions"]["needs"].values() for v in vs} & upstream_names)
        if stale:
            failures.append(f"{ours} needs the symbol versions {stale}, which another CUDA defines")
    with zipfile.ZipFile(wheel) as zf:
        manifest = json.loads(zf.read(f"{libs.module}/manifest.json"))
    facts["manifest"] = {k: manifest.get(k) for k in ("version", "cublas_archs", "nvrtc")}
    if manifest.get("nvrtc") != libs.nvrtc_manifest:
        failures.append(f"manifest.json names NVRTC as {manifest.get('nvrtc')}, expected {libs.nvrtc_manifest}")
    if manifest["version"] != meta["Version"]:
        failures.append(f"manifest.json says {manifest['version']}, the metadata {meta['Version']}")
    for entry in manifest["libraries"]:  # hashed as _common read them
        if facts["elf_files"].get(lib_dir + entry["file"], {}).get("sha256") != entry["sha256"]:
            failures.append(f"{entry['file']} does not match the sha256 in manifest.json")
    _budget(facts, LIBS_BUDGET_MB, failures)
    return _finish(facts, failures)


def check_cpu(wheel: Path) -> dict:
    """The contract of the plain pytinytensor wheel: pure Python (py3-none-any), no extension and
    nothing compiled, CuPy only behind the cuda12/cuda13 extras, built CPU-only on purpose."""
    failures: list[str] = []
    facts: dict = {"wheel": wheel.name, "bytes": wheel.stat().st_size, "sha256": sha256(wheel)}
    facts["platform_tags"] = wheel.name[:-4].split("-")[-1].split(".")
    if not wheel.name.startswith(f"{normalized(CPU_DIST)}-") or not wheel.name.endswith("-py3-none-any.whl"):
        failures.append(f"{wheel.name} is not a py3-none-any wheel of {CPU_DIST}")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(f"{dist_info}/METADATA").decode())
        wheel_meta = zf.read(f"{dist_info}/WHEEL").decode()
        compiled = [i.filename for i in zf.infolist() if zf.read(i)[:4] == b"\x7fELF" or i.filename.endswith(".so")]
        config = (
            json.loads(zf.read("tinytensor/_build_config.json")) if "tinytensor/_build_config.json" in names else {}
        )
    if "Root-Is-Purelib: true" not in wheel_meta or "Tag: py3-none-any" not in wheel_meta:
        failures.append(f"WHEEL metadata is not a pure py3-none-any wheel: {wheel_meta.strip()!r}")
    if compiled:
        failures.append(f"compiled files are inside the pure wheel: {compiled}")
    if config.get("extension") != "skipped" or config.get("mode") != "0":
        failures.append(f"tinytensor/_build_config.json does not record a CPU-only build on purpose: {config}")
    if meta["Name"] != CPU_DIST:
        failures.append(f"metadata Name is {meta['Name']!r}, expected {CPU_DIST!r}")
    if meta["Requires-Python"] != requires_python():
        failures.append(f"Requires-Python is {meta['Requires-Python']!r}, expected {requires_python()!r}")
    requires = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]  # unconditional only
    facts["requires"] = requires
    cuda = [r for r in requires if r.startswith(("cupy", "nvidia-", "pytinytensor"))]
    if cuda:
        failures.append(f"the CPU wheel requires CUDA packages unconditionally: {cuda}")
    failures += check_wheel_contents(wheel, "tinytensor")
    twine = _tool("twine", "check", "--strict", str(wheel))
    if twine.returncode != 0:
        failures.append(f"twine check failed: {(twine.stdout + twine.stderr).strip()}")
    _budget(facts, WHEEL_BUDGET_MB, failures)
    return _finish(facts, failures)


def is_cpu_wheel(wheel: Path) -> bool:
    return wheel.name.endswith("-none-any.whl") and not is_libs_wheel(wheel)


def is_libs_wheel(wheel: Path) -> bool:
    return re.match(r"pytinytensor_cu\d+_libs-", wheel.name) is not None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs="+", type=Path, help="wheels, and the sdists they were built from (.tar.gz)")
    parser.add_argument("--plat", default=release_matrix_platform(platform.machine()))
    parser.add_argument("--variant", default="cu12")
    parser.add_argument("--json", type=Path, help="write the facts of every wheel here")
    args = parser.parse_args(argv)
    major = int(args.variant.removeprefix("cu"))
    sdists = [f for f in args.wheels if f.name.endswith(".tar.gz")]
    wheels = [f for f in args.wheels if f not in sdists]
    results = [
        check_libs(w, args.plat, major)
        if is_libs_wheel(w)
        else check_cpu(w)
        if is_cpu_wheel(w)
        else check(w, args.plat, args.variant)
        for w in wheels
    ]
    for wheel, r in zip(wheels, results):
        r["sdist"], differences = check_against_sdist(wheel, sdists)
        r["failures"] += differences
    for r in results:
        print(f"{r['wheel']}: {r['size_mb']} MB (budget {r['budget_mb']} MB)")
        print(f"  sha256 {r['sha256']}")
        for failure in r["failures"]:
            print(f"  FAIL: {failure}")
        if r["sdist"] and not r["failures"]:
            print(f"  OK: its metadata is its sdist's {r['sdist']} where the sdist does not mark a field Dynamic")
        if not r["failures"]:
            print(
                "  OK: pure py3-none-any, nothing compiled, no CUDA requirement, metadata; check-wheel-contents "
                "and twine check pass"
                if "auditwheel" not in r
                else f"  OK: {args.plat} floor, no driver library, RPATHs relative, metadata, the "
                + ("library wheel's files and manifest" if "manifest" in r else "extension needing the library wheel")
                + "; auditwheel show, check-wheel-contents and twine check pass"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if any(r["failures"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
