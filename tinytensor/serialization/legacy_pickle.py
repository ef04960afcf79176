"""Reading 1.x ``.tt`` files (pickles of dicts of numpy arrays) without ever running code from them.

Three guards, each before anything is built:

- a scan of the opcodes (``pickletools``): every length the file declares (bytes, strings,
  frames) must fit in what is left of the file, and memo slots are numbered as picklers number
  them, so the unpickler never allocates a size that the file only claims;
- an allow-list of globals, each through a stand-in that checks its arguments; every other
  global is refused by name before it is imported or called. No stand-in allocates a size taken
  from the file: an array is built only by numpy's reconstruction path
  (``_reconstruct(ndarray, (0,), b'b')``, then ``__setstate__``) from data present in the file,
  once that data's length matches the shape and dtype it declares;
- a budget: what the opcodes cost (objects, containers and the resolver's copies of them, as
  the scan counts them) and what the stand-ins build (bytes, array data, container items) add up
  to at most twice the file's size plus ``BUDGET_CONSTANT``, so neither data the pickle refers
  to many times nor a flood of one-byte opcodes can make much more than the file holds.

The result is then walked once (shared parts once) and only data comes back.
docs/file-format.md lists the allowed globals.
"""

from __future__ import annotations

import bisect
import io
import math
import pickle
import pickletools
from collections import OrderedDict
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, NoReturn, cast

import numpy as np

from .format import ARRAY_DTYPES, TORCH_MAGIC, FileFormatError, UnsafePickleError, torch_file_error
from .tree import KEY, where

if TYPE_CHECKING:
    from .tree import NodePath

# What a 1.x file may make, beyond twice its size: the objects a state dict's pickle needs.
BUDGET_CONSTANT = 4 << 20

_REFUSAL = (
    "tinytensor never runs code from a file, so it reads a pickle only when it is a 1.x .tt file "
    "(numpy arrays in dicts, lists and tuples)"
)


def read_legacy(path: str, fh: IO[bytes]) -> object:
    """The object in a 1.x ``.tt`` file, read from the open binary file ``fh``; ``path`` names it in errors."""
    start = fh.tell()
    size = fh.seek(0, io.SEEK_END) - start
    fh.seek(start)
    try:
        scanned = _Bounded(fh, size)
        budget = _Budget(2 * size + BUDGET_CONSTANT)
        _scan(scanned, budget)
        fh.seek(start)
        obj = _AllowListUnpickler(cast("IO[bytes]", _Rescanned(fh, scanned.kept)), budget).load()
    except UnsafePickleError as exc:
        raise UnsafePickleError(f"{path}: {exc}") from None
    except FileFormatError as exc:
        raise FileFormatError(f"{path}: corrupt 1.x .tt file (a pickle): {exc}") from None
    except MemoryError:  # the scan and the budget leave only the data the file really holds
        raise
    except Exception as exc:  # noqa: BLE001 - any failure inside a damaged pickle is a damaged file
        raise FileFormatError(
            f"{path}: truncated or corrupt 1.x .tt file (a pickle): {type(exc).__name__}: {exc}"
        ) from None
    if type(obj) is int and obj == TORCH_MAGIC:
        raise torch_file_error(path, "the legacy format, a series of pickles")
    try:
        return _Resolver().resolve(obj, "obj")
    except UnsafePickleError as exc:
        raise UnsafePickleError(f"{path}: {exc}") from None
    except FileFormatError as exc:
        raise FileFormatError(f"{path}: corrupt 1.x .tt file (a pickle): {exc}") from None
    except RecursionError:
        raise FileFormatError(f"{path}: corrupt 1.x .tt file (a pickle): nested too deeply") from None


# ---------------------------------------------------------------------------- the opcode scan
class _Bounded:
    """The file, for ``pickletools``: a read never asks for more than is left, so a length that
    the file only declares fails the scan's own length check instead of being allocated.

    Keeps what the scan read of the pickle's structure (opcodes, lengths, memo slots and small
    arguments: every read but the long ones, which only the data of bytes and strings takes), so
    that the unpickler can be held to it (``_Rescanned``)."""

    _ARGUMENT_MAX = 8  # the longest fixed-size argument: an 8-byte length or float

    def __init__(self, fh: IO[bytes], size: int):
        self._fh, self.left = fh, size
        self.kept = _Kept(fh.tell())

    def read(self, n: int) -> bytes:
        data = self._fh.read(min(n, self.left))
        self.kept.add(data, keep=len(data) <= self._ARGUMENT_MAX)
        self.left -= len(data)
        return data

    def readline(self) -> bytes:  # the text arguments of protocols 0 and 1
        line = self._fh.readline(self.left)
        self.kept.add(line, keep=True)
        self.left -= len(line)
        return line

    def tell(self) -> int:
        return self._fh.tell()


