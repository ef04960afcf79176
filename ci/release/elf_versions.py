"""Rename symbol version nodes of an ELF shared object in place, and read them.

NVIDIA's libraries name every symbol's version after their soname (`cublasSgemm_v2@@libcublas.so.12`),
and so do the references to them. The dynamic loader binds a reference to the first definition of
that name and version in the global scope, before the object's own dependencies: a cuBLAS that
another package loaded RTLD_GLOBAL (PyTorch's libtorch_global_deps does) would answer our
extension's calls and our cuBLAS's calls into cuBLASLt. Renaming the version nodes (`TT_CUBLAS_12`)
in our copies and in everything that references them makes those definitions unable to match,
without RTLD_DEEPBIND, which bypasses any allocator preloaded with LD_PRELOAD (jemalloc, tcmalloc)
inside the libraries and crashes on the first pointer that crosses.

A new name is written over the old one in .dynstr, so it may not be longer; the ELF hashes of the
renamed entries are recomputed. Nothing else moves, so the file keeps its layout and size.
(patchelf renames sonames and needed entries, but not version nodes.)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

# d_tags whose value is an offset into .dynstr
_STRING_TAGS = {"DT_NEEDED", "DT_SONAME", "DT_RPATH", "DT_RUNPATH", "DT_AUXILIARY", "DT_FILTER"}


def elf_hash(name: str) -> int:
    """The System V ABI's ELF hash, which Verdef.vd_hash and Vernaux.vna_hash hold."""
    h = 0
    for byte in name.encode():
        h = ((h << 4) + byte) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


@dataclass
class _Ref:
    kind: str  # "verdef", "verneed-file", "vernaux", or what else points into .dynstr
    offset: int  # into .dynstr
    hash_at: int | None = None  # file offset of the entry's hash field, for version names


@dataclass
class _Layout:
    endian: str
    dynstr_offset: int  # file offset of the string table the version sections use
    dynstr: bytes
    refs: list[_Ref]


def _layout(path: Path) -> _Layout:
    with open(path, "rb") as f:
        elf = ELFFile(f)
        endian = "<" if elf.little_endian else ">"
        refs: list[_Ref] = []
        dynstr_index = None
        for section in elf.iter_sections():
            kind = section["sh_type"]
            if kind not in ("SHT_GNU_verdef", "SHT_GNU_verneed"):
                continue
            dynstr_index = section["sh_link"]
            start, data = section["sh_offset"], section.data()
            pos = 0
            if kind == "SHT_GNU_verdef":
                for _ in range(section.num_versions()):
                    _, _, _, count, _, aux, following = struct.unpack_from(endian + "HHHHIII", data, pos)
                    hash_at = start + pos + 8
                    apos = pos + aux
                    for _ in range(count):
                        name, aux_next = struct.unpack_from(endian + "II", data, apos)
                        # the first aux names the version; later ones name its parents
                        refs.append(_Ref("verdef" if apos == pos + aux else "verdef-parent", name, hash_at))
                        apos += aux_next
                    if not following:
                        break
                    pos += following
            else:
                for _ in range(section.num_versions()):
                    _, count, file_name, aux, following = struct.unpack_from(endian + "HHIII", data, pos)
                    refs.append(_Ref("verneed-file", file_name))
                    apos = pos + aux
                    for _ in range(count):
                        _, _, _, name, aux_next = struct.unpack_from(endian + "IHHII", data, apos)
                        refs.append(_Ref("vernaux", name, start + apos))
                        if not aux_next:
                            break
                        apos += aux_next
                    if not following:
                        break
                    pos += following
        if dynstr_index is None:
            return _Layout(endian, 0, b"", [])
        dynstr = elf.get_section(dynstr_index)
        for section in elf.iter_sections():
            if section["sh_link"] != dynstr_index:
                continue
            if isinstance(section, DynamicSection):
                refs += [
                    _Ref(t.entry.d_tag, t.entry.d_val) for t in section.iter_tags() if t.entry.d_tag in _STRING_TAGS
                ]
            elif isinstance(section, SymbolTableSection):
                for sym in section.iter_symbols():
                    if sym["st_name"]:
                        # the linker's absolute symbol named after each version node goes with it
                        absolute = sym["st_shndx"] == "SHN_ABS" and sym["st_info"]["type"] == "STT_OBJECT"
                        refs.append(_Ref("version-symbol" if absolute else "symbol", sym["st_name"]))
        return _Layout(endian, dynstr["sh_offset"], dynstr.data(), refs)


def _string(dynstr: bytes, offset: int) -> str:
    return dynstr[offset : dynstr.index(b"\0", offset)].decode()


def version_nodes(elf: ELFFile) -> dict:
    """{"defines": [version names], "needs": {file: [version names]}} of an ELF shared object."""
    defines: list[str] = []
    needs: dict[str, list[str]] = {}
    for section in elf.iter_sections():
        if section["sh_type"] == "SHT_GNU_verdef":
            for verdef, auxes in section.iter_versions():
                if not verdef["vd_flags"] & 1:  # VER_FLG_BASE names the file, not a version
                    defines.append(next(iter(auxes)).name)
        elif section["sh_type"] == "SHT_GNU_verneed":
            for verneed, auxes in section.iter_versions():
                needs[verneed.name] = [aux.name for aux in auxes]
    return {"defines": defines, "needs": needs}


def rename_versions(path: Path, renames: dict[str, str]) -> list[str]:
    """Rename the version nodes `renames` names (old -> new), defined or needed, in place. Returns
    one line per renamed string. Refuses (ValueError, the file untouched) a new name longer than
    the old one, and a string that something other than a version entry also uses or points into."""
    layout = _layout(path)
    by_offset: dict[int, list[_Ref]] = {}
    for ref in layout.refs:
        by_offset.setdefault(ref.offset, []).append(ref)
    patches: dict[int, bytes] = {}
    hashes: dict[int, int] = {}
    changed = []
    for offset, refs in sorted(by_offset.items()):
        old = _string(layout.dynstr, offset)
        new = renames.get(old)
        if new is None or not any(r.kind in ("verdef", "vernaux") for r in refs):
            continue
        if len(new.encode()) > len(old.encode()):
            raise ValueError(f"{path.name}: version {new!r} is longer than {old!r}, which it must overwrite")
        others = sorted(
            {r.kind for r in refs if r.kind not in ("verdef", "vernaux", "verdef-parent", "version-symbol")}
        )
        if others:
            raise ValueError(f"{path.name}: the string {old!r} is also used by {others}: renaming it would change them")
        inside = sorted({r.kind for r in layout.refs if offset < r.offset <= offset + len(old.encode())})
        if inside:
            raise ValueError(f"{path.name}: {inside} point into the string {old!r}: renaming it would change them")
        patches[layout.dynstr_offset + offset] = new.encode() + b"\0"
        for ref in refs:
            if ref.hash_at is not None and ref.kind in ("verdef", "vernaux"):
                hashes[ref.hash_at] = elf_hash(new)
        changed.append(f"{old} -> {new} ({', '.join(sorted({r.kind for r in refs}))})")
    if patches:
        with open(path, "r+b") as f:
            for at, data in patches.items():
                f.seek(at)
                f.write(data)
            for at, value in hashes.items():
                f.seek(at)
                f.write(struct.pack(layout.endian + "I", value))
    return changed
