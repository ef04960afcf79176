"""GPU architectures to compile for: TINYTENSOR_CUDA_ARCHS, or a default per CUDA major.

Format: "70;75;80;86;89;90+PTX" -> SASS for each listed arch, plus PTX for those marked +PTX
(newer GPUs JIT-compile the PTX). The defaults cover CUDA's common data-centre and consumer
GPUs: Volta, Turing, Ampere, Ada, Hopper (and Blackwell for CUDA 13, which drops Volta).
The variable is read by buildsys/settings.py, with this module's parse.
"""

from __future__ import annotations

import re

DEFAULTS = {
    12: "70;75;80;86;89;90+PTX",
    13: "75;80;86;89;90;100;120+PTX",
}
_ENTRY = re.compile(r"^(\d{2,3})(\+PTX)?$")


class ArchError(ValueError):
    fix = "set TINYTENSOR_CUDA_ARCHS (e.g. '80;90+PTX') to architectures this nvcc supports"


def parse(spec: str) -> tuple[list[int], list[int]]:
    """(SASS archs, PTX archs) from a spec such as "80;90+PTX"; ValueError saying what is wrong."""
    sass, ptx = [], []
    for entry in filter(None, (e.strip() for e in re.split(r"[;, ]", spec))):
        match = _ENTRY.match(entry)
        if not match:
            raise ValueError(f"{entry!r} is not one")
        arch = int(match.group(1))
        sass.append(arch)
        if match.group(2):
            ptx.append(arch)
    if not sass:
        raise ValueError("it names none")
    return sorted(set(sass)), sorted(set(ptx))


def select(
    cuda_major: int, supported: list[int], asked: tuple[list[int], list[int]] | None
) -> tuple[list[int], list[int]]:
    """The archs to build: those ``asked`` (settings.cuda_archs()), else the major's default,
    checked against what this nvcc supports (``nvcc --list-gpu-code``)."""
    if asked is None:
        if cuda_major not in DEFAULTS:
            raise ArchError(f"no default architectures for CUDA {cuda_major}: set TINYTENSOR_CUDA_ARCHS")
        asked = parse(DEFAULTS[cuda_major])
    sass, ptx = asked
    unknown = [a for a in sass if supported and a not in supported]
    if unknown:
        raise ArchError(
            f"this nvcc (CUDA {cuda_major}) cannot compile for sm_{', sm_'.join(map(str, unknown))}; "
            f"it supports {', '.join(f'sm_{a}' for a in supported)}: adjust TINYTENSOR_CUDA_ARCHS"
        )
    return sass, ptx


def gencode_flags(sass: list[int], ptx: list[int]) -> list[str]:
    flags = []
    for arch in sass:
        flags += ["-gencode", f"arch=compute_{arch},code=sm_{arch}"]
    for arch in ptx:
        flags += ["-gencode", f"arch=compute_{arch},code=compute_{arch}"]
    return flags
