"""Which GPU architectures an ELF shared library (libcublas, libcublasLt, our cuda_ops) carries code for.

    python -m ci.release.fatbin_archs [--detail] [--cc 100,120] [--sections .nv_fatbin,...] LIB...

prints JSON per library, {"LIB": {"sass": [50, ..., 120], "ptx": [120]}}: native cubins, and PTX the
driver can JIT; --detail adds the arch- and family-specific variants and counts, --cc how many CUDA
modules can run on each compute capability. Needs pyelftools.
"""

from __future__ import annotations

import argparse
import json
import mmap
import struct
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

# The fatbin container layout, which NVIDIA does not document (as cuobjdump reads it, and as public
# re-implementations such as n-eiling/cuda-fatbin-decompression describe it), little-endian:
#   container header, 16 bytes: u32 magic 0xBA55ED50, u16 version 1, u16 header size, u64 size of what follows;
#   then entries back to back: u16 kind (1 PTX, 2 ELF/cubin), u16 version, u32 entry header size (64 to
#   112 bytes, larger for sm_100+), u64 payload size (padded), ..., u32 sm arch at offset 28, u64 flags
#   at offset 40; the payload follows the entry header, the next entry follows the payload.
# Flags: 0x1 64-bit, 0x10 Linux, 0x2000 and 0x8000 compressed (NVIDIA's LZ, zstd); 0x100000 an
# arch-specific target (sm_90a), 0x200000 a family-specific one (sm_100f): checked against nvcc 13.0's
# output for such targets and cuobjdump's sm_90a/sm_120a counts on cuBLAS.
# Where the containers are (LOADED_SECTIONS, ALL_SECTIONS):
#   .nv_fatbin: what the CUDA runtime registers at load time, and all that `cuobjdump --list-elf
#     --list-ptx` lists; containers follow one another with at most zero padding between them.
#   .cask_resource (cuBLASLt 12.8 and newer): more containers, for the kernels cuBLASLt loads itself
#     (its sm_100a/sm_100f ones), among other data: found by scanning for the magic, keeping only
#     candidates whose whole entry chain checks out. cuobjdump does not look there.
#   __nv_relfatbin (-rdc builds): the device-link input, not loaded at run time; read only on request.
# A file that is itself a fatbin (nvcc -fatbin) is read whole. The bytes are read through mmap, a few
# header words at a time, so a 750 MB libcublasLt takes well under a second.
MAGIC = 0xBA55ED50
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries that follow
_ENTRY = struct.Struct("<HHIQ")  # kind, version, entry header size, payload size
_ARCH_AT, _FLAGS_AT = 28, 40
_MIN_ENTRY, _MAX_ENTRY = 64, 4096  # entry header sizes seen: 64, 72, 80, 88, 96, 112

KIND_PTX, KIND_ELF = 1, 2
FLAG_ARCH_SPECIFIC = 0x100000  # sm_XYa
FLAG_FAMILY_SPECIFIC = 0x200000  # sm_XYf

# Section name -> strict (containers back to back) or scanned (containers among other data).
LOADED_SECTIONS = {".nv_fatbin": True, ".cask_resource": False}
ALL_SECTIONS = {**LOADED_SECTIONS, "__nv_relfatbin": True}


class FatbinError(ValueError):
    """The file is not ELF, or a fatbin container in a strict section does not parse."""


@dataclass(frozen=True)
class Entry:
    kind: int  # KIND_PTX, KIND_ELF, or something this parser does not know
    arch: int  # 90 for sm_90 / compute_90
    flags: int
    section: str
    container: int  # index of its container in the whole file, counted across sections
    offset: int  # file offset of the entry header

    @property
    def variant(self) -> str:
        """Arch-specific "a", family-specific "f", or the empty string."""
        return "a" if self.flags & FLAG_ARCH_SPECIFIC else "f" if self.flags & FLAG_FAMILY_SPECIFIC else ""

    @property
    def name(self) -> str:
        """sm_90a for a cubin, compute_120 for PTX."""
        return f"{'compute' if self.kind == KIND_PTX else 'sm'}_{self.arch}{self.variant}"


