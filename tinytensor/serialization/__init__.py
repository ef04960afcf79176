"""Saving and loading: ``save(obj, path)``, ``load(path, map_location=None)`` and ``.tt`` files.

A ``.tt`` file is a ZIP archive of stored members: ``manifest.json`` (magic and format version),
``data.json`` (the saved object as a JSON tree) and one ``.npy`` file per array; docs/file-format.md
describes it. Loading never runs code from a file: the one pickle ever read is a pytinytensor 1.x
file, through an allow-list unpickler. Nor does it allocate a size that a file only declares:
every size is checked against the bytes the file holds first, so a load's memory is the file's
arrays plus a small constant.

Modules: ``format`` (constants, errors), ``tree`` (objects <-> JSON nodes), ``archive`` (the
ZIP container), ``atomic`` (temporary file, then rename), ``legacy_pickle`` (the 1.x reader),
``api`` (the entry points). Converting a 1.x state dict to this version's layout is nn's
(``nn.convert_1x_state``): each layer knows its own.
"""

from .api import load, read_state_dict, save
from .format import FORMAT_VERSION, FileFormatError, UnsafePickleError

__all__ = [
    "FORMAT_VERSION",
    "FileFormatError",
    "UnsafePickleError",
    "load",
    "read_state_dict",
    "save",
]