class _Kept:
    """Bytes read at known places of the file: ``runs`` of (offset, length, where in ``data``)."""

    def __init__(self, start: int):
        self.end = start  # where the next read begins
        self.data = bytearray()
        self.runs: list[tuple[int, int, int]] = []

    def add(self, data: bytes, keep: bool) -> None:
        if keep and data:
            if self.runs and sum(self.runs[-1][:2]) == self.end:  # continues the last run
                offset, length, at = self.runs[-1]
                self.runs[-1] = (offset, length + len(data), at)
            else:
                self.runs.append((self.end, len(data), len(self.data)))
            self.data += data
        self.end += len(data)


class _Rescanned:
    """The file again, for the unpickler, which allocates the lengths it reads before it reads what
    they count. A file that changed after the scan (rewritten in place, appended to, or a file
    object that answers differently) could declare a length the scan never checked; each read here
    is compared with what the scan kept of the structure before the unpickler sees it, and nothing
    past what was scanned is handed out. The data of bytes and strings is not compared: whatever
    it holds, the allow-list's stand-ins check it when it is used, and no copy of it is kept."""

    def __init__(self, fh: IO[bytes], kept: _Kept):
        self._fh, self._kept = fh, kept
        self._pos = fh.tell()

    def read(self, n: int) -> bytes:
        data = self._fh.read(max(0, min(n, self._kept.end - self._pos)))
        self._check(data)
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:
        # straight into the unpickler's buffer: a copy here would hold an array's data twice
        out = memoryview(buffer).cast("B")[: max(0, self._kept.end - self._pos)]
        readinto = getattr(self._fh, "readinto", None)  # the file object given to load may have none
        if readinto is None:
            data = self._fh.read(len(out))
            out[: len(data)] = data
            n = len(data)
        else:
            n = readinto(out) or 0
        self._check(out[:n])
        return n

    def readline(self) -> bytes:
        line = self._fh.readline(max(0, self._kept.end - self._pos))
        self._check(line)
        return line

    def _check(self, data: bytes | memoryview) -> None:
        start, end = self._pos, self._pos + len(data)
        runs, kept, seen = self._kept.runs, memoryview(self._kept.data), memoryview(data)
        i = max(0, bisect.bisect_right(runs, (start, math.inf)) - 1)
        while i < len(runs) and runs[i][0] < end:
            offset, length, at = runs[i]
            lo, hi = max(offset, start), min(offset + length, end)
            if lo < hi and seen[lo - start : hi - start] != kept[at + lo - offset : at + hi - offset]:
                raise FileFormatError(
                    f"the file changed while it was read: its bytes at offset {lo} differ from those checked"
                )
            i += 1
        self._pos = end


_MEMO_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})


# What unpickling costs beyond the data the stand-ins build (charged to the same budget): every
# opcode may push an object, a memo entry or a stack slot, and those that make a container (or
# call a stand-in, which makes one) make an object of up to about 230 bytes that the resolver
# then copies. A byte-long opcode can thus cost some 500 bytes: 1,000,000 empty sets in 1 MB.
_OPCODE_COST = 96
_CONTAINER_COST = 768
_CONTAINER_OPS = frozenset(
    {"EMPTY_DICT", "EMPTY_LIST", "EMPTY_SET", "DICT", "LIST", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "FROZENSET",
     "REDUCE", "NEWOBJ", "NEWOBJ_EX", "OBJ", "INST", "BUILD"}
)  # fmt: skip