def _walk(buf, pos: int, end: int, *, strict: bool) -> tuple[list[tuple[int, int, int, int]], int] | None:
    """(entries as (kind, arch, flags, offset), container end) for the container at pos, or None (strict: raise)."""

    def bad(why: str):
        if strict:
            raise FatbinError(f"fatbin container at file offset {pos:#x}: {why}")
        return None

    if pos + _CONTAINER.size > end:
        return bad("truncated header")
    magic, version, header_size, size = _CONTAINER.unpack_from(buf, pos)
    if magic != MAGIC or version != 1 or header_size < _CONTAINER.size:
        return bad(f"magic {magic:#x}, version {version}, header size {header_size}")
    stop = pos + header_size + size
    if stop > end:
        return bad(f"claims {size} bytes, past the end of its section")
    entries, at = [], pos + header_size
    while at < stop:
        if at + _MIN_ENTRY > stop:
            return bad(f"entry at {at:#x} runs past the container end")
        kind, _version, entry_size, payload = _ENTRY.unpack_from(buf, at)
        if not _MIN_ENTRY <= entry_size <= _MAX_ENTRY or at + entry_size + payload > stop:
            return bad(f"entry at {at:#x}: header size {entry_size}, payload {payload} bytes")
        if not strict and kind not in (KIND_PTX, KIND_ELF):
            return None
        (arch,) = struct.unpack_from("<I", buf, at + _ARCH_AT)
        (flags,) = struct.unpack_from("<Q", buf, at + _FLAGS_AT)
        entries.append((kind, arch, flags, at))
        at += entry_size + payload
    return entries, stop


def _containers(buf, start: int, end: int, *, strict: bool) -> Iterator[list[tuple[int, int, int, int]]]:
    pos = start
    while pos < end:
        found = buf.find(_MAGIC_BYTES, pos, end)
        if strict:
            gap = buf[pos : end if found < 0 else found]
            if gap.count(0) != len(gap):
                raise FatbinError(
                    f"{len(gap)} bytes at file offset {pos:#x} are neither padding nor a fatbin container"
                )
        if found < 0:
            return
        walked = _walk(buf, found, end, strict=strict)
        if walked is None:  # scanned section: a chance match inside other data
            pos = found + 1
            continue
        entries, pos = walked
        yield entries


def _sections(path: Path, f, buf, names: dict[str, bool]) -> list[tuple[str, int, int, bool]]:
    """(name, file offset, size, strict) of the wanted sections present in the file."""
    if buf[:4] == _MAGIC_BYTES:
        return [("<fatbin file>", 0, len(buf), True)]
    try:
        elf = ELFFile(f)
    except ELFError as exc:
        raise FatbinError(f"{path}: not an ELF file nor a fatbin ({exc})") from exc
    found = []
    for section in elf.iter_sections():
        if section.name in names and section["sh_type"] != "SHT_NOBITS":
            found.append((section.name, section["sh_offset"], section["sh_size"], names[section.name]))
    return found


def iter_entries(path: str | Path, sections: dict[str, bool] = LOADED_SECTIONS) -> Iterator[Entry]:
    """Every fatbin entry (cubin or PTX) in the given sections of the file, in file order."""
    path = Path(path)
    with open(path, "rb") as f:
        if path.stat().st_size == 0:
            raise FatbinError(f"{path}: empty file")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            container = 0
            for name, offset, size, strict in _sections(path, f, buf, sections):
                for entries in _containers(buf, offset, offset + size, strict=strict):
                    for kind, arch, flags, at in entries:
                        yield Entry(kind, arch, flags, name, container, at)
                    container += 1


def fatbin_archs(path: str | Path, sections: dict[str, bool] = LOADED_SECTIONS) -> dict[str, list[int]]:
    """{"sass": sorted sm numbers with native cubins, "ptx": sorted compute numbers with PTX}."""
    sass, ptx = set(), set()
    for entry in iter_entries(path, sections):
        if entry.kind == KIND_ELF:
            sass.add(entry.arch)
        elif entry.kind == KIND_PTX:
            ptx.add(entry.arch)
    return {"sass": sorted(sass), "ptx": sorted(ptx)}


