"""Crafted files a loader may be handed: ``.tt`` archives and 1.x pickles, each one way a file from
elsewhere can try to exhaust memory, confuse the reader or pass for something it is not.

``CASES`` is the table: every case writes its file into a folder and names the error a load must
raise, with a pattern its message must match (the member and the problem). ``bomb`` marks the
cases that, read naively, would allocate far more than the file holds; test_hostile_files.py
also loads those in a child process under a memory limit. Everything is built from the format's
description (docs/file-format.md) with zipfile, struct, zlib, pickle and numpy; the crafted
pickles are written opcode by opcode (or pickled from plain lists), so no object of this module
runs anything when unpickled.
"""

from __future__ import annotations

import io
import json
import pickle
import struct
import warnings
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tinytensor.serialization import FileFormatError, UnsafePickleError
from tinytensor.serialization.format import DATA_LIMIT, DEPTH_LIMIT, MANIFEST_LIMIT, TORCH_MAGIC

MANIFEST = {"magic": "tinytensor", "format_version": 1, "writer": "hostile_files"}
GiB = 1 << 30


# ---------------------------------------------------------------------------- .tt archives
def npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, array, allow_pickle=False)
    return buf.getvalue()


def npy_header(descr: str, shape: tuple, version=(1, 0)) -> bytes:
    """A ``.npy`` magic and header alone: what a member declares, whatever data follows."""
    buf = io.BytesIO()
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    if version == (1, 0):
        np.lib.format.write_array_header_1_0(buf, header)
    else:
        np.lib.format.write_array_header_2_0(buf, header)
    return buf.getvalue()


def array_node(member: str, dtype: str, shape) -> dict:
    return {"type": "ndarray", "array": member, "dtype": dtype, "shape": list(shape)}


def archive(root, members: dict | None = None, *, manifest=MANIFEST, compress: dict | None = None) -> bytes:
    """A ZIP of manifest.json, ``members`` (name -> bytes) and data.json (``root``, a node or raw
    bytes), stored unless ``compress`` gives a member a ZIP method."""
    compress = compress or {}
    entries = {
        "manifest.json": manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode(),
        **(members or {}),
    }
    entries.setdefault("data.json", root if isinstance(root, bytes) else json.dumps(root).encode())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns of a duplicate name
        for name, data in entries.items():
            for one in data if isinstance(data, list) else [data]:
                zf.writestr(zipfile.ZipInfo(name), one, compress_type=compress.get(name, zipfile.ZIP_STORED))
    return buf.getvalue()


# Field offsets in a central directory entry and in a local file header (PKZIP application note 4.3.7, 4.3.12).
_CENTRAL = {"version_needed": (6, "H"), "flags": (8, "H"), "method": (10, "H"), "crc": (16, "I"),
            "compress_size": (20, "I"), "file_size": (24, "I")}  # fmt: skip
_LOCAL = {"version_needed": (4, "H"), "flags": (6, "H"), "method": (8, "H"), "crc": (14, "I"),
          "compress_size": (18, "I"), "file_size": (22, "I")}  # fmt: skip


def patch(data: bytes, name: str, **fields) -> bytes:
    """``data`` (a ZIP) with fields of member ``name``'s entry rewritten, in the central directory
    and its local header alike: what a hand-edited or hostile writer produces."""
    out = bytearray(data)
    end = data.rindex(b"PK\x05\x06")
    count, size, at = struct.unpack_from("<HII", data, end + 10)
    for _ in range(count):
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, at + 28)
        (local,) = struct.unpack_from("<I", data, at + 42)
        if data[at + 46 : at + 46 + name_len].decode() == name:
            for field, value in fields.items():
                for base, table in ((at, _CENTRAL), (local, _LOCAL)):
                    offset, fmt = table[field]
                    struct.pack_into("<" + fmt, out, base + offset, value)
            return bytes(out)
        at += 46 + name_len + extra_len + comment_len
    raise KeyError(name)


