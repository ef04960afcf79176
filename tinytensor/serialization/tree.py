"""The object tree of a ``.tt`` file: Python objects <-> JSON nodes (docs/file-format.md, "data.json").

``Encoder`` walks an object and returns its JSON node, handing every array to a callback that
stores it (as ``arrays/N.npy``) the moment it is met, so a failure midway surfaces while the file
is still a temporary one. ``Decoder`` turns nodes back into objects, asking a callback for each
array and another for where it goes. Neither touches files; ``archive`` does.

Only data is admitted: None, bool, int, float (nan and infinities too), str, list, tuple, dict,
OrderedDict (any of the scalar kinds or tuples of them as keys), tensors, numpy arrays and
scalars, CuPy and array_api_strict arrays. Anything else is a TypeError naming where it sits
(``obj['layers'][2]``): a file never holds code, so it can never run any.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from ..devices import backend_of
from ..parameter import Parameter
from ..tensor import Tensor, plain_array, wrap
from .format import ARRAY_DIR, DEPTH_LIMIT, FileFormatError, dtype_allowed, dtype_named

if TYPE_CHECKING:
    from ..array_types import Array

# A JSON value, as data.json holds it.
Json: TypeAlias = "None | bool | int | float | str | list[Json] | dict[str, Json]"
# write_array(member_name, host_array): stores one array as a member.
WriteArray: TypeAlias = "Callable[[str, np.ndarray], None]"
# read_array(member_name, dtype, shape): the member's host array, once checked to hold that dtype and shape.
ReadArray: TypeAlias = "Callable[[str, np.dtype, list[int]], np.ndarray]"
# place(host_array, saved_device, where): the array on its target device (map_location).
Place: TypeAlias = "Callable[[np.ndarray, str, str], Array]"
# Where a node sits: the root's name, or (parent path, key or index); where() spells it out.
NodePath: TypeAlias = "str | tuple[NodePath, object]"

_SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_KEY_TYPES = (type(None), bool, int, float, str)


def _is_device_array(obj: object) -> bool:
    """A CuPy or array_api_strict array (checked by module, so neither library is imported)."""
    return type(obj).__module__.split(".")[0] in ("cupy", "array_api_strict")


def _float_node(value: float) -> float | dict[str, Json]:
    if math.isfinite(value):
        return value
    return {"type": "float", "value": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}


class Encoder:
    """Object -> JSON node. ``write_array(member_name, host_array)`` stores each array once."""

    def __init__(self, write_array: WriteArray):
        self._write_array = write_array
        self._done: dict[int, dict[str, Any]] = {}  # id(tensor or array) -> its node: shared objects stay shared
        self._keep: list[object] = []  # keeps those objects alive, so their ids stay unique
        self._open: set[int] = set()  # containers on the current path: meeting one again is a cycle

    def encode(self, obj: object, path: str = "obj") -> Json:
        """The JSON node of ``obj``, its arrays written as they are met; ``path`` names it in errors."""
        if obj is None or type(obj) is bool or type(obj) is int or type(obj) is str:
            return obj
        if type(obj) is float:
            return _float_node(obj)
        if isinstance(obj, Tensor):
            return self._array_node(obj, path)
        if isinstance(obj, (np.ndarray, np.generic)) or _is_device_array(obj):
            return self._array_node(obj, path)
        if type(obj) in (list, tuple, dict, OrderedDict):
            return self._container_node(obj, path)
        raise TypeError(_unsupported(obj, path))

    # ------------------------------------------------------------------ containers
    def _container_node(self, obj: object, path: str) -> Json:
        if id(obj) in self._open:
            raise TypeError(f"cannot save {path}: it contains itself (a reference cycle)")
        if len(self._open) == DEPTH_LIMIT:  # the containers on the path: this one would be one more
            raise ValueError(
                f"cannot save {_shorten(path)}: lists, tuples and dicts nested more than {DEPTH_LIMIT} deep, "
                "the .tt format's limit"
            )
        self._open.add(id(obj))
        try:
            if type(obj) is list:
                return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
            if type(obj) is tuple:
                return {"type": "tuple", "items": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
            assert isinstance(obj, dict)  # encode() sends a list, a tuple, a dict or an OrderedDict
            kind = "dict" if type(obj) is dict else "ordered_dict"
            items: list[Json] = [[self._key(k, path), self.encode(v, f"{path}[{k!r}]")] for k, v in obj.items()]
            return {"type": kind, "items": items}
        finally:
            self._open.discard(id(obj))

    def _key(self, key: object, path: str) -> Json:
        if type(key) in _KEY_TYPES or (type(key) is tuple and all(type(k) in _KEY_TYPES for k in key)):
            return self.encode(key, path)
        raise TypeError(
            f"cannot save a key of {path}: {type(key).__name__} key {key!r:.60}; dict keys in a tinytensor "
            "file must be None, bool, int, float, str or tuples of those"
        )

    # ------------------------------------------------------------------ arrays
    def _array_node(self, obj: object, path: str) -> dict[str, Any]:
        done = self._done.get(id(obj))
        if done is not None:
            return done
        node: dict[str, Any]  # the file's record of the array: its kind, then name, dtype, shape, ...
        if isinstance(obj, Tensor):
            data = obj._data
            node = {"type": "parameter" if _is_parameter(obj) else "tensor"}
        elif isinstance(obj, np.generic):
            data = np.asarray(obj)
            node = {"type": "numpy_scalar"}
        elif isinstance(obj, np.ndarray):
            data = plain_array(obj)  # a subclass (np.memmap, ...) saves as the ndarray it views
            node = {"type": "ndarray"}
        else:
            data = obj
            node = {"type": "device_array"}
        backend = backend_of(data)
        host = backend.to_numpy(data)
        if not dtype_allowed(host.dtype):
            raise TypeError(
                f"cannot save {path}: {node['type']} of dtype {host.dtype} (a tinytensor file holds bool, "
                "int8/16/32/64, uint8/16/32/64 and float16/32/64 data; never object, complex, string, "
                "structured or long double arrays)"
            )
        # Files are little-endian and C-ordered whatever the array was.
        host = host.astype(host.dtype.newbyteorder("<"), order="C", copy=False)
        name = f"{ARRAY_DIR}{len(self._done)}.npy"
        self._write_array(name, host)
        node.update(array=name, dtype=host.dtype.name, shape=list(host.shape))
        if node["type"] in ("tensor", "parameter", "device_array"):
            node["device"] = backend.device(data)
        if isinstance(obj, Tensor):
            node["requires_grad"] = bool(obj.requires_grad)
        self._done[id(obj)] = node
        self._keep.append(obj)
        return node


def _shorten(path: str) -> str:
    return path if len(path) <= 120 else f"{path[:60]}...{path[-50:]}"


def _is_parameter(t: object) -> bool:
    return isinstance(t, Parameter)


def _unsupported(obj: object, path: str) -> str:
    kind = type(obj)
    what = f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__name__
    if callable(getattr(kind, "state_dict", None)):  # a Module or an optimizer
        hint = "save its state_dict() instead, as model.save(path) does for a model"
    elif callable(obj):
        hint = "functions and other code are never written into a file"
    elif isinstance(obj, complex):
        hint = "complex numbers are not supported"
    elif isinstance(obj, (list, tuple, dict)):
        hint = f"only plain list, tuple, dict and OrderedDict are saved: convert it, e.g. {kind.__bases__[0].__name__}(value)"
    else:
        hint = (
            "a tinytensor file holds None, bool, int, float, str, list, tuple, dict, OrderedDict, tensors and "
            "numpy/CuPy arrays"
        )
    return f"cannot save {path}: {what} is not supported ({hint})"


class Decoder:
    """JSON node -> object.

    ``read_array(member_name, dtype, shape)`` returns the host array of a member once it has
    checked that the member holds that dtype and shape; ``place(host, saved_device, where)`` puts
    a tensor's or device array's data on its target device (map_location). A node's path in the
    object is kept as a chain of (parent, key) pairs and spelled out only for an error message.
    """

    def __init__(self, read_array: ReadArray, place: Place):
        self._read_array = read_array
        self._place = place
        # member -> (node, path, object): shared stays shared
        self._done: dict[str, tuple[dict[str, object], NodePath, object]] = {}
        self._depth = 0  # lists, tuples and dicts around the node being decoded

    def decode(self, node: object, path: NodePath = "obj") -> Any:
        """The object a node read from a file stands for (Any: whatever was saved), once checked;
        a malformed node is a ``FileFormatError`` naming where it sits."""
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is list:
            return self._container(list, node, path)
        fields: dict[str, object] = node if type(node) is dict else {}  # JSON objects have str keys
        kind = fields.get("type")
        if not isinstance(kind, str):
            raise FileFormatError(f"{where(path)}: malformed node {_short(node)}")
        if kind == "float":
            value = fields.get("value")
            if not isinstance(value, str) or value not in _SPECIAL_FLOATS:  # a list would not even hash
                raise FileFormatError(f"{where(path)}: malformed float node {_short(node)}")
            return _SPECIAL_FLOATS[value]
        if kind == "tuple":
            return self._container(tuple, _items(fields, path), path)
        if kind in ("dict", "ordered_dict"):
            return self._container(dict if kind == "dict" else OrderedDict, fields, path)
        if kind in ("tensor", "parameter", "ndarray", "numpy_scalar", "device_array"):
            return self._array(fields, path)
        raise FileFormatError(f"{where(path)}: unknown node type {kind!r:.80}")

    def _container(self, cls: type[Any], content: Any, path: NodePath) -> Any:
        """A list or tuple of the nodes ``content``, or a dict of the node ``content``, one level deeper."""
        if self._depth == DEPTH_LIMIT:
            raise FileFormatError(
                f"{_shorten(where(path))}: lists, tuples and dicts nested more than {DEPTH_LIMIT} deep, "
                "the .tt format's limit"
            )
        self._depth += 1
        try:
            if issubclass(cls, dict):
                return self._mapping(content, path, cls)
            return cls(self.decode(v, (path, i)) for i, v in _consumed(content))
        finally:
            self._depth -= 1

    def _mapping(self, node: dict[str, object], path: NodePath, cls: type[dict[Any, Any]]) -> dict[Any, Any]:
        out = cls()
        for _, pair in _consumed(_items(node, path)):
            if type(pair) is not list or len(pair) != 2:
                raise FileFormatError(f"{where(path)}: a dict item must be a [key, value] pair, got {_short(pair)}")
            key = self.decode(pair[0], (path, KEY))
            try:
                hash(key)
            except TypeError:
                raise FileFormatError(f"{where(path)}: unhashable dict key {_short(pair[0])}") from None
            out[key] = self.decode(pair[1], (path, key))
        return out

    def _array(self, node: dict[str, object], path: NodePath) -> object:
        name = node.get("array")
        kind = node["type"]
        if not isinstance(name, str):
            raise FileFormatError(f"{where(path)}: {kind} node without an array member name")
        out: object
        done = self._done.get(name)
        if done is not None:
            first, first_path, out = done
            if node != first:  # one member, one object: its nodes must agree
                raise FileFormatError(
                    f"{where(path)}: {name} is also {where(first_path)}, whose node says otherwise: "
                    f"{_short(node)} against {_short(first)}"
                )
            return out
        dtype = dtype_named(node.get("dtype"))
        if dtype is None:
            raise FileFormatError(f"{where(path)}: a {kind} node with the dtype {node.get('dtype')!r:.40}")
        shape = node.get("shape")
        if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
            raise FileFormatError(f"{where(path)}: a {kind} node with the shape {shape!r:.80}")
        if kind == "numpy_scalar" and shape:
            raise FileFormatError(f"{where(path)}: a numpy_scalar must be 0-d, {name} has shape {tuple(shape)}")
        try:
            host = self._read_array(name, dtype, shape)
        except FileFormatError as exc:
            raise FileFormatError(f"{where(path)}: {exc}") from None
        if kind == "ndarray":
            out = host
        elif kind == "numpy_scalar":
            out = host[()]
        else:
            device = node.get("device")
            if not isinstance(device, str):
                raise FileFormatError(f"{where(path)}: {kind} node without a device")
            data = self._place(host, device, where(path))
            out = data if kind == "device_array" else self._tensor(data, node, path, dtype)
        self._done[name] = (node, path, out)
        return out

    def _tensor(self, data: Array, node: dict[str, object], path: NodePath, dtype: np.dtype) -> Tensor:
        """A tensor (or Parameter) of ``data``, ``dtype`` being the one its node names."""
        requires_grad = node.get("requires_grad")
        if type(requires_grad) is not bool:
            raise FileFormatError(f"{where(path)}: tensor node without a true/false requires_grad")
        if requires_grad and dtype.kind != "f":
            raise FileFormatError(f"{where(path)}: a tensor of dtype {dtype.name} cannot require grad")
        if node["type"] == "parameter":
            return Parameter(wrap(data), requires_grad=requires_grad)
        t = wrap(data)
        t.requires_grad = requires_grad
        return t


KEY = object()  # the path step from a dict to one of its keys (where() writes it ' key')


def where(path: NodePath) -> str:
    """``obj['layers'][2]`` from a path: the root's name, or a (parent path, key or index) pair."""
    steps: list[str] = []
    while type(path) is tuple:
        path, step = path
        steps.append(" key" if step is KEY else f"[{_short(step)}]")
    return str(path) + "".join(reversed(steps))


def _consumed(nodes: list[object]) -> Iterator[tuple[int, object]]:
    """``enumerate(nodes)``, each node dropped from the list once it is handed out: the parsed JSON
    is freed as its objects are made, so the two are never whole at once (decoding is a one-time
    pass over a tree that nothing else holds)."""
    for i in range(len(nodes)):
        node, nodes[i] = nodes[i], None
        yield i, node


def _items(node: dict[str, object], path: NodePath) -> list[object]:
    items = node.get("items")
    if type(items) is not list:
        raise FileFormatError(f"{where(path)}: {node['type']} node without an items list")
    return items


def _short(node: object) -> str:
    text = repr(node)
    return text if len(text) <= 80 else text[:77] + "..."
