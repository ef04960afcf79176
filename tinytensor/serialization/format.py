"""The constants of the ``.tt`` format (version 1) and the errors a reader raises.

Kept apart from the writer and the reader so that both, the tests and docs/file-format.md name
the same member names, dtypes and version.
"""

from __future__ import annotations

import pickle

import numpy as np
import numpy.typing as npt

from ..dtypes import SUPPORTED

MAGIC = "tinytensor"  # manifest.json's "magic"
FORMAT_VERSION = 1  # the version this code writes, and the newest it reads

MANIFEST = "manifest.json"
DATA = "data.json"
ARRAY_DIR = "arrays/"

ZIP_SIGNATURE = b"PK\x03\x04"  # a ZIP archive's first local file header
PICKLE_PROTO = 0x80  # pickle's PROTO opcode: the first byte of every protocol 2+ pickle
# The first object pickled in a legacy (non-ZIP) torch.save file: torch.serialization.MAGIC_NUMBER.
TORCH_MAGIC = 0x1950A86A20F9469CFC6C
# How that legacy file starts when saved with pickle_protocol 0 or 1 (text opcodes, no PROTO byte).
TORCH_MAGIC_TEXT = f"L{TORCH_MAGIC}L\n".encode()

# The most bytes a JSON member may have; checked before it is read. data.json holds about 170
# bytes per tensor, so 8 MiB leaves room for some 50,000 tensors (several times the largest
# models' checkpoints with their optimizer state), while what reading it costs stays under
# DATA_MEMORY whatever it holds (empty lists cost the most: about 40 bytes of Python objects per
# byte of JSON; the decoder frees the parsed JSON as it builds the objects, so the two are never
# whole at once; test_hostile_files.py measures it). save() refuses to write more.
MANIFEST_LIMIT = 64 << 10
DATA_LIMIT = 8 << 20
DATA_MEMORY = 400 << 20
# The deepest nesting of lists, tuples and dicts a file holds (a state dict is 2 or 3 deep).
# Writer and reader share it: a dict level is three JSON levels, so 100 stays far from where
# Python's JSON parser and the tree's own recursion give up, and whatever save writes, load reads.
DEPTH_LIMIT = 100

# Dtypes a tensor or an array (numpy, CuPy, array_api_strict) can have in a file: every portable
# fixed-size real number and bool, so whatever a tensor holds saves (a uint8 image set included).
# Not object (pickled Python objects), complex, strings, structured, datetime or long double arrays.
ARRAY_DTYPES = SUPPORTED | frozenset(np.dtype(t) for t in ("int8", "int16", "uint8", "uint16", "uint32", "uint64"))


class FileFormatError(ValueError):
    """A file that is not a readable ``.tt`` file: corrupt, truncated, foreign or too new."""


class UnsafePickleError(FileFormatError, pickle.UnpicklingError):
    """A pickle that asks for something a 1.x ``.tt`` file never holds: refused, never run."""


def dtype_named(name: object) -> np.dtype | None:
    """The dtype a node's ``"dtype"`` names (numpy's name: ``"float32"``), if it may be stored."""
    for dtype in ARRAY_DTYPES:
        if dtype.name == name:
            return dtype
    return None


def torch_file_error(path: str, what: str) -> FileFormatError:
    """The refusal of a PyTorch file (``what``: which of torch.save's formats), with the way to convert it."""
    return FileFormatError(
        f"{path} is a PyTorch torch.save file ({what}), which tinytensor does not read: load it with "
        "torch.load and convert its tensors, e.g. {k: tt.from_numpy(v.numpy()) for k, v in "
        "torch.load(path).items()} for a state dict, then tt.save the result"
    )


def dtype_allowed(dtype: npt.DTypeLike) -> bool:
    """Whether a (numpy) dtype may be stored."""
    return np.dtype(dtype).newbyteorder("=") in ARRAY_DTYPES
