"""``save`` and ``load`` (``tt.save``, ``tt.load``), and ``read_state_dict`` behind ``Module.load``.

A file is recognised by its first bytes: a ZIP archive is a ``.tt`` file of this version
(``archive``); a pickle (protocol 2+) can only be a 1.x ``.tt`` file and goes to the allow-list
reader (``legacy_pickle``); anything else is refused. ``map_location`` decides where tensors
(and CuPy or array_api_strict arrays) go; numpy arrays always stay numpy arrays.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import IO, TYPE_CHECKING, Any, TypeAlias, TypeGuard

import numpy as np

from ..array_types import Array
from ..device_names import parse_device
from ..devices import transfer
from ..errors import CudaUnavailableError, DeviceError
from ..tensor import Tensor
from .archive import read_archive, write_archive
from .atomic import write_atomically
from .format import PICKLE_PROTO, TORCH_MAGIC_TEXT, ZIP_SIGNATURE, FileFormatError, torch_file_error
from .legacy_pickle import read_legacy

if TYPE_CHECKING:
    from .tree import Place

# Where save() writes and load() reads: a path, or a binary file object open for it.
FileLike: TypeAlias = "str | bytes | os.PathLike[str] | os.PathLike[bytes] | IO[bytes]"


def save(obj: object, path: FileLike) -> None:
    """Write ``obj`` to ``path`` as a ``.tt`` file (docs/file-format.md), as ``torch.save`` does.

    Parameters
    ----------
    obj : object
        What to save: tensors (their dtype, shape, device and ``requires_grad`` are kept),
        ``Parameter`` objects, numpy arrays and scalars, CuPy and array_api_strict arrays, None,
        bool, int, float, str, and lists, tuples, dicts and OrderedDicts of these (dict keys:
        None, bool, int, float, str or tuples of those). A state dict, an optimizer's state
        dict, or a checkpoint dict of both. A tensor or array met twice is stored once and
        comes back shared.
    path : str, bytes, os.PathLike or binary file object
        The file to write; or a binary file object open for writing (``io.BytesIO``, say),
        into which the archive is written as it is made.

    Raises
    ------
    TypeError
        ``obj`` holds something else (a function, a Module, an arbitrary object, a complex or
        object array, a reference cycle): the message names where it sits, e.g.
        ``obj['layers'][2]``. Also a ``path`` that is neither a path nor a file object.
    ValueError
        So many plain values that the file's ``data.json`` would pass its 8 MiB limit (save
        long series as arrays).
    OSError
        The file cannot be written.

    Notes
    -----
    The write to a path is atomic: the data goes to a temporary file in the same folder, which
    then replaces ``path``, so on any failure the file at ``path`` is unchanged (a file object
    is written in place). A replaced file keeps its permission bits.

    Unlike ``torch.save``, which pickles, only data can be saved: the file never holds code, so
    loading it never runs any. There is no ``pickle_module``, ``pickle_protocol`` or
    ``_use_new_zipfile_serialization``. A module or optimizer is saved by its ``state_dict()``.

    Examples
    --------
    >>> tt.save({"w": tt.ones(2), "epoch": 3}, "checkpoint.tt")
    >>> tt.load("checkpoint.tt")["epoch"]
    3
    """
    if _is_file_object(path, "write"):
        write_archive(obj, path)  # the caller owns the file: no atomic replace
        return
    name = _fspath(path, "save")
    write_atomically(name, lambda fh: write_archive(obj, fh))


def load(path: FileLike, map_location: str | dict[str, str] | None = None) -> Any:
    """The object saved in ``path``, as ``torch.load`` reads one.

    Parameters
    ----------
    path : str, bytes, os.PathLike or binary file object
        A ``.tt`` file (of this version, or of pytinytensor 1.x); or a binary file object open
        for reading, positioned at the start of a saved object (``io.BytesIO``, say).
    map_location : str or dict, optional
        Where tensors (and CuPy and array_api_strict arrays) go. None: back to the device each
        was saved from. A device string (``"cpu"``, ``"cuda:0"``, ``"strict:NAME"``): all of
        them there. A dict of device strings maps saved devices to devices
        (``{"cuda:1": "cuda:0"}``), others staying put. numpy arrays stay numpy arrays.

    Returns
    -------
    object
        What was saved, rebuilt (Any: whatever the file holds). A 1.x file gives its dict of
        numpy arrays.

    Raises
    ------
    FileFormatError
        A damaged, truncated, foreign (PyTorch's included) or too new file; the message names
        the file, the member and the problem.
    UnsafePickleError
        A pickle other than a 1.x ``.tt`` file (it is refused, never run).
    CudaUnavailableError
        A tensor saved on a GPU, where CUDA cannot be used, unless ``map_location`` puts it
        elsewhere (``map_location="cpu"``).
    DeviceError
        A ``map_location`` naming an unknown device.
    TypeError
        A ``map_location`` of another type, or a ``path`` that is neither a path nor a file
        object.

    Notes
    -----
    Nothing in a file is ever run, and nothing is allocated before its size is checked against
    the file, so a load takes the memory of the arrays the file holds plus a small constant.
    Unlike ``torch.load``, there is no ``weights_only`` (loading is always safe: a file holds
    data only), no ``pickle_module`` and no ``mmap``. ``map_location`` is a device string or a
    dict of them, never a function; a ``tt.device`` is a device string.

    Examples
    --------
    >>> tt.save({"w": tt.ones(2), "epoch": 3}, "checkpoint.tt")
    >>> tt.load("checkpoint.tt", map_location="cpu")["w"].device
    device(type='cpu')
    """
    obj, _, _ = _read_from(path, "load", map_location)
    return obj


def read_state_dict(path: object, fn: str) -> tuple[dict[str, Tensor | np.ndarray], bool]:
    """(state dict, whether the file is a 1.x pickle) of a file read on the host, for ``Module.load``
    (a GPU checkpoint loads on a CPU-only machine); anything but a state dict is a TypeError."""
    obj, is_1x, name = _read_from(path, fn, "cpu")
    _check_state_dict(obj, name, "1.x " if is_1x else "")
    return obj, is_1x


# ---------------------------------------------------------------------------- reading
def _read_from(path: object, fn: str, map_location: object) -> tuple[Any, bool, str]:
    """(object, whether the file is a 1.x pickle, the name errors give it) of a file path or a
    binary file object open for reading."""
    if _is_file_object(path, "read"):
        name = str(getattr(path, "name", f"<{type(path).__name__}>"))
        return (*_read_open(name, path, _placer(name, map_location)), name)
    name = _fspath(path, fn)
    return (*_read(name, map_location), name)


def _read(path: str, map_location: object) -> tuple[Any, bool]:
    """(object, whether the file is a 1.x pickle). The object is whatever the file holds: Any."""
    place = _placer(path, map_location)
    with open(path, "rb") as fh:
        return _read_open(path, fh, place)


def _read_open(path: str, fh: IO[bytes], place: Place) -> tuple[Any, bool]:
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
    if TORCH_MAGIC_TEXT.startswith(head) and head + fh.read(len(TORCH_MAGIC_TEXT) - len(head)) == TORCH_MAGIC_TEXT:
        raise torch_file_error(path, "the legacy format, a series of pickles, with pickle protocol 0 or 1")
    raise FileFormatError(
        f"{path}: not a .tt file: it starts with {head!r}, neither a tinytensor archive (a ZIP, b'PK\\x03\\x04') "
        "nor a 1.x pickle (b'\\x80')"
    )


def _placer(path: str, map_location: object) -> Place:
    """``place(host_array, saved_device, where)`` for the decoder, following ``map_location``."""
    mapping: dict[object, object] | None  # saved device -> target device; None: everything goes to map_location
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

    def place(host: np.ndarray, saved: str, where: str) -> Array:
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


def _check_state_dict(obj: object, path: str, era: str) -> None:
    """``obj`` is a state dict (name -> tensor or array), or a TypeError says what it is instead."""
    arrays = (np.ndarray,) if era else (Tensor, np.ndarray)
    if (type(obj) is dict or type(obj) is OrderedDict) and all(
        isinstance(k, str) and isinstance(v, arrays) for k, v in obj.items()
    ):
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


def _is_file_object(value: object, method: str) -> TypeGuard[IO[bytes]]:
    return not isinstance(value, (str, bytes, os.PathLike)) and callable(getattr(value, method, None))


def _fspath(path: object, fn: str) -> str:
    """``path`` as a str, for ``open`` and for messages: a bytes path is decoded as ``os.fsdecode`` does."""
    if isinstance(path, (str, bytes, os.PathLike)):
        try:
            return os.fsdecode(path)
        except TypeError:  # an os.PathLike whose __fspath__ gives neither str nor bytes
            pass
    raise TypeError(
        f"{fn}(): path must be a file path (str, bytes or os.PathLike) or a binary file object, "
        f"got {type(path).__name__}"
    )
