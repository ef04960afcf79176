"""``save`` and ``load`` (``tt.save``, ``tt.load``), and ``read_state_dict`` behind ``Module.load``.

A file is recognised by its first bytes: a ZIP archive is a ``.tt`` file of this version
(``archive``); a pickle (protocol 2+) can only be a 1.x ``.tt`` file and goes to the allow-list
reader (``legacy_pickle``); anything else is refused. ``map_location`` decides where tensors
(and CuPy or array_api_strict arrays) go; numpy arrays always stay numpy arrays.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

import numpy as np

from ..devices import parse_device, transfer
from ..errors import CudaUnavailableError, DeviceError
from ..tensor import Tensor
from .archive import read_archive, write_archive
from .atomic import write_atomically
from .format import PICKLE_PROTO, ZIP_SIGNATURE, FileFormatError
from .legacy_pickle import read_legacy


def save(obj, path) -> None:
    """Write ``obj`` to ``path`` as a ``.tt`` file (docs/file-format.md).

    ``obj`` may hold tensors (dtype, shape, device and requires_grad are kept), numpy arrays and
    scalars, CuPy and array_api_strict arrays, None, bool, int, float, str, and lists, tuples,
    dicts and OrderedDicts of these (keys: None, bool, int, float, str or tuples of those): a
    state dict, an optimizer's state dict, or a checkpoint dict of both. Anything else (a
    function, a Module, an object or complex array) raises TypeError naming where it sits, e.g.
    ``obj['layers'][2]``; so many plain values that the file's ``data.json`` would pass its 16 MiB
    limit, a ValueError (save long series as arrays). The write is atomic: on any failure the file
    at ``path`` is unchanged.
    ``path`` may also be a binary file object open for writing (``io.BytesIO``, as ``torch.save``
    takes); the archive is then written into it as it is made.
    """
    if _is_file_object(path, "write"):
        write_archive(obj, path)  # the caller owns the file: no atomic replace
        return
    path = _fspath(path, "save")
    write_atomically(path, lambda fh: write_archive(obj, fh))


def load(path, map_location=None):
    """The object saved in ``path`` (a ``.tt`` file; 1.x files give their dict of numpy arrays).

    ``map_location``: None puts every tensor back on the device it was saved from; a device
    string (``"cpu"``, ``"cuda:0"``, ``"strict:NAME"``) puts them all there; a dict maps saved
    devices to devices (``{"cuda:1": "cuda:0"}``), others staying put. A tensor saved on a GPU
    raises ``CudaUnavailableError`` where CUDA cannot be used, unless mapped elsewhere.
    Nothing in a file is ever run, and nothing is allocated before its size is checked against the
    file, so a load takes the memory of the arrays the file holds plus a small constant. Damaged,
    foreign (PyTorch's included) and too-new files raise ``FileFormatError`` naming the member and
    the problem, pickles other than 1.x files ``UnsafePickleError``. ``path`` may also be a binary file object
    open for reading, positioned at the start of a saved object (``io.BytesIO``, as ``torch.load``).
    """
    if _is_file_object(path, "read"):
        name = str(getattr(path, "name", f"<{type(path).__name__}>"))
        obj, _ = _read_open(name, path, _placer(name, map_location))
        return obj
    obj, _ = _read(_fspath(path, "load"), map_location)
    return obj


def read_state_dict(path, fn: str) -> tuple[dict, bool]:
    """(state dict, whether the file is a 1.x pickle) of a file read on the host, for ``Module.load``
    (a GPU checkpoint loads on a CPU-only machine); anything but a state dict is a TypeError."""
    path = _fspath(path, fn)
    obj, is_1x = _read(path, "cpu")
    _check_state_dict(obj, path, "1.x " if is_1x else "")
    return obj, is_1x


# ---------------------------------------------------------------------------- reading
def _read(path: str, map_location) -> tuple[Any, bool]:
    """(object, whether the file is a 1.x pickle). The object is whatever the file holds: Any."""
    place = _placer(path, map_location)
    with open(path, "rb") as fh:
        return _read_open(path, fh, place)


def _read_open(path: str, fh, place) -> tuple[Any, bool]:
    """``_read`` from the open binary file ``fh`` (``path`` names it in errors)."""
    start = fh.tell()
    head = fh.read(4)
    if head.startswith(ZIP_SIGNATURE):
        fh.seek(start)
        return read_archive(path, place, fh), False
    if head[:1] == bytes([PICKLE_PROTO]):
        fh.seek(start)
        return read_legacy(path, fh), True
    if not head:
        raise FileFormatError(f"{path}: empty file (0 bytes), not a .tt file")
    raise FileFormatError(
        f"{path}: not a .tt file: it starts with {head!r}, neither a tinytensor archive (a ZIP, b'PK\\x03\\x04') "
        "nor a 1.x pickle (b'\\x80')"
    )


def _placer(path: str, map_location):
    """``place(host_array, saved_device, where)`` for the decoder, following ``map_location``."""
    mapping: dict | None  # saved device -> target device; None: everything goes to map_location
    if map_location is None:
        mapping = {}
    elif isinstance(map_location, str):
        parse_device(map_location)  # a bad device string fails before the file is read
        mapping = None
    elif isinstance(map_location, dict):
        for device in (*map_location.keys(), *map_location.values()):
            parse_device(device)
        mapping = map_location
    else:
        raise TypeError(
            f"load(): map_location must be None, a device string such as 'cpu' or a dict of device strings, "
            f"got {type(map_location).__name__}"
        )

    def place(host: np.ndarray, saved: str, where: str):
        try:
            parse_device(saved)
        except DeviceError:
            raise FileFormatError(f"{where}: unknown device {saved!r}") from None
        target = map_location if mapping is None else mapping.get(saved, saved)
        try:
            return transfer(host, parse_device(target))
        except CudaUnavailableError as exc:
            raise CudaUnavailableError(
                f"{path}: {where} was saved on {saved!r}, but {exc}; to load this file on a machine without "
                "a usable GPU pass map_location='cpu' (tt.load(path, map_location='cpu'); Module.load does so itself)"
            ) from None

    return place


def _check_state_dict(obj, path: str, era: str) -> None:
    """``obj`` is a state dict (name -> tensor or array), or a TypeError says what it is instead."""
    arrays = (np.ndarray,) if era else (Tensor, np.ndarray)
    if type(obj) in (dict, OrderedDict) and all(isinstance(k, str) and isinstance(v, arrays) for k, v in obj.items()):
        return
    if isinstance(obj, dict):
        what = f"a dict with keys {list(obj)[:8]!r}"
    else:
        what = f"a {type(obj).__name__}"
    hint = (
        "load it with tt.load(path); for 1.x layouts tinytensor.nn.convert_1x_state(state, model) "
        "converts one state dict"
        if era
        else "load it with tt.load(path) and pass the model's part to load_state_dict()"
    )
    raise TypeError(
        f"{path} holds {what}, not a {era}model state dict (name -> {'array' if era else 'tensor'}): {hint}"
    )


def _is_file_object(value, method: str) -> bool:
    return not isinstance(value, (str, bytes, os.PathLike)) and callable(getattr(value, method, None))


def _fspath(path, fn: str) -> str:
    try:
        return os.fspath(path)
    except TypeError:
        raise TypeError(
            f"{fn}(): path must be a file path (str or os.PathLike) or a binary file object, got {type(path).__name__}"
        ) from None