def _scan(stream: _Bounded, budget: _Budget) -> None:
    """Walk the opcodes up to STOP: pickletools checks each argument's length against the file.
    What unpickling them costs beyond the data they carry (``_OPCODE_COST``) is spent from
    ``budget``; a file over it is refused as soon as it is (a flood of opcodes is not walked whole)."""
    cost, what = 0, "its opcodes (the objects they push, and the containers they make)"
    # pickletools needs only read, readline and tell
    for ops, (op, arg, _) in enumerate(pickletools.genops(cast("IO[bytes]", stream)), 1):
        if op.name == "FRAME" and isinstance(arg, int) and arg > stream.left:
            raise ValueError(f"a frame of {arg} bytes where {stream.left} are left")
        if op.name in _MEMO_PUTS and isinstance(arg, int) and not 0 <= arg <= ops:  # picklers count 0, 1, 2, ...
            raise ValueError(f"memo slot {arg} after {ops} opcodes")
        cost += _CONTAINER_COST if op.name in _CONTAINER_OPS else _OPCODE_COST
        if cost > budget.left:
            break  # refused below, without reading the rest
    budget.spend(cost, what)


# ---------------------------------------------------------------------------- the allow-list
class _Budget:
    """How much more the stand-ins may build, in bytes and container items."""

    def __init__(self, left: int):
        self.left = self.limit = left

    def spend(self, n: int, what: str) -> None:
        if n > self.left:
            raise FileFormatError(
                f"{what} would make more data than the file holds (over {self.limit} bytes in all, twice the "
                f"file's size plus {BUDGET_CONSTANT >> 20} MiB)"
            )
        self.left -= n


class _Refused:
    """``numpy.ndarray`` as a global: only ``_reconstruct``'s first argument, never called."""

    def __repr__(self) -> str:
        return "numpy.ndarray"

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        raise UnsafePickleError(
            f"refused to call numpy.ndarray{_args(args)}: a 1.x file builds arrays only through numpy's "
            f"_reconstruct, from data it holds; {_REFUSAL}"
        )


_NDARRAY = _Refused()


class _PendingArray:
    """What ``_reconstruct`` returns: BUILD (``__setstate__``) brings numpy's state, which is checked
    against the data present before numpy builds the array. ``_Resolver`` swaps in the array."""

    __slots__ = ("_budget", "array")

    def __init__(self, budget: _Budget):
        self._budget = budget
        self.array: np.ndarray | None = None

    def __setstate__(self, state: object) -> None:
        if self.array is not None or type(state) is not tuple or len(state) != 5:
            raise FileFormatError(f"an array's state {_args(state)}")
        fields: tuple[object, ...] = state  # from the file: each is checked below
        version, given_shape, given_dtype, fortran, data = fields
        dtype, shape = _canonical(given_dtype), _shape(given_shape)
        if version != 1 or type(fortran) is not bool or type(data) is not bytes:
            raise FileFormatError(f"an array's state {_args(state)}")
        nbytes = math.prod(shape) * dtype.itemsize
        if len(data) != nbytes:
            raise FileFormatError(
                f"an array of {dtype.name} {list(shape)} ({nbytes} bytes) with {len(data)} bytes of data"
            )
        self._budget.spend(nbytes, f"an array of {dtype.name} {list(shape)}")
        array = np.ndarray((0,), np.uint8)  # what numpy's _reconstruct(ndarray, (0,), b"b") returns
        array.__setstate__((1, shape, dtype, fortran, data))  # type: ignore[arg-type]  # numpy's stubs want np.bool
        self.array = array


def _args(args: object) -> str:
    text = repr(args)
    return text if len(text) <= 60 else text[:57] + "..."


def _canonical(dtype: object) -> np.dtype:
    """The allowed dtype ``dtype`` stands for, as numpy makes it: a pickle's BUILD can change a
    dtype object's insides (fields, subarrays) without changing how it compares."""
    if isinstance(dtype, np.dtype):
        native = dtype.newbyteorder("=")
        for allowed in ARRAY_DTYPES:
            if native == allowed:
                return allowed.newbyteorder(dtype.byteorder)
    what = dtype if isinstance(dtype, np.dtype) else _args(dtype)
    raise UnsafePickleError(f"refused an array of dtype {what}: {_REFUSAL}")


def _shape(shape: object) -> tuple[int, ...]:
    if type(shape) is not tuple or not all(type(n) is int and n >= 0 for n in shape):
        raise FileFormatError(f"an array of shape {_args(shape)}")
    return shape


