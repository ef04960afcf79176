"""``default_collate``: a list of samples -> one batch, with PyTorch's rules.

Tensors and arrays are stacked along a new axis 0 on their own device; Python numbers become a
CPU tensor (bool -> bool, int -> int64, float -> float64, as PyTorch does); numpy scalars keep
their dtype; strings stay a list. Tuples and lists are collated field by field and give a list
(a namedtuple keeps its type), dicts key by key. Stacking copies, so a batch never shares memory
with the samples it came from, and it is detached from any autograd graph.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from ..array_types import Array
from ..devices import backend_of
from ..dtypes import DEFAULT_FLOAT
from ..errors import DeviceError, ShapeError
from ..tensor import Tensor, is_array, plain_array, wrap

if TYPE_CHECKING:
    # A DataLoader's collate_fn: the samples of a batch (whatever the dataset returns) -> the batch.
    CollateFn: TypeAlias = Callable[[list[Any]], Any]


def default_collate(samples: Iterable[object]) -> Any:
    """Merge a non-empty list of samples, all of one structure, into a batch.

    As ``torch.utils.data.default_collate``, which a ``DataLoader`` uses unless it is given a
    ``collate_fn``.

    Parameters
    ----------
    samples : iterable
        The samples of one batch, e.g. ``[dataset[i] for i in indices]``. Each is a Tensor, an
        array, a number, a string, or a tuple, list or dict of those (nested as deep as need be),
        and all have the same structure.

    Returns
    -------
    batch
        The samples merged: Tensors and arrays stacked along a new axis 0 into one Tensor on
        their device; Python numbers into a CPU Tensor (bool, int64, or float64 as PyTorch
        gives); numpy scalars into a Tensor of their dtype; strings and bytes into a list.
        Tuples and lists give a list of the collated fields (a namedtuple keeps its type), dicts
        a dict of the collated values (another mapping type keeps its type where it can be
        built from a dict). Stacking copies: the batch shares no memory with the samples and is
        detached from any autograd graph.

    Raises
    ------
    ValueError
        ``samples`` is empty, or the samples' dicts have different keys or their sequences
        different lengths.
    ShapeError
        Tensors or arrays to be stacked have different shapes.
    DeviceError
        Tensors or arrays to be stacked are on different devices.
    TypeError
        A sample holds a type that cannot be collated, or the samples mix types at one place.

    Notes
    -----
    Unlike PyTorch, which moves everything to CPU tensors, a batch of GPU Tensors or CuPy or
    array_api_strict arrays is stacked on their own device.
    """
    items = list(samples)
    if not items:
        raise ValueError("default_collate: got an empty list of samples")
    return _collate(items, "samples")


def _collate(items: Sequence[object], path: str) -> Any:
    first = items[0]
    if isinstance(first, Tensor) or is_array(first):
        return wrap(_stack([_array_of(x, k, path) for k, x in enumerate(items)], path))
    if isinstance(first, np.generic):
        return wrap(np.asarray(items))  # numpy scalars keep their dtype, as torch.as_tensor does
    if isinstance(first, numbers.Real):
        return wrap(_numbers(items, path))
    if isinstance(first, (str, bytes)):
        return list(items)
    if isinstance(first, Mapping):
        return _collate_mapping(first, items, path)
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple keeps its type
        make: Callable[..., object] = type(first)  # a namedtuple class takes its fields as arguments
        return make(*_collate_fields(first, items, path))
    if isinstance(first, Sequence):
        return _collate_fields(first, items, path)
    raise TypeError(
        f"default_collate: {path} hold a {type(first).__name__} (sample 0); samples may hold Tensors, arrays, "
        "numbers, strings, and tuples, lists or dicts of them"
    )


def _array_of(value: object, k: int, path: str) -> Array:
    if isinstance(value, Tensor):
        return value._data
    if is_array(value):
        return plain_array(value)
    raise TypeError(
        f"default_collate: {path} mix types: an array or Tensor in sample 0, a {type(value).__name__} in sample {k}"
    )


def _stack(arrays: Sequence[Array], path: str) -> Array:
    """One new array: the inputs stacked along axis 0 on their (common) device."""
    backend = backend_of(arrays[0])
    device, shape = backend.device(arrays[0]), tuple(arrays[0].shape)
    for k, a in enumerate(arrays):
        other = backend_of(a)
        if other is not backend or other.device(a) != device:
            raise DeviceError(
                f"default_collate: {path} are on different devices: {device} in sample 0, {other.device(a)} in sample {k}"
            )
        if tuple(a.shape) != shape:
            raise ShapeError(
                f"default_collate: cannot stack {path}: shape {shape} in sample 0, {tuple(a.shape)} in sample {k}"
            )
    return backend.xp.stack(arrays, axis=0)


def _numbers(items: Sequence[object], path: str) -> np.ndarray:
    for k, x in enumerate(items):
        if not isinstance(x, numbers.Real):
            raise TypeError(
                f"default_collate: {path} mix types: a number in sample 0, a {type(x).__name__} in sample {k}"
            )
    if all(isinstance(x, (bool, np.bool_)) for x in items):
        return np.asarray(items, dtype=np.bool_)
    if all(isinstance(x, numbers.Integral) for x in items):
        return np.asarray(items, dtype=np.int64)
    # PyTorch: floats give float64; ints mixed with floats give the default float dtype.
    return np.asarray(items, dtype=np.float64 if isinstance(items[0], float) else DEFAULT_FLOAT)


def _collate_mapping(first: Mapping[Any, object], items: Sequence[object], path: str) -> Mapping[Any, Any]:
    keys = list(first)
    mappings: list[Mapping[Any, object]] = []
    for k, x in enumerate(items):
        if not isinstance(x, Mapping) or set(x) != set(keys):
            found = sorted(map(str, x)) if isinstance(x, Mapping) else type(x).__name__
            raise ValueError(
                f"default_collate: {path} have different keys: {sorted(map(str, keys))} in sample 0, {found} in sample {k}"
            )
        mappings.append(x)
    out = {key: _collate([x[key] for x in mappings], f"{path}[{key!r}]") for key in keys}
    return out if type(first) is dict else _same_mapping_type(first, out)


def _same_mapping_type(example: Mapping[Any, object], out: dict[Any, Any]) -> Mapping[Any, Any]:
    make: Callable[..., Mapping[Any, Any]] = type(example)  # Mapping itself declares no constructor
    try:
        return make(out)
    except TypeError:  # a Mapping that cannot be built from a dict
        return out


def _collate_fields(first: Sequence[object], items: Sequence[object], path: str) -> list[Any]:
    size = len(first)
    sequences: list[Sequence[object]] = []
    for k, x in enumerate(items):
        if isinstance(x, (str, bytes)) or not isinstance(x, Sequence) or len(x) != size:
            what = f"{len(x)} fields" if isinstance(x, Sequence) else f"a {type(x).__name__}"
            raise ValueError(f"default_collate: {path} differ: {size} fields in sample 0, {what} in sample {k}")
        sequences.append(x)
    return [_collate([x[f] for x in sequences], f"{path}[{f}]") for f in range(size)]
