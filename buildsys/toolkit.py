"""Find a CUDA toolkit: nvcc, the runtime headers, libcudart and libcublas, with their versions.

Places are searched in this order, overridable with TINYTENSOR_CUDA_SEARCH (a comma-separated
list of environment-variable names, absolute paths, and the word "pip"):

    CUDA_HOME, CUDA_PATH, /usr/local/cuda, CONDA_PREFIX, pip

"pip" means the nvidia-* wheels importable by the building interpreter (nvidia/cuda_runtime,
nvidia/cublas, nvidia/cuda_nvcc, and CUDA 13's nvidia/cu13). Each component is taken from the first
place that has it *in the required CUDA major*; a component of another major is refused and the
refusal is reported, never silently used (a cu12 build refuses a CUDA 13 nvcc, for example).
A variable of the search that names a folder that does not exist (a mistyped CUDA_HOME), or a
CUDA_HOME or CUDA_PATH without bin/nvcc, is an error naming it (buildsys/settings.py), never a
reason to go on to the next place; so is a CUDA_HOME or CUDA_PATH whose nvcc does not run.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import commands, settings

_TARGET = "targets/x86_64-linux" if os.uname().machine == "x86_64" else "targets/sbsa-linux"


class ToolkitError(Exception):
    def __init__(self, cause: str, fix: str):
        super().__init__(cause)
        self.cause, self.fix = cause, fix


@dataclass
class Place:
    label: str  # how the user named it, e.g. "$CUDA_HOME=/opt/cuda"
    variable: str | None = None  # CUDA_HOME or CUDA_PATH where it names a toolkit's root: never passed over
    bins: list[Path] = field(default_factory=list)
    includes: list[Path] = field(default_factory=list)
    libs: list[Path] = field(default_factory=list)


@dataclass
class Toolkit:
    nvcc: Path
    release: str  # "12.4"
    major: int
    include_dirs: list[Path]
    cudart: Path
    cublas: Path
    cudart_version: int  # CUDART_VERSION from the header, e.g. 12040
    cublas_header_version: str  # "12.4.5"
    found_in: dict[str, str]  # component -> place label

    def lib_dirs(self) -> list[Path]:
        return sorted({self.cudart.parent, self.cublas.parent}, key=str)


def _root_place(label: str, root: Path, variable: str | None = None) -> Place:
    return Place(
        label,
        variable,
        bins=[root / "bin"],
        includes=[root / "include", root / _TARGET / "include"],
        libs=[root / "lib64", root / "lib", root / _TARGET / "lib"],
    )


def _pip_places() -> list[Place]:
    places = []
    for entry in sys.path:
        base = Path(entry or ".") / "nvidia"
        if not base.is_dir():
            continue
        for unified in ("cu13", "cu12"):  # CUDA 13 wheels share one tree
            if (base / unified).is_dir():
                places.append(_root_place(f"pip wheel {base / unified}", base / unified))
        for part in ("cuda_nvcc", "cuda_runtime", "cublas"):
            if (base / part).is_dir():
                places.append(_root_place(f"pip wheel {base / part}", base / part))
    return places


def search_places(env=None) -> tuple[list[Place], list[str]]:
    """The places to look, in order, and notes on entries that named nothing (for the error)."""
    places, notes = [], []
    for entry in settings.cuda_search(env):
        if entry == "pip":
            found = _pip_places()
            places += found
            if not found:
                notes.append("pip nvidia-* wheels (none importable here)")
        elif entry.startswith("/"):
            if Path(entry).is_dir():
                places.append(_root_place(entry, Path(entry)))
            else:
                notes.append(f"{entry} (does not exist)")
        else:
            folder = settings.search_place(env, entry)
            if folder:
                places.append(
                    _root_place(f"${entry}={folder}", folder, entry if entry in settings.TOOLKIT_ROOTS else None)
                )
            else:
                notes.append(f"${entry} (unset)")
    return places, notes


def nvcc_release(nvcc: Path) -> str:
    """ "12.4" from `nvcc --version`, or raise OSError saying why it cannot be read."""
    try:
        out = commands.run([nvcc, "--version"])
    except OSError as exc:
        raise OSError(f"{nvcc} does not run: {exc}") from exc
    match = re.search(r"release (\d+)\.(\d+)", out.stdout)
    if out.returncode != 0 or not match:
        raise OSError(f"{nvcc} --version failed: {(out.stderr or out.stdout).strip()[:300]}")
    return f"{match.group(1)}.{match.group(2)}"


def nvcc_supported_archs(nvcc: Path) -> list[int]:
    try:
        out = commands.run([nvcc, "--list-gpu-code"])
    except OSError as exc:
        raise ToolkitError(f"{nvcc} --list-gpu-code: {exc}", "point CUDA_HOME at a working toolkit") from None
    return sorted({int(m) for m in re.findall(r"sm_(\d+)", out.stdout)})


def _header_define(path: Path, name: str) -> str | None:
    match = re.search(rf"#define\s+{name}\s+(\d+)", path.read_text(errors="replace"))
    return match.group(1) if match else None


def _lib_major(path: Path) -> int | None:
    match = re.search(r"\.so\.(\d+)", Path(os.path.realpath(path)).name) or re.search(r"\.so\.(\d+)", path.name)
    return int(match.group(1)) if match else None


def _find_lib(places, stem: str, major: int, looked: list[str]):
    for place in places:
        for d in place.libs:
            for name in (f"{stem}.so.{major}", f"{stem}.so"):
                candidate = d / name
                if not candidate.exists():
                    continue
                got = _lib_major(candidate)
                if got == major:
                    return candidate, place.label
                looked.append(f"{candidate} (CUDA {got}, not {major})")
                break
        looked.append(f"{place.label} (no {stem}.so.{major})")
    return None, None


def _find_header(places, header: str, looked: list[str]):
    for place in places:
        for d in place.includes:
            if (d / header).is_file():
                return d, place.label
        looked.append(f"{place.label} (no {header})")
    return None, None


def discover(required_major: int | None, env=None) -> Toolkit:
    """The toolkit to build with; ``required_major`` None means any CUDA (12 or newer)."""
    places, notes = search_places(env)
    fix = (
        f"install CUDA {required_major} and set CUDA_HOME to it (on Debian, ci/release/install-cuda12.sh installs "
        "the project's pinned toolchain)"
        if required_major
        else "install a CUDA toolkit (12 or 13) and set CUDA_HOME, or pip install pytinytensor-cu12 for a prebuilt wheel"
    )
    # nvcc decides the major for a forgiving build; a strict build refuses other majors.
    looked: list[str] = list(notes)
    nvcc = release = nvcc_label = None
    for place in places:
        for d in place.bins:
            candidate = d / "nvcc"
            if not candidate.is_file():
                continue
            try:
                got = nvcc_release(candidate)
            except OSError as exc:
                if place.variable:  # the toolkit the user chose: its broken nvcc is the answer, not the next place's
                    fix = f"repair that toolkit, or set {place.variable} to a working one"
                    if isinstance(exc.__cause__, commands.CommandTimeout):
                        fix = f"raise {commands.TIMEOUT_VAR}, or {fix}"
                    raise ToolkitError(f"{place.label}: {exc}", fix) from None
                looked.append(str(exc))
                continue
            if required_major and int(got.split(".")[0]) != required_major:
                looked.append(f"{candidate} (release {got}, not {required_major}.x: refused)")
                continue
            if int(got.split(".")[0]) < 12:
                looked.append(f"{candidate} (release {got}: CUDA 12 or newer is needed)")
                continue
            nvcc, release, nvcc_label = candidate, got, place.label
            break
        if nvcc:
            break
        if not any((d / "nvcc").is_file() for d in place.bins):
            looked.append(f"{place.label} (no bin/nvcc)")
    if nvcc is None:
        want = f"CUDA {required_major}.x " if required_major else ""
        raise ToolkitError(f"nvcc ({want}compiler) not found; looked in: {'; '.join(looked)}", fix)
    major = int(release.split(".")[0])

    problems = []
    looked_h, looked_rt, looked_bl, looked_bh = [], [], [], []
    include_dir, include_label = _find_header(places, "cuda_runtime_api.h", looked_h)
    if include_dir is None:
        problems.append(f"CUDA runtime headers (cuda_runtime_api.h) not found; looked in: {'; '.join(looked_h)}")
    cudart, cudart_label = _find_lib(places, "libcudart", major, looked_rt)
    if cudart is None:
        problems.append(f"libcudart (CUDA {major}) not found; looked in: {'; '.join(looked_rt)}")
    cublas, cublas_label = _find_lib(places, "libcublas", major, looked_bl)
    if cublas is None:
        problems.append(f"libcublas (CUDA {major}) not found; looked in: {'; '.join(looked_bl)}")
    cublas_include, _ = _find_header(places, "cublas_v2.h", looked_bh)
    if cublas_include is None:
        problems.append(f"cuBLAS headers (cublas_v2.h) not found; looked in: {'; '.join(looked_bh)}")
    if problems:
        raise ToolkitError(f"nvcc {release} found at {nvcc}, but " + "; ".join(problems), fix)

    cudart_version = int(_header_define(include_dir / "cuda_runtime_api.h", "CUDART_VERSION") or 0)
    if cudart_version // 1000 != major:
        raise ToolkitError(
            f"nvcc at {nvcc} is CUDA {release} but the runtime headers in {include_dir} are CUDA "
            f"{cudart_version // 1000}.{cudart_version % 1000 // 10}: they must be the same major",
            fix,
        )
    cublas_api = cublas_include / "cublas_api.h"
    parts = [_header_define(cublas_api, f"CUBLAS_VER_{p}") or "0" for p in ("MAJOR", "MINOR", "PATCH")]
    includes = [include_dir] + ([cublas_include] if cublas_include != include_dir else [])
    return Toolkit(
        nvcc=nvcc,
        release=release,
        major=major,
        include_dirs=includes,
        cudart=cudart,
        cublas=cublas,
        cudart_version=cudart_version,
        cublas_header_version=".".join(parts),
        found_in={"nvcc": nvcc_label, "headers": include_label, "libcudart": cudart_label, "libcublas": cublas_label},
    )