def _dtype(budget: _Budget, spec: object, align: object = False, copy: object = False) -> np.dtype:
    # The spec is a short code such as "f4" or "O8"; the byte order comes later from BUILD, on a
    # copy (copy=True), never on numpy's shared dtype objects.
    if type(spec) is not str:
        raise UnsafePickleError(f"refused numpy.dtype({_args(spec)}): {_REFUSAL}")
    return np.dtype(_canonical(np.dtype(spec)), copy=True)


def _reconstruct(budget: _Budget, subtype: object, shape: object, typecode: object) -> _PendingArray:
    # numpy pickles an array as _reconstruct(ndarray, (0,), b"b") followed by BUILD(state).
    if subtype is not _NDARRAY or type(shape) is not tuple or shape != (0,) or typecode not in (b"b", "b"):
        raise UnsafePickleError(
            f"refused _reconstruct{_args((subtype, shape, typecode))}: only numpy's own "
            f"_reconstruct(numpy.ndarray, (0,), b'b') is read; {_REFUSAL}"
        )
    return _PendingArray(budget)


def _frombuffer(budget: _Budget, buffer: object, given_dtype: object, given_shape: object, order: object) -> np.ndarray:
    # Protocol 5: numpy.frombuffer on the pickle's own bytes, which it views without a copy.
    dtype, shape = _canonical(given_dtype), _shape(given_shape)
    if not (type(buffer) is bytes or type(buffer) is bytearray) or order not in ("C", "F"):
        raise FileFormatError(f"_frombuffer{_args((buffer, dtype, shape, order))}")
    nbytes = math.prod(shape) * dtype.itemsize
    if len(buffer) != nbytes:
        raise FileFormatError(f"an array of {dtype.name} {list(shape)} ({nbytes} bytes) with {len(buffer)} bytes")
    return np.frombuffer(buffer, dtype=dtype).reshape(shape, order=order)


def _scalar(budget: _Budget, given_dtype: object, data: object = b"") -> np.generic:
    dtype = _canonical(given_dtype)
    if type(data) is not bytes or len(data) != dtype.itemsize:
        raise FileFormatError(f"a numpy scalar of dtype {dtype} with {_args(data)} as data")
    scalar: np.generic = np.frombuffer(data, dtype=dtype)[0]
    return scalar


def _latin1_encode(budget: _Budget, text: object, encoding: object = "utf-8") -> bytes:
    # Protocol 2 stores bytes as _codecs.encode(text, "latin1").
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise UnsafePickleError(f"refused _codecs.encode(..., {encoding!r:.20}): {_REFUSAL}")
    budget.spend(len(text), "_codecs.encode")
    return text.encode("latin-1")


def _bytes(budget: _Budget, *args: object) -> bytes:
    # Protocol 2 stores b"" as bytes(); any other call would allocate a size from the file.
    if args:
        raise UnsafePickleError(f"refused bytes{_args(args)}: a 1.x file calls only bytes(); {_REFUSAL}")
    return b""


def _bytearray(budget: _Budget, *args: object) -> bytearray:
    # Protocols 2 to 4 store a bytearray as bytearray(its bytes); bytearray(n) would allocate n.
    if args == ():
        return bytearray()
    if len(args) != 1 or type(args[0]) is not bytes:
        raise UnsafePickleError(f"refused bytearray{_args(args)}: a 1.x file calls only bytearray(bytes); {_REFUSAL}")
    budget.spend(len(args[0]), "bytearray")
    return bytearray(args[0])


def _copy(cls: type[Any]) -> Callable[..., object]:
    """A container type as a global: ``cls()`` or ``cls(items)`` from a list or tuple of the file's.
    (``type[Any]``: dict, list, tuple, set, frozenset or OrderedDict, which share no constructor type.)"""

    def build(budget: _Budget, *args: object) -> object:
        if args == ():
            return cls()
        if len(args) != 1 or not (type(args[0]) is list or type(args[0]) is tuple):
            raise UnsafePickleError(f"refused {cls.__name__}{_args(args)}: {_REFUSAL}")
        budget.spend(8 * len(args[0]), cls.__name__)  # a pointer per item
        return cls(args[0])

    return build


def _cupy_array_on_host(budget: _Budget, array: object, *args: object) -> object:
    # cupy.ndarray.__reduce__ is (cupy._core.core.array, (self.get(),)): a host numpy array.
    if type(array) not in (_PendingArray, np.ndarray):
        raise UnsafePickleError(f"refused a CuPy array built from {type(array).__name__}: {_REFUSAL}")
    return array


