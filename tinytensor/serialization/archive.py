"""The ``.tt`` container: a ZIP archive of manifest.json, data.json and arrays/N.npy (format version 1).

``write_archive`` streams an object into an open binary file; ``read_archive`` reads one back.
Every member is stored uncompressed with a fixed timestamp, so the same object always gives the
same bytes. Arrays are written by numpy's ``.npy`` code; reading checks each header against its
node before any data, and never unpickles. Anything wrong with a file becomes a
``FileFormatError`` that names it and the member.
"""

from __future__ import annotations

import collections
import io
import json
import math
import os
import struct
import zipfile
import zlib
from typing import IO, TYPE_CHECKING, NoReturn

import numpy as np

from .._version import __version__
from .format import (
    DATA,
    DATA_LIMIT,
    FORMAT_VERSION,
    MAGIC,
    MANIFEST,
    MANIFEST_LIMIT,
    FileFormatError,
    torch_file_error,
)
from .tree import Decoder, Encoder

if TYPE_CHECKING:
    from .tree import Json, Place

_EPOCH = (1980, 1, 1, 0, 0, 0)  # ZIP's earliest date: reproducible files
_ZIP64_AT = zipfile.ZIP64_LIMIT - (1 << 20)  # leave room for the .npy header


def _member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16  # rw-r--r-- when unzipped
    return info


def write_archive(obj: object, fh: IO[bytes]) -> None:
    """Write ``obj`` into the binary file ``fh`` as a ``.tt`` archive."""
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        manifest: dict[str, Json] = {
            "magic": MAGIC,
            "format_version": FORMAT_VERSION,
            "writer": f"tinytensor {__version__}",
        }
        zf.writestr(_member(MANIFEST), _json_bytes(manifest))

        def write_array(name: str, host: np.ndarray) -> None:
            with zf.open(_member(name), "w", force_zip64=host.nbytes >= _ZIP64_AT) as out:
                np.lib.format.write_array(out, host, allow_pickle=False)

        data = _json_bytes(Encoder(write_array).encode(obj))
        if len(data) > DATA_LIMIT:  # a reader refuses it: never write a file that cannot be loaded
            raise ValueError(
                f"cannot save this object: its {DATA} would be {len(data) / 2**20:.1f} MiB, over the .tt format's "
                f"limit of {DATA_LIMIT >> 20} MiB; store long lists of numbers as numpy arrays or tensors"
            )
        zf.writestr(_member(DATA), data)


def _json_bytes(value: Json) -> bytes:
    # allow_nan=False: NaN and infinities are tagged nodes, never the non-standard JSON tokens.
    text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a file name read with surrogateescape): as a \u escape
        return json.dumps(value, allow_nan=False, ensure_ascii=True, separators=(",", ":")).encode("ascii")


# ---------------------------------------------------------------------------- reading
# Errors that mean "this file is damaged", as opposed to a problem with the request (a device).
# zipfile raises NotImplementedError for a ZIP version or feature it does not know, OverflowError
# for an offset past 2**63. Not MemoryError: as nothing is allocated before its size is checked
# against the file, running out of memory means that the arrays the file holds do not fit (or a
# GPU is full), which the error then says as it is.
_CORRUPTION = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    ValueError,
    KeyError,
    RecursionError,
    NotImplementedError,
    OverflowError,
    struct.error,
)
_UNREADABLE_FLAGS = 0x1 | 0x20 | 0x40  # general purpose bits: encrypted, patched data, strong encryption
_LOCAL_HEADER = 30  # bytes of a local file header before the member's name
_NPY_PREFIX = 16 << 10  # magic, version, length and header: numpy refuses headers over 10,000 bytes
_CHUNK = 1 << 20
_METHODS = {8: "deflate", 9: "deflate64", 12: "bzip2", 14: "lzma", 93: "zstandard", 98: "ppmd", 99: "AES encryption"}


