"""``default_collate``: a list of samples -> one batch, with PyTorch's rules.

Tensors and arrays are stacked along a new axis 0 on their own device; Python numbers become a
CPU tensor (bool -> bool, int -> int64, float -> float64, as PyTorch does); numpy scalars keep
their dtype; strings stay a list. Tuples and lists are collated field by field and give a list
(a namedtuple keeps its type), dicts key by key. Stacking copies, so a batch never shares memory
with the samples it came from, and it is detached from any autograd graph.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from ..devices import backend_of
from ..dtypes import DEFAULT_FLOAT
from ..errors import DeviceError, ShapeError
from ..tensor import Tensor, is_array, wrap


def default_collate(samples):
    """Merge a non-empty list of samples (all of one structure) into a batch."""
    samples = list(samples)
    if not samples:
        raise ValueError("default_collate: got an empty list of samples")
    return _collate(samples, "samples")


def _collate(items, path):
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
        return _collate_mapping(items, path)
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple keeps its type
        return type(first)(*_collate_fields(items, path))
    if isinstance(first, Sequence):
        return _collate_fields(items, path)
    raise TypeError(
        f"default_collate: {path} hold a {type(first).__name__} (sample 0); samples may hold Tensors, arrays, "
        "numbers, strings, and tuples, lists or dicts of them"
    )


def _array_of(value, k, path):
    if isinstance(value, Tensor):
        return value._data
    if is_array(value):
        return value
    raise TypeError(
        f"default_collate: {path} mix types: an array or Tensor in sample 0, a {type(value).__name__} in sample {k}"
    )


def _stack(arrays, path):
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


def _numbers(items, path):
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


def _collate_mapping(items, path):
    keys = list(items[0])
    for k, x in enumerate(items):
        if not isinstance(x, Mapping) or set(x) != set(keys):
            found = sorted(map(str, x)) if isinstance(x, Mapping) else type(x).__name__
            raise ValueError(
                f"default_collate: {path} have different keys: {sorted(map(str, keys))} in sample 0, {found} in sample {k}"
            )
    out = {key: _collate([x[key] for x in items], f"{path}[{key!r}]") for key in keys}
    return out if type(items[0]) is dict else _same_mapping_type(items[0], out)


def _same_mapping_type(example, out):
    try:
        return type(example)(out)
    except TypeError:  # a Mapping that cannot be built from a dict
        return out


def _collate_fields(items, path):
    size = len(items[0])
    for k, x in enumerate(items):
        if isinstance(x, (str, bytes)) or not isinstance(x, Sequence) or len(x) != size:
            what = f"{len(x)} fields" if isinstance(x, Sequence) else f"a {type(x).__name__}"
            raise ValueError(f"default_collate: {path} differ: {size} fields in sample 0, {what} in sample {k}")
    return [_collate([x[f] for x in items], f"{path}[{f}]") for f in range(size)]