_ALLOWED: dict[tuple[str, str], Callable[..., object]] = {
    ("numpy", "dtype"): _dtype,
    ("_codecs", "encode"): _latin1_encode,
    ("builtins", "bytes"): _bytes,
    ("builtins", "bytearray"): _bytearray,
    ("collections", "OrderedDict"): _copy(OrderedDict),
    **{("builtins", c.__name__): _copy(c) for c in (dict, list, tuple, set, frozenset)},
    **{(f"{core}.multiarray", "_reconstruct"): _reconstruct for core in ("numpy._core", "numpy.core")},
    **{(f"{core}.multiarray", "scalar"): _scalar for core in ("numpy._core", "numpy.core")},
    **{(f"{core}.numeric", "_frombuffer"): _frombuffer for core in ("numpy._core", "numpy.core")},
    **{(f"{core}.core", "array"): _cupy_array_on_host for core in ("cupy._core", "cupy.core")},
}
_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}  # protocol 2 writes Python 2 names


class _AllowListUnpickler(pickle.Unpickler):
    def __init__(self, fh: IO[bytes], budget: _Budget):
        super().__init__(fh)
        self._budget = budget

    def find_class(self, module: str, name: str) -> Callable[..., object]:
        module = _PY2_MODULES.get(module, module)
        if (module, name) == ("numpy", "ndarray"):
            return _NDARRAY
        found = _ALLOWED.get((module, name))
        if found is None:
            raise UnsafePickleError(f"refused to load the global {module}.{name}: {_REFUSAL}")
        budget = self._budget
        return lambda *args: found(budget, *args)

    def persistent_load(self, pid: object) -> NoReturn:
        raise UnsafePickleError(f"refused a persistent id (an external object reference): {_REFUSAL}")


# ---------------------------------------------------------------------------- the result
_CONTAINERS = (dict, OrderedDict, list, tuple, set, frozenset)
_SCALARS = (type(None), bool, int, float, str, bytes, bytearray)


class _Resolver:
    """The unpickled object with arrays in place of ``_PendingArray``: only containers, plain
    scalars and bool/integer/float numpy arrays and scalars, each shared object visited once."""

    def __init__(self) -> None:
        self._done: dict[int, object] = {}  # id -> result: what the pickle shares stays shared
        self._open: set[int] = set()  # containers on the current path: meeting one again is a cycle

    def resolve(self, obj: object, path: NodePath) -> object:
        """``obj`` with its arrays in place, once it is checked to hold only data."""
        kind = type(obj)
        if kind in _SCALARS:
            return obj
        if type(obj) is _PendingArray:
            if obj.array is None:
                raise FileFormatError(f"{where(path)}: an array without its data")
            return obj.array
        if type(obj) is np.ndarray or isinstance(obj, np.generic):
            if obj.dtype.newbyteorder("=") not in ARRAY_DTYPES:
                raise UnsafePickleError(f"refused {where(path)}, an array of dtype {obj.dtype}: {_REFUSAL}")
            return obj
        if kind not in _CONTAINERS:
            raise UnsafePickleError(f"refused {where(path)}, a {kind.__module__}.{kind.__qualname__}: {_REFUSAL}")
        if id(obj) in self._done:
            return self._done[id(obj)]
        if id(obj) in self._open:
            raise FileFormatError(f"{where(path)} contains itself")
        self._open.add(id(obj))
        out: object
        if isinstance(obj, dict):
            out = type(obj)((self._key(k, path), self.resolve(v, (path, k))) for k, v in obj.items())
        elif isinstance(obj, (set, frozenset)):
            out = type(obj)(self._key(v, path) for v in obj)
        else:
            assert isinstance(obj, (list, tuple))  # the one kind of _CONTAINERS left
            out = type(obj)(self.resolve(v, (path, i)) for i, v in enumerate(obj))
        self._open.discard(id(obj))
        self._done[id(obj)] = out
        return out

    def _key(self, key: object, path: NodePath) -> object:
        key = self.resolve(key, (path, KEY))
        try:
            hash(key)
        except TypeError:
            raise FileFormatError(f"{where(path)}: an unhashable key, {_args(key)}") from None
        return key