def read_archive(path: str, place: Place, fh: IO[bytes] | None = None) -> object:
    """The object stored in the ``.tt`` archive at ``path`` (or in the open binary file ``fh``, which
    ``path`` then names in errors); ``place`` as in ``tree.Decoder``.

    Nothing is read before it is checked: every member's name, method and size first (the ZIP
    directory), then each JSON member's size, then each ``.npy`` header against its node, so a
    load allocates no more than the arrays the file really holds (docs/file-format.md).
    """
    try:
        zf = zipfile.ZipFile(path if fh is None else fh)
    except zipfile.BadZipFile as exc:
        raise FileFormatError(
            f"{path}: truncated or corrupt .tt file: its ZIP directory (at the end of the file) is missing "
            f"or damaged ({exc})"
        ) from None
    except _CORRUPTION as exc:
        raise FileFormatError(
            f"{path}: truncated or corrupt .tt file: its ZIP directory is damaged ({type(exc).__name__}: {exc})"
        ) from None
    with zf:
        try:
            members = _checked_members(zf, path)
            _check_manifest(zf, members, path)
            root = _read_json(zf, members, DATA, DATA_LIMIT)
            return Decoder(lambda name, dtype, shape: _read_npy(zf, members, name, dtype, shape), place).decode(root)
        except FileFormatError as exc:
            if str(exc).startswith((f"{path}:", f"{path} ")):
                raise
            raise FileFormatError(f"{path}: corrupt .tt file: {exc}") from None
        except _CORRUPTION as exc:
            raise FileFormatError(f"{path}: truncated or corrupt .tt file: {type(exc).__name__}: {exc}") from exc


def _checked_members(zf: zipfile.ZipFile, path: str) -> dict[str, zipfile.ZipInfo]:
    """name -> entry, once the directory shows a .tt file: what it is, then every member's form."""
    infos = zf.infolist()
    names = [info.filename for info in infos]
    if MANIFEST not in names:
        if any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
            raise torch_file_error(path, "a ZIP archive with data.pkl")
        raise FileFormatError(f"{path}: a ZIP archive without {MANIFEST}, so not a tinytensor file")
    seen: set[str] = set()
    for name in names:
        if name in seen:  # zipfile would silently read the last one
            raise FileFormatError(f"{path}: corrupt .tt file: the archive holds {name} more than once")
        seen.add(name)
    end = zf.fp.seek(0, os.SEEK_END)  # type: ignore[union-attr]  # open for reading; zipfile seeks before each read
    for info in infos:
        name = info.filename
        if info.compress_type != zipfile.ZIP_STORED:
            method = _METHODS.get(info.compress_type, "unknown")
            raise FileFormatError(
                f"{path}: {name} is compressed (method {info.compress_type}, {method}); every member of a .tt "
                "file is stored uncompressed (method 0), so this file was not written by tinytensor"
            )
        if info.flag_bits & _UNREADABLE_FLAGS:
            raise FileFormatError(
                f"{path}: {name} is encrypted or patched (ZIP flags {info.flag_bits:#06x}); a .tt file's members never are"
            )
        if info.file_size != info.compress_size:
            raise FileFormatError(
                f"{path}: corrupt .tt file: {name} is stored, yet the ZIP directory gives it {info.compress_size} "
                f"bytes in the file and {info.file_size} bytes of content"
            )
        if info.header_offset + _LOCAL_HEADER + len(info.orig_filename) + info.compress_size > end:
            raise FileFormatError(
                f"{path}: truncated or corrupt .tt file: {name} is said to hold {info.file_size} bytes from "
                f"offset {info.header_offset}, past the end of the file ({end} bytes)"
            )
    _check_layout(zf, infos, path)
    return {info.filename: info for info in infos}


def _check_layout(zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo], path: str) -> None:
    """Each member lies where its local header says, before the ZIP directory, and apart from every
    other: stored members whose data ran over the next ones would let a small file declare many
    times its size in arrays (Python's zipfile checks for overlaps only from 3.12)."""
    fp = zf.fp
    assert fp is not None  # open for reading
    spans = []
    for info in infos:
        fp.seek(info.header_offset)
        local = fp.read(_LOCAL_HEADER)
        if len(local) != _LOCAL_HEADER or local[:4] != b"PK\x03\x04":
            raise FileFormatError(
                f"{path}: corrupt .tt file: {info.filename} has no local header at offset {info.header_offset}"
            )
        name_len, extra_len = struct.unpack_from("<HH", local, 26)
        spans.append(
            (
                info.header_offset,
                info.header_offset + _LOCAL_HEADER + name_len + extra_len + info.compress_size,
                info.filename,
            )
        )
    spans.sort()
    directory = zf.start_dir  # where the ZIP directory begins
    for (start, stop, name), (next_start, _, next_name) in zip(
        spans, [*spans[1:], (directory, 0, "the ZIP directory")]
    ):
        if stop > next_start:
            raise FileFormatError(
                f"{path}: corrupt .tt file: {name} (bytes {start} to {stop}) runs over {next_name}, which starts at "
                f"byte {next_start}; the members of a .tt file never overlap"
            )


