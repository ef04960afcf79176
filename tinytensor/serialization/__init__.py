"""Saving and loading: ``save(obj, path)``, ``load(path, map_location=None)`` and ``.tt`` files.

The ``.tt`` format, version 1 (full description: docs/file-format.md) is a ZIP archive, every
member stored uncompressed:

- ``manifest.json``: ``{"magic": "tinytensor", "format_version": 1, "writer": "tinytensor X.Y.Z"}``.
  A reader refuses a file without this magic, and a version newer than it knows.
- ``data.json``: the saved object as a JSON tree. JSON null, true, false, strings, integers,
  floats (written with a fraction or an exponent) and arrays (Python lists) stand for
  themselves; everything else is an object with a ``"type"``: ``tuple``, ``dict`` and
  ``ordered_dict`` (``"items"``: ``[[key, value], ...]``, so keys keep their type, e.g. the int
  parameter ids of an optimizer's state), ``float`` (``"value"``: ``"nan"``, ``"inf"`` or
  ``"-inf"``), and ``tensor`` / ``parameter`` / ``ndarray`` / ``numpy_scalar`` /
  ``device_array``, which name their data member (``"array": "arrays/0.npy"``) with its
  ``"dtype"`` and ``"shape"``, tensors also their ``"device"`` and ``"requires_grad"``.
- ``arrays/N.npy``: one numpy ``.npy`` file per array (little-endian, C order), written and
  read with ``allow_pickle=False``; dtypes bool, int8-64, uint8-64, float16/32/64 (tensors:
  bool, int32, int64, float16/32/64).

Security rule: loading never runs code from a file. The archive holds only JSON and ``.npy``
data; the one pickle ever read is a pytinytensor 1.x ``.tt`` file (a pickle of a dict of numpy
arrays), through an unpickler that admits only the globals rebuilding numpy arrays and plain
containers needs (``legacy_pickle``) and refuses any other by name.

Modules: ``format`` (constants, errors), ``tree`` (objects <-> JSON nodes), ``archive`` (the
ZIP container), ``atomic`` (temporary file, then rename), ``legacy_pickle`` (the 1.x reader),
``legacy`` (1.x state dicts -> this version's layout), ``api`` (the entry points).
"""

from .api import load, load_module, save, save_module
from .format import FORMAT_VERSION, FileFormatError, UnsafePickleError
from .legacy import convert_state as convert_1x_state

__all__ = [
    "FORMAT_VERSION",
    "FileFormatError",
    "UnsafePickleError",
    "convert_1x_state",
    "load",
    "load_module",
    "save",
    "save_module",
]
