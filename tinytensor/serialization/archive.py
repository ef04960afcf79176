"""The ``.tt`` container: a ZIP archive of manifest.json, data.json and arrays/N.npy (format version 1).

``write_archive`` streams an object into an open binary file; ``read_archive`` reads one back.
Every member is stored uncompressed with a fixed timestamp, so the same object always gives the
same bytes. Arrays are written and read by numpy's ``.npy`` code with ``allow_pickle=False``.
Anything wrong with a file becomes a ``FileFormatError`` that names it.
"""

from __future__ import annotations

import json
import zipfile
import zlib

import numpy as np

from .._version import __version__
from .format import DATA, FORMAT_VERSION, MAGIC, MANIFEST, FileFormatError
from .tree import Decoder, Encoder

_EPOCH = (1980, 1, 1, 0, 0, 0)  # ZIP's earliest date: reproducible files
_ZIP64_AT = zipfile.ZIP64_LIMIT - (1 << 20)  # leave room for the .npy header


def _member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16  # rw-r--r-- when unzipped
    return info


def write_archive(obj, fh) -> None:
    """Write ``obj`` into the binary file ``fh`` as a ``.tt`` archive."""
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        manifest = {"magic": MAGIC, "format_version": FORMAT_VERSION, "writer": f"tinytensor {__version__}"}
        zf.writestr(_member(MANIFEST), _json_bytes(manifest))

        def write_array(name: str, host: np.ndarray) -> None:
            with zf.open(_member(name), "w", force_zip64=host.nbytes >= _ZIP64_AT) as out:
                np.lib.format.write_array(out, host, allow_pickle=False)

        root = Encoder(write_array).encode(obj)
        zf.writestr(_member(DATA), _json_bytes(root))


def _json_bytes(value) -> bytes:
    # allow_nan=False: NaN and infinities are tagged nodes, never the non-standard JSON tokens.
    return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# Errors that mean "this file is damaged", as opposed to a problem with the request (a device).
_CORRUPTION = (zipfile.BadZipFile, zlib.error, EOFError, ValueError, KeyError, UnicodeDecodeError, RecursionError)


def read_archive(path: str, place, fh=None):
    """The object stored in the ``.tt`` archive at ``path`` (or in the open binary file ``fh``, which
    ``path`` then names in errors); ``place`` as in ``tree.Decoder``."""
    try:
        zf = zipfile.ZipFile(path if fh is None else fh)
    except zipfile.BadZipFile as exc:
        raise FileFormatError(
            f"{path}: truncated or corrupt .tt file: its ZIP directory (at the end of the file) is missing "
            f"or damaged ({exc})"
        ) from None
    with zf:
        try:
            _check_manifest(zf, path)
            root = _read_json(zf, DATA)
            return Decoder(lambda name: _read_npy(zf, name), place).decode(root)
        except FileFormatError as exc:
            if str(exc).startswith(f"{path}:"):
                raise
            raise FileFormatError(f"{path}: corrupt .tt file: {exc}") from None
        except _CORRUPTION as exc:
            raise FileFormatError(f"{path}: truncated or corrupt .tt file: {type(exc).__name__}: {exc}") from exc


def _check_manifest(zf: zipfile.ZipFile, path: str) -> None:
    names = zf.namelist()
    if MANIFEST not in names:
        if any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
            what = "a PyTorch checkpoint (torch.save), which tinytensor does not read: load it with torch"
        else:
            what = f"a ZIP archive without {MANIFEST}, so not a tinytensor file"
        raise FileFormatError(f"{path}: {what}")
    manifest = _read_json(zf, MANIFEST)
    magic = manifest.get("magic") if type(manifest) is dict else None
    if magic != MAGIC:
        raise FileFormatError(f"{path}: {MANIFEST} has the magic {magic!r}, not {MAGIC!r}: not a .tt file")
    version = manifest.get("format_version")
    if type(version) is not int or version < 1:
        raise FileFormatError(f"{path}: corrupt .tt file: format_version {version!r} in {MANIFEST}")
    if version > FORMAT_VERSION:
        writer = manifest.get("writer", "a newer tinytensor")
        raise FileFormatError(
            f"{path}: written in .tt format version {version} (by {writer}); this tinytensor ({__version__}) "
            f"reads format versions up to {FORMAT_VERSION}: upgrade tinytensor to load it"
        )


def _read_json(zf: zipfile.ZipFile, name: str):
    def refuse_constant(token):
        raise ValueError(f"the non-standard JSON value {token}")

    with zf.open(name) as member:
        text = member.read()
    try:
        return json.loads(text.decode("utf-8"), parse_constant=refuse_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise FileFormatError(f"{name} is not valid JSON ({type(exc).__name__}: {exc})") from None


def _read_npy(zf: zipfile.ZipFile, name: str) -> np.ndarray:
    try:
        member = zf.open(name)
    except KeyError:
        raise FileFormatError(f"data.json refers to {name}, which the archive does not hold") from None
    with member:
        try:
            return np.lib.format.read_array(member, allow_pickle=False)
        except ValueError as exc:  # a bad header, missing bytes, or an object array (never unpickled)
            raise FileFormatError(f"{name}: {exc}") from None