def _check_manifest(zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], path: str) -> None:
    manifest = _read_json(zf, members, MANIFEST, MANIFEST_LIMIT)
    fields: dict[str, object] = manifest if type(manifest) is dict else {}
    magic = fields.get("magic")
    if magic != MAGIC:
        raise FileFormatError(f"{path}: {MANIFEST} has the magic {magic!r:.80}, not {MAGIC!r}: not a .tt file")
    version = fields.get("format_version")
    if type(version) is not int or version < 1:
        raise FileFormatError(f"{path}: corrupt .tt file: format_version {version!r:.80} in {MANIFEST}")
    if version > FORMAT_VERSION:
        writer = fields.get("writer", "a newer tinytensor")
        raise FileFormatError(
            f"{path}: written in .tt format version {version} (by {writer!s:.80}); this tinytensor ({__version__}) "
            f"reads format versions up to {FORMAT_VERSION}: upgrade tinytensor to load it"
        )


def _read_json(zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], name: str, limit: int) -> object:
    """The JSON value of member ``name`` (an ``object``: nothing in it is checked yet), if it is at
    most ``limit`` bytes."""
    info = members.get(name)
    if info is None:
        raise FileFormatError(f"the archive has no {name}")
    if info.file_size > limit:
        raise FileFormatError(
            f"{name} is {info.file_size} bytes, over the .tt format's limit of {limit} bytes for it (not read)"
        )

    def refuse_constant(token: str) -> NoReturn:
        raise ValueError(f"the non-standard JSON value {token}")

    def refuse_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
        # JSON leaves a repeated key to the reader: two readers could see two checkpoints
        fields = dict(pairs)
        if len(fields) != len(pairs):
            twice = next(k for k, n in collections.Counter(k for k, _ in pairs).items() if n > 1)
            raise ValueError(f"an object holds the key {twice!r:.80} more than once")
        return fields

    with zf.open(info) as member:
        text = member.read(info.file_size)
    try:
        return json.loads(text.decode("utf-8"), parse_constant=refuse_constant, object_pairs_hook=refuse_duplicates)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise FileFormatError(f"{name} is not valid JSON ({type(exc).__name__}: {exc})") from None


_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _read_npy(
    zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], name: str, dtype: np.dtype, shape: list[int]
) -> np.ndarray:
    """The array in the ``.npy`` member ``name``, in native byte order, once its header shows the
    ``dtype`` and ``shape`` its node gives and a size that matches; read straight into its one buffer."""
    info = members.get(name)
    if info is None:
        raise FileFormatError(f"data.json refers to {name}, which the archive does not hold")
    with zf.open(info) as member:
        prefix = member.read(min(info.file_size, _NPY_PREFIX))
        head = io.BytesIO(prefix)
        try:
            version = np.lib.format.read_magic(head)
            if version not in _NPY_HEADERS:
                raise ValueError(f".npy format version {version[0]}.{version[1]}, where a .tt file uses 1.0 or 2.0")
            got_shape, fortran, got = _NPY_HEADERS[version](head)
        except ValueError as exc:  # a bad magic or header, or one longer than numpy reads
            raise FileFormatError(f"{name}: not a valid .npy header: {exc}") from None
        if not all(type(n) is int and n >= 0 for n in got_shape):  # numpy's check lets True and -1 through
            raise FileFormatError(f"{name}: not a valid .npy header: the shape {got_shape!r:.80} is not whole numbers")
        if got.name != dtype.name or list(got_shape) != shape:
            raise FileFormatError(f"{name} holds {got.name} {list(got_shape)}, data.json says {dtype.name} {shape}")
        if got.newbyteorder("=") != dtype:  # same name, other kind: a structured or subarray dtype
            raise FileFormatError(f"{name}: holds dtype {got}, which a .tt file never holds")
        at = head.tell()
        nbytes = math.prod(got_shape) * got.itemsize
        if info.file_size != at + nbytes:
            raise FileFormatError(
                f"{name} is {info.file_size} bytes, but its header ({at} bytes) declares {got.name} "
                f"{list(got_shape)}: {nbytes} bytes of data"
            )
        flat = np.empty(nbytes, np.uint8)
        buffer = flat.data
        done = len(prefix) - at
        buffer[:done] = prefix[at:]
        while done < nbytes:
            chunk = member.read(min(_CHUNK, nbytes - done))
            if not chunk:
                raise FileFormatError(f"{name} ends after {done} of its {nbytes} bytes of data")
            buffer[done : done + len(chunk)] = chunk
            done += len(chunk)
    array = flat.view(got).reshape(got_shape, order="F" if fortran else "C")
    if not got.isnative:
        array = array.byteswap(inplace=True).view(got.newbyteorder("="))
    return array