def _runs_natively(entry: Entry, cc: int) -> bool:
    """A cubin for sm_XY runs on X.Z with Z >= Y; an sm_XYa one only on X.Y; sm_XYf ones within the family."""
    if entry.variant == "a":
        return entry.arch == cc
    return entry.arch // 10 == cc // 10 and entry.arch <= cc


def coverage(entries: list[Entry], cc: int) -> dict[str, int]:
    """How the containers (CUDA modules) fare on a GPU of compute capability cc (120 for 12.0): with a native
    cubin, only by JIT from PTX for an older compute capability, or with no usable image at all. Containers
    written for other architectures on purpose (sm_100a-only kernels, on an sm_120 GPU) count as "none" too."""
    by_container: dict[int, list[Entry]] = {}
    for entry in entries:
        by_container.setdefault(entry.container, []).append(entry)
    counts = Counter(sass=0, ptx_jit=0, none=0)
    for members in by_container.values():
        if any(e.kind == KIND_ELF and _runs_natively(e, cc) for e in members):
            counts["sass"] += 1
        elif any(e.kind == KIND_PTX and (_runs_natively(e, cc) if e.variant else e.arch <= cc) for e in members):
            counts["ptx_jit"] += 1
        else:
            counts["none"] += 1
    return {"containers": len(by_container), **counts}


def _variants(entries: list[Entry], kind: int) -> list[str]:
    """["90a", "100a", "100f"]: the arch- and family-specific targets among entries of that kind, by arch."""
    return [
        f"{arch}{variant}"
        for arch, variant in sorted({(e.arch, e.variant) for e in entries if e.kind == kind and e.variant})
    ]


def fatbin_report(
    path: str | Path, sections: dict[str, bool] = LOADED_SECTIONS, ccs: tuple[int, ...] = ()
) -> dict[str, object]:
    """fatbin_archs plus variants ("90a", "100f"), entry counts by name, container counts by section,
    and coverage() for each compute capability in ccs."""
    entries = list(iter_entries(path, sections))
    report: dict[str, object] = {
        "sass": sorted({e.arch for e in entries if e.kind == KIND_ELF}),
        "ptx": sorted({e.arch for e in entries if e.kind == KIND_PTX}),
        "sass_variants": _variants(entries, KIND_ELF),
        "ptx_variants": _variants(entries, KIND_PTX),
    }
    sections_seen: dict[str, dict[str, object]] = {}
    for e in entries:
        seen = sections_seen.setdefault(e.section, {"containers": set(), "entries": Counter()})
        seen["containers"].add(e.container)
        seen["entries"][e.name if e.kind in (KIND_ELF, KIND_PTX) else f"kind_{e.kind}_{e.arch}"] += 1
    report["sections"] = {
        name: {"containers": len(s["containers"]), "entries": dict(sorted(s["entries"].items()))}
        for name, s in sections_seen.items()
    }
    if ccs:
        report["coverage"] = {str(cc): coverage(entries, cc) for cc in ccs}
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("libs", nargs="+", metavar="LIB")
    parser.add_argument("--detail", action="store_true", help="variants, counts per section")
    parser.add_argument("--cc", default="", help="compute capabilities for --detail coverage, e.g. 90,100,120")
    parser.add_argument(
        "--sections",
        default=",".join(LOADED_SECTIONS),
        help=f"comma-separated; default the loaded ones, {','.join(LOADED_SECTIONS)}; add __nv_relfatbin for -rdc input",
    )
    args = parser.parse_args(argv)
    sections = {name: ALL_SECTIONS.get(name, False) for name in args.sections.split(",") if name}
    ccs = tuple(int(cc) for cc in args.cc.split(",") if cc)
    out, status = {}, 0
    for lib in args.libs:
        try:
            if args.detail or ccs:
                out[lib] = fatbin_report(lib, sections, ccs)
            else:
                out[lib] = fatbin_archs(lib, sections)
        except (OSError, FatbinError) as exc:
            out[lib] = {"error": str(exc)}
            status = 1
    json.dump(out, sys.stdout, indent=2)
    print()
    return status


if __name__ == "__main__":
    sys.exit(main())