def deflate_bomb(size: int, byte: bytes = b"\0") -> bytes:
    """Raw deflate data that inflates to ``size`` copies of ``byte`` (a multiple of 16 MiB), about
    a thousandth of that: one fully flushed 16 MiB block, repeated, then an empty final block."""
    block = 16 << 20
    one = zlib.compressobj(9, zlib.DEFLATED, -15)
    part = one.compress(byte * block) + one.flush(zlib.Z_FULL_FLUSH)
    return part * (size // block) + zlib.compressobj(9, zlib.DEFLATED, -15).flush()


def bombed(root, name: str, inflated: bytes, size: int, members: dict | None = None) -> bytes:
    """An archive whose member ``name`` is deflate data that inflates to ``size`` bytes."""
    data = archive(root, {**(members or {}), name: inflated})
    return patch(data, name, method=zipfile.ZIP_DEFLATED, file_size=size, crc=0)


def overlapping(count: int, own: int) -> bytes:
    """``count`` uint8 members that each hold ``own`` bytes, yet each (by its directory entry and
    its .npy header, CRC included) runs over all the members after it up to the ZIP directory: a
    file of about ``count * own`` bytes that declares about ``count**2 * own / 2``."""
    names = [f"arrays/{i}.npy" for i in range(count)]

    def build(shapes: list[int]) -> bytes:
        root = [array_node(n, "uint8", (k,)) for n, k in zip(names, shapes, strict=True)]
        return archive(root, {n: npy_header("|u1", (k,)) + b"\0" * own for n, k in zip(names, shapes, strict=True)})

    header, shapes, layout = len(npy_header("|u1", (own,))), [own] * count, None
    while True:  # the sizes are written into data.json, which moves what follows it: until they settle
        data = build(shapes)
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            directory = zf.start_dir
            starts = [info.header_offset + 30 + len(info.orig_filename) for info in map(zf.getinfo, names)]
        if layout == (directory, starts):
            break
        layout, shapes = (directory, starts), [directory - start - header for start in starts]
    for name, start in reversed(list(zip(names, starts, strict=True))):  # each CRC covers the later entries
        size = directory - start
        data = patch(data, name, compress_size=size, file_size=size, crc=zlib.crc32(data[start:directory]))
    return data


# ---------------------------------------------------------------------------- 1.x pickles
def op_global(module: str, name: str) -> bytes:
    """Protocol 2's GLOBAL opcode: push ``module.name`` (through the reader's find_class)."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def op_int(value: int) -> bytes:
    """LONG1: any integer, little-endian two's complement."""
    raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def op_str(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def op_bytes(raw: bytes) -> bytes:
    return b"B" + struct.pack("<I", len(raw)) + raw


def call(func: bytes, *args: bytes) -> bytes:
    """``func(*args)`` as MARK args TUPLE REDUCE."""
    return func + b"(" + b"".join(args) + b"tR"


def one_pickle(body: bytes) -> bytes:
    """A protocol 2 pickle of ``{"w": body}``, as a 1.x file's state dict holds an array."""
    return b"\x80\x02}" + op_str("w") + body + b"s."


_RECONSTRUCT = op_global("numpy.core.multiarray", "_reconstruct")
_NDARRAY = op_global("numpy", "ndarray")


def array_state(shape: tuple, dtype: str, data: bytes) -> bytes:
    """numpy's own pickle of an array: _reconstruct(ndarray, (0,), b"b"), then BUILD with its state."""
    empty = call(_RECONSTRUCT, _NDARRAY, b"(" + op_int(0) + b"t", op_bytes(b"b"))
    dtype_obj = call(op_global("numpy", "dtype"), op_str(dtype), b"\x89", b"\x88")
    shape_op = b"(" + b"".join(op_int(n) for n in shape) + b"t"
    return empty + b"(" + op_int(1) + shape_op + dtype_obj + b"\x89" + op_bytes(data) + b"tb"


def copies(func: bytes, args: list[bytes], times: int) -> bytes:
    """A list of ``times`` calls ``func(*args)``, all on the same memoized arguments: each call
    copies them, so the result grows by their size while the file grows by a few bytes."""
    memo = [func, *args]
    body = b"".join(item + b"q" + bytes([slot]) for slot, item in enumerate(memo))
    one_call = b"h\x00(" + b"".join(b"h" + bytes([slot]) for slot in range(1, len(memo))) + b"tR"
    return b"\x80\x02" + body + b"(" + one_call * times + b"l."


# ---------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Case:
    id: str
    build: Callable[[Path], Path]  # writes the file into a folder and returns its path
    error: type[Exception]
    match: str  # the message, after the file's name
    bomb: bool = False  # read naively, it allocates far more than the file holds


def _file(content: Callable[[], bytes], name: str = "hostile.tt") -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(content())
        return path

    return build


def _torch_file(**save_options) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        import pytest

        torch = pytest.importorskip("torch", reason="PyTorch is not installed")
        path = folder / "hostile.tt"
        torch.save({"w": torch.ones(2)}, path, **save_options)
        return path

    return build


_W = np.arange(3, dtype=np.float32)
_W_NODE = array_node("arrays/0.npy", "float32", (3,))
_W_MEMBER = {"arrays/0.npy": npy(_W)}
_HUGE = 2**34  # 16 GiB of uint8: what a tiny member declares


def _declared(shape: tuple, data: bytes = b"\0" * 16, version=(1, 0)) -> bytes:
    """An archive whose member declares ``shape`` (uint8) in its header and holds ``data``."""
    return archive(
        array_node("arrays/0.npy", "uint8", shape), {"arrays/0.npy": npy_header("|u1", shape, version) + data}
    )


CASES = [
    # ---- members: stored, whole, once
    Case(
        "bzip2-array",
        _file(lambda: archive(_W_NODE, _W_MEMBER, compress={"arrays/0.npy": zipfile.ZIP_BZIP2})),
        FileFormatError,
        r"arrays/0\.npy is compressed \(method 12, bzip2\); every member of a \.tt file is stored uncompressed",
    ),
    Case(
        "deflated-data-json",
        _file(lambda: archive(_W_NODE, _W_MEMBER, compress={"data.json": zipfile.ZIP_DEFLATED})),
        FileFormatError,
        r"data\.json is compressed \(method 8, deflate\)",
    ),
    Case(
        "lzma-manifest",
        _file(lambda: archive(1, compress={"manifest.json": zipfile.ZIP_LZMA})),
        FileFormatError,
        r"manifest\.json is compressed \(method 14, lzma\)",
    ),
    Case(
        "unknown-method",
        _file(lambda: patch(archive(_W_NODE, _W_MEMBER), "arrays/0.npy", method=77)),
        FileFormatError,
        r"arrays/0\.npy is compressed \(method 77, unknown\)",
    ),
    Case(
        "deflate-bomb-array",
        _file(lambda: bombed(array_node("arrays/0.npy", "uint8", (GiB,)), "arrays/0.npy", deflate_bomb(GiB), GiB)),
        FileFormatError,
        r"arrays/0\.npy is compressed \(method 8, deflate\)",
        bomb=True,
    ),
    Case(
        "deflate-bomb-data-json",
        _file(lambda: bombed(None, "data.json", deflate_bomb(GiB, b" "), GiB)),
        FileFormatError,
        r"data\.json is compressed \(method 8, deflate\)",
        bomb=True,
    ),
    Case(
        "encrypted-member",
        _file(lambda: patch(archive(_W_NODE, _W_MEMBER), "data.json", flags=1)),
        FileFormatError,
        r"data\.json is encrypted or patched \(ZIP flags 0x0001\)",
    ),
    Case(
        "sizes-disagree",
        _file(lambda: patch(archive(_W_NODE, _W_MEMBER), "arrays/0.npy", file_size=len(npy(_W)) + 64)),
        FileFormatError,
        r"arrays/0\.npy is stored, yet the ZIP directory gives it \d+ bytes in the file and \d+ bytes of content",
    ),
    Case(
        "member-past-end",
        _file(lambda: patch(_declared((2**31 - 128,)), "arrays/0.npy", compress_size=2**31, file_size=2**31)),
        FileFormatError,
        r"arrays/0\.npy is said to hold 2147483648 bytes from offset \d+, past the end of the file \(\d+ bytes\)",
        bomb=True,
    ),
    Case(
        "members-overlap",  # 4 MiB that declare about 128 MiB of arrays
        _file(lambda: overlapping(64, 64 << 10)),
        FileFormatError,
        r"arrays/0\.npy \(bytes \d+ to \d+\) runs over arrays/1\.npy, which starts at byte \d+; the members of a "
        r"\.tt file never overlap",
        bomb=True,
    ),
    Case(
        "duplicate-member",
        _file(
            lambda: archive(_W_NODE, {**_W_MEMBER, "data.json": [json.dumps(1).encode(), json.dumps(_W_NODE).encode()]})
        ),
        FileFormatError,
        r"the archive holds data\.json more than once",
    ),
    Case(
        "zip-version-unknown",
        _file(lambda: patch(archive(1), "data.json", version_needed=99)),
        FileFormatError,
        r"its ZIP directory is damaged \(NotImplementedError: zip file version 9\.9\)",
    ),
    # ---- JSON members: capped before they are read
    Case(
        "manifest-over-limit",
        _file(lambda: archive(1, manifest=json.dumps(MANIFEST).encode().ljust(MANIFEST_LIMIT + 1))),
        FileFormatError,
        rf"manifest\.json is {MANIFEST_LIMIT + 1} bytes, over the \.tt format's limit of {MANIFEST_LIMIT} bytes",
    ),
    Case(
        "data-json-over-limit",
        _file(lambda: archive(b"1".ljust(DATA_LIMIT + 1))),
        FileFormatError,
        rf"data\.json is {DATA_LIMIT + 1} bytes, over the \.tt format's limit of {DATA_LIMIT} bytes",
        bomb=True,
    ),
    Case(
        "data-json-duplicate-key",  # which "array" would a reader take? refused, as duplicate members are
        _file(
            lambda: archive(
                b'{"type":"ndarray","array":"arrays/0.npy","array":"arrays/1.npy","dtype":"float32","shape":[3]}',
                _W_MEMBER,
            )
        ),
        FileFormatError,
        r"data\.json is not valid JSON \(ValueError: an object holds the key 'array' more than once\)",
    ),
    Case(
        "data-json-too-deep",  # deeper than any file save writes: refused by name, not by a RecursionError
        _file(lambda: archive(b"[" * (DEPTH_LIMIT + 1) + b"]" * (DEPTH_LIMIT + 1))),
        FileFormatError,
        rf"obj\[0\]\[0\].*: lists, tuples and dicts nested more than {DEPTH_LIMIT} deep, the \.tt format's limit",
    ),
    # ---- .npy members: the header is checked against the node before any data is read
    Case(
        "npy-huge-shape",
        _file(lambda: _declared((_HUGE,))),
        FileFormatError,
        rf"arrays/0\.npy is \d+ bytes, but its header \(128 bytes\) declares uint8 \[{_HUGE}\]: {_HUGE} bytes of data",
        bomb=True,
    ),
    Case(
        "npy-shape-overflow",  # numpy's own reader overflows computing the size
        _file(lambda: _declared((2**64,))),
        FileFormatError,
        rf"arrays/0\.npy is \d+ bytes, but its header \(128 bytes\) declares uint8 \[{2**64}\]",
    ),
    Case(
        "npy-beyond-memory",  # numpy's own reader runs out of memory allocating it
        _file(lambda: _declared((2**45,))),
        FileFormatError,
        rf"arrays/0\.npy is \d+ bytes, but its header \(128 bytes\) declares uint8 \[{2**45}\]",
        bomb=True,
    ),
    Case(
        "npy-huge-header",
        _file(lambda: archive(_W_NODE, {"arrays/0.npy": b"\x93NUMPY\x02\x00" + struct.pack("<I", 2**32 - 1) + b"{}"})),
        FileFormatError,
        r"arrays/0\.npy: not a valid \.npy header: EOF: reading array header, expected 4294967295 bytes",
    ),
    Case(
        "npy-bool-shape",  # numpy's header check takes True for an int, and it equals the node's 1
        _file(
            lambda: archive(
                array_node("arrays/0.npy", "uint8", (1, 16)),
                {"arrays/0.npy": npy_header("|u1", (True, 16)) + b"\0" * 16},
            )
        ),
        FileFormatError,
        r"arrays/0\.npy: not a valid \.npy header: the shape \(True, 16\) is not whole numbers",
    ),
    Case(
        "npy-disagrees-with-node",
        _file(lambda: archive(_W_NODE, {"arrays/0.npy": npy(_W.astype(np.float64))})),
        FileFormatError,
        r"obj: arrays/0\.npy holds float64 \[3\], data\.json says float32 \[3\]",
    ),
    Case(
        "shared-member-contradicts",
        _file(lambda: archive([_W_NODE, array_node("arrays/0.npy", "float32", (1, 3))], _W_MEMBER)),
        FileFormatError,
        r"obj\[1\]: arrays/0\.npy is also obj\[0\], whose node says otherwise",
    ),
    # ---- PyTorch files, refused by name
    Case(
        "torch-zip",
        _torch_file(),
        FileFormatError,
        r"is a PyTorch torch\.save file \(a ZIP archive with data\.pkl\), which tinytensor does not read: "
        r"load it with torch\.load and convert",
    ),
    Case(
        "torch-legacy",
        _torch_file(_use_new_zipfile_serialization=False),
        FileFormatError,
        r"is a PyTorch torch\.save file \(the legacy format, a series of pickles\)",
    ),
    Case(
        "torch-legacy-protocol-0",
        _torch_file(_use_new_zipfile_serialization=False, pickle_protocol=0),
        FileFormatError,
        r"is a PyTorch torch\.save file \(the legacy format, a series of pickles, with pickle protocol 0 or 1\)",
    ),
    Case(
        "torch-legacy-protocol-1",
        _torch_file(_use_new_zipfile_serialization=False, pickle_protocol=1),
        FileFormatError,
        r"is a PyTorch torch\.save file \(the legacy format, a series of pickles, with pickle protocol 0 or 1\)",
    ),
    Case(
        "torch-legacy-magic-alone",  # the first pickle of a legacy file, written by hand
        _file(lambda: b"\x80\x02" + op_int(TORCH_MAGIC) + b"."),
        FileFormatError,
        r"is a PyTorch torch\.save file \(the legacy format",
    ),
    # ---- 1.x pickles: no allocator is called with a size from the file
    Case(
        "pickle-bytearray-alloc",  # 36 bytes that ask for 1 GiB
        _file(lambda: b"\x80\x02" + call(op_global("__builtin__", "bytearray"), op_int(GiB)) + b"."),
        UnsafePickleError,
        rf"refused bytearray\({GiB},\): a 1\.x file calls only bytearray\(bytes\)",
        bomb=True,
    ),
    Case(
        "pickle-bytes-alloc",
        _file(lambda: b"\x80\x02" + call(op_global("__builtin__", "bytes"), op_int(GiB)) + b"."),
        UnsafePickleError,
        rf"refused bytes\({GiB},\): a 1\.x file calls only bytes\(\)",
        bomb=True,
    ),
    Case(
        "pickle-ndarray-alloc",  # 16 GiB of uninitialised memory, returned as weights
        _file(lambda: one_pickle(call(_NDARRAY, b"(" + op_int(_HUGE) + b"t", op_str("u1")))),
        UnsafePickleError,
        rf"refused to call numpy\.ndarray\(\({_HUGE},\), 'u1'\): a 1\.x file builds arrays only through numpy's "
        r"_reconstruct",
        bomb=True,
    ),
    Case(
        "pickle-reconstruct-shape",
        _file(lambda: one_pickle(call(_RECONSTRUCT, _NDARRAY, b"(" + op_int(_HUGE) + b"t", op_bytes(b"b")))),
        UnsafePickleError,
        r"refused _reconstruct\(numpy\.ndarray, \(17179869184,\), b'b'\): only numpy's own",
        bomb=True,
    ),
    Case(
        "pickle-state-without-data",
        _file(lambda: one_pickle(array_state((_HUGE,), "u1", b"x"))),
        FileFormatError,
        rf"an array of uint8 \[{_HUGE}\] \({_HUGE} bytes\) with 1 bytes of data",
    ),
    Case(
        "pickle-bytes8-claim",  # BINBYTES8: a length the file does not hold
        _file(lambda: b"\x80\x04\x8e" + struct.pack("<Q", GiB) + b"x" * 16 + b"."),
        FileFormatError,
        rf"truncated or corrupt 1\.x \.tt file \(a pickle\): ValueError: expected {GiB} bytes in a bytes8, "
        r"but only 17 remain",
        bomb=True,
    ),
    Case(
        "pickle-frame-claim",
        _file(lambda: b"\x80\x04\x95" + struct.pack("<Q", 2**40) + b"N."),
        FileFormatError,
        rf"ValueError: a frame of {2**40} bytes where 2 are left",
    ),
    Case(
        "pickle-memo-slot",  # the unpickler sizes its memo table by the slot number
        _file(lambda: b"\x80\x04Nr" + struct.pack("<I", 2**31 - 1) + b"."),
        FileFormatError,
        r"ValueError: memo slot 2147483647 after 3 opcodes",
        bomb=True,
    ),
    Case(
        "pickle-copies-bytes",  # 1 MiB of text, encoded 1024 times
        _file(lambda: copies(op_global("_codecs", "encode"), [op_str("a" * (1 << 20)), op_str("latin1")], 1024)),
        FileFormatError,
        r"_codecs\.encode would make more data than the file holds",
        bomb=True,
    ),
    Case(
        "pickle-copies-list",  # a list of 4096 items, copied 1024 times
        _file(lambda: copies(op_global("__builtin__", "tuple"), [b"](" + b"N" * 4096 + b"e"], 1024)),
        FileFormatError,
        r"tuple would make more data than the file holds",
        bomb=True,
    ),
    Case(
        "pickle-million-sets",  # 1 MB of one-byte EMPTY_SET opcodes: some 500 MB of sets and copies
        _file(lambda: b"\x80\x04](" + b"\x8f" * 1_000_000 + b"e."),
        FileFormatError,
        r"its opcodes \(the objects they push, and the containers they make\) would make more data than the "
        r"file holds \(over \d+ bytes in all, twice the file's size plus 4 MiB\)",
        bomb=True,
    ),
    Case(
        "pickle-empty-lists",
        _file(lambda: b"\x80\x04](" + b"]" * 2_000_000 + b"e."),
        FileFormatError,
        r"its opcodes .* would make more data than the file holds",
        bomb=True,
    ),
    Case(
        "pickle-cycle",
        _file(lambda: pickle.dumps({"w": _cyclic()}, protocol=2)),
        FileFormatError,
        r"obj\['w'\]\[0\] contains itself",
    ),
]


def _cyclic() -> list:
    items: list = []
    items.append(items)
    return items
