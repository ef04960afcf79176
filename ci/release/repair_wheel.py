"""cibuildwheel's repair step for a pytinytensor-cuNN wheel built with TINYTENSOR_CUDA_LIBS=dist: the
extension's needs and symbol versions renamed to pytinytensor-cuNN-libs' libraries, its RUNPATH
pointed at them, then `auditwheel repair` checks and tags the wheel, grafting nothing.

    python -m ci.release.repair_wheel WHEEL DEST_DIR

Reproducible (ci/release/wheel_files.py). Needs the `repair` dependency group,
which cibuildwheel's before-build installs from its lock; its tools are looked up beside this Python.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from buildsys.cuda_libs import version_renames
from ci import commands
from ci.release.elf_versions import rename_versions
from ci.release.wheel_files import pack, reproducible, unpack

log = commands.logger("repair-wheel", sys.stderr)


def tool(name: str) -> list[str]:
    """The pinned tool beside this Python (the `repair` group), else one on PATH."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    return [found] if found else [sys.executable, "-m", name]


def run(*cmd: str) -> str:
    return commands.run(cmd, log=log, capture=True, **reproducible()).stdout  # auditwheel's bytes too


def tool_versions() -> str:
    """What runs the repair, for the build log (the release rehearsal's fidelity table reads it)."""
    # "auditwheel 6.8.2 installed at ... (python 3.11)", "patchelf 0.19.3"
    versions = [
        re.search(r"\d+(\.\d+)+", run(*tool(name), "--version")).group(0) for name in ("auditwheel", "patchelf")
    ]
    return f"auditwheel {versions[0]}, patchelf {versions[1]}"


def repair(wheel: Path, dest: Path, plat: str) -> Path:
    started = time.monotonic()
    log(f"tools: {tool_versions()}")
    with tempfile.TemporaryDirectory(prefix="repair-") as tmp:
        tree = unpack(wheel, Path(tmp) / "unpacked")
        config = json.loads((tree / "tinytensor" / "_build_config.json").read_text())
        libs = config.get("cuda_libs")
        if config.get("extension") != "built" or not libs:
            raise SystemExit(
                f"repair-wheel: {wheel.name} has no extension built with TINYTENSOR_CUDA_LIBS=dist "
                f"(its build config: {json.dumps(config)}); release wheels load CUDA from {libs or 'pytinytensor-cuNN-libs'}"
            )
        (extension,) = (tree / "tinytensor").glob("cuda_ops*.so")
        ours = {name.replace("-tinytensor", ""): name for name in libs["libraries"]}  # libcublas.so.12 -> ours
        needed = run(*tool("patchelf"), "--print-needed", str(extension)).split()
        replace = [arg for dep in needed if dep in ours for arg in ("--replace-needed", dep, ours[dep])]
        through_cublas = {name for name in ours if name.startswith("libcublasLt.")}  # cuBLAS needs it, not we
        missing = sorted(set(ours) - set(needed) - through_cublas)
        if missing:
            raise SystemExit(f"repair-wheel: the extension does not link {missing}: {needed}")
        rpath = f"$ORIGIN/../{libs['module']}/lib"
        run(*tool("patchelf"), *replace, "--set-rpath", rpath, str(extension))
        for line in rename_versions(extension, version_renames(libs["cuda_major"])):
            log(f"{extension.name}: version {line}")
        patched = pack(tree, Path(tmp) / "patched")
        excludes = [arg for name in [*libs["libraries"], "libcuda.so.1"] for arg in ("--exclude", name)]
        dest.mkdir(parents=True, exist_ok=True)
        # --only-plat: the floor tag alone. Older tags would let pip pick this wheel on a glibc
        # where its library wheel (glibc 2.27) cannot install, and break release_manifest's names.
        run(*tool("auditwheel"), "repair", "--plat", plat, "--only-plat", *excludes, "-w", str(dest), str(patched))
    repaired = max(dest.glob(f"{wheel.name.split('-')[0]}-*.whl"), key=os.path.getmtime)
    log(
        f"{repaired.name}: {repaired.stat().st_size / 1e6:.2f} MB, needs {', '.join(libs['libraries'])} "
        f"from {libs['distribution']}=={libs['version']}; repaired in {time.monotonic() - started:.1f} s"
    )
    return repaired


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        raise SystemExit(__doc__)
    plat = os.environ.get("TINYTENSOR_PLAT", f"manylinux_2_28_{platform.machine()}")
    repair(Path(args[0]), Path(args[1]), plat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
