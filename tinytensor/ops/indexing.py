"""Indexing by tensors of indices or masks: ``gather``, ``masked_fill`` and ``one_hot``, with their
gradients, and ``scatter_along``, the gradient of every gather along an axis (``sort``, ``topk``).

Indices are checked before use (CuPy would wrap an out-of-range index silently), and masks must
be bool tensors, as in PyTorch.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..argcheck import int_at_least
from ..array_types import Array, Namespace, Shape, TensorLike
from ..autograd import GRAD_ENABLED
from ..backend import Backend
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor, plain_array, tensor_arg, wrap
from .arith import combine_error, unbroadcast
from .shape import check_index_bounds


def dim_index(fn: str, dim: object, ndim: int) -> int:
    """``dim`` as a non-negative axis of a tensor with ``ndim`` axes (a 0-d tensor takes 0 and -1,
    as in PyTorch)."""
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (numbers.Integral, np.integer)):
        raise TypeError(f"{fn}(): dim must be an int, got {type(dim).__name__}")
    n, d = max(ndim, 1), int(dim)
    if not -n <= d < n:
        raise IndexError(f"{fn}(): dim {d} is out of range for a tensor with {ndim} axes (expected {-n}..{n - 1})")
    return d % n


def same_device_array(fn: str, name: str, value: object, like: Array) -> Array:
    """The array behind tensor (or array) argument ``name``, which must be on ``like``'s device."""
    data = value._data if isinstance(value, Tensor) else plain_array(value)
    if not (hasattr(data, "shape") and hasattr(data, "dtype")):
        raise TypeError(f"{fn}(): argument '{name}' must be a Tensor, got {type(value).__name__}")
    if type(data) is not type(like) or backend_of(like).device(like) != backend_of(data).device(data):
        raise combine_error(fn, like, data)
    return data


def scatter_along(backend: Backend, shape: Shape, dim: int, index: Array, values: Array) -> Array:
    """An array of ``shape`` holding the sum of ``values`` at ``index`` along axis ``dim`` (zeros
    elsewhere): the gradient of ``take_along_axis``. ``index`` and ``values`` have one shape, no
    larger than ``shape`` on the other axes."""
    xp = backend.xp
    strides, n = [], 1
    for size in reversed(shape):
        strides.append(n)
        n *= size
    strides.reverse()
    # the flat position of each index in an array of ``shape``: one scatter-add on a flat array
    flat_index = index * strides[dim]
    for axis, size in enumerate(index.shape):
        if axis != dim:
            along = xp.reshape(backend.arange(size, index), tuple(-1 if k == axis else 1 for k in range(index.ndim)))
            flat_index = flat_index + along * strides[axis]
    flat = backend.zeros((n,), values.dtype, values)
    flat = backend.scatter_add(flat, xp.reshape(flat_index, (-1,)), xp.reshape(values, (-1,)))
    return xp.reshape(flat, shape)


def gather(a: Tensor, dim: int, index: Tensor | Array) -> Tensor:
    """The input's values at ``index`` along ``dim``: ``out[i][j] = input[i][index[i][j]]`` for ``dim=1``.

    ``index`` is an int64 tensor with as many axes as the input, no larger than it on the other
    axes; its indices must lie in ``[0, a.size(dim))``. The gradient scatters back (summing repeats).
    """
    x = a._data
    backend = backend_of(x)
    xp = backend.xp
    axis = dim_index("gather", dim, x.ndim)
    idx = same_device_array("gather", "index", index, x)
    if numpy_dtype(idx.dtype) != np.int64:
        raise TypeError(f"gather(): index must be an int64 tensor, got dtype {idx.dtype}; convert it with .long()")
    if idx.ndim != x.ndim:
        raise ShapeError(
            f"gather(): index must have as many axes as the input: index shape {tuple(idx.shape)}, "
            f"input shape {tuple(x.shape)}"
        )
    if any(k != axis and m > n for k, (m, n) in enumerate(zip(idx.shape, x.shape))):
        raise ShapeError(
            f"gather(): index shape {tuple(idx.shape)} is larger than the input shape {tuple(x.shape)} "
            f"on an axis other than dim {dim}"
        )
    if x.ndim == 0:  # a 0-d tensor gathers as a one-element vector
        check_index_bounds(backend, idx, 1, "a 0-d tensor", allow_negative=False)
        out = xp.reshape(xp.take(xp.reshape(x, (1,)), xp.reshape(idx, (1,)), axis=0), ())
    else:
        check_index_bounds(backend, idx, x.shape[axis], f"dim {dim} of shape {tuple(x.shape)}", allow_negative=False)
        window = tuple(slice(None) if k == axis else slice(0, m) for k, m in enumerate(idx.shape))
        out = xp.take_along_axis(x[window], idx, axis=axis)
    if a.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (_gather_backward, (a,), backend, tuple(x.shape), axis, idx))
    return wrap(out)


def _gather_backward(g: Array, backend: Backend, shape: Shape, axis: int, idx: Array) -> tuple[Array]:
    if not shape:
        return (backend.xp.reshape(g, ()),)
    return (scatter_along(backend, shape, axis, idx, g),)


def mask_and_value(
    fn: str, a: Tensor, mask: Tensor | Array, value: object, *, in_place: bool = False
) -> tuple[Array, Tensor | float]:
    """``masked_fill``'s checked arguments: the bool mask array, and the value as a Python number
    or, for a 0-d tensor that requires grad, that tensor (cast to ``a``'s dtype in the op).
    ``in_place``: the mask must broadcast to ``a``'s own shape."""
    x = a._data
    m = same_device_array(fn, "mask", mask, x)
    if numpy_dtype(m.dtype).kind != "b":
        raise TypeError(f"{fn}(): mask must be a bool tensor, got dtype {m.dtype}")
    try:
        result_shape = np.broadcast_shapes(tuple(x.shape), tuple(m.shape))
    except ValueError:
        result_shape = None
    if result_shape is None or (in_place and tuple(result_shape) != tuple(x.shape)):
        raise ShapeError(
            f"{fn}(): mask of shape {tuple(m.shape)} cannot be broadcast to the tensor's shape {tuple(x.shape)}"
        )
    if isinstance(value, Tensor) or (hasattr(value, "shape") and hasattr(value, "dtype")):
        tensor = value if isinstance(value, Tensor) else wrap(value)
        if tensor.ndim != 0:
            raise ShapeError(f"{fn}(): value must be a number or a 0-d tensor, got a tensor of shape {tensor.shape}")
        if tensor.requires_grad and GRAD_ENABLED[0]:
            same_device_array(fn, "value", tensor, x)
            if not backend_of(x).is_float(x):
                raise TypeError(f"{fn}(): a value that requires grad needs a floating-point tensor, got {a.dtype}")
            return m, tensor
        value = tensor.item()
    elif isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"{fn}(): value must be a number or a 0-d tensor, got {type(value).__name__}")
    kind = numpy_dtype(x.dtype).kind
    if (kind in "iu" and isinstance(value, float)) or (kind == "b" and not isinstance(value, bool)):
        # PyTorch would truncate (2.5 -> 2) or convert silently; a wrong value is refused instead
        raise TypeError(f"{fn}(): value {value!r} cannot be stored in a tensor of dtype {a.dtype}")
    return m, value


def masked_fill(a: Tensor, mask: Tensor | Array, value: Tensor | Array | float) -> Tensor:
    """``value`` where the bool ``mask`` is true, else the input's element (they broadcast together).

    ``value`` is a number or a 0-d tensor (which receives the summed gradient of the filled
    places). Unlike PyTorch, a float value for an integer tensor, or a number for a bool tensor, is
    an error instead of being truncated or converted.
    """
    x = a._data
    backend = backend_of(x)
    xp = backend.xp
    m, value = mask_and_value("masked_fill", a, mask, value)
    v = backend.astype(value._data, numpy_dtype(x.dtype)) if isinstance(value, Tensor) else value
    out = xp.where(m, v, x)
    parents = (a, value) if isinstance(value, Tensor) else (a,)
    if any(p.requires_grad for p in parents) and GRAD_ENABLED[0]:
        return wrap(out, (_masked_fill_backward, parents, xp, m, tuple(x.shape), a.requires_grad))
    return wrap(out)


def _masked_fill_backward(
    g: Array, xp: Namespace, m: Array, shape: Shape, need_input: bool
) -> tuple[Array | None, Array]:
    g_input = unbroadcast(xp.where(m, 0, g), shape) if need_input else None
    return g_input, xp.sum(xp.where(m, g, 0))


def one_hot(tensor: TensorLike, num_classes: int = -1) -> Tensor:
    """An int64 tensor with a new last axis of ``num_classes`` holding 1 at each class index, else 0.

    ``tensor`` holds int64 class indices; ``num_classes=-1`` takes the largest index plus one.
    Negative or too large indices raise, as in PyTorch.
    """
    idx = tensor_arg(tensor, "one_hot", "tensor")._data
    backend = backend_of(idx)
    xp = backend.xp
    if numpy_dtype(idx.dtype) != np.int64:
        raise TypeError(f"one_hot(): tensor must hold int64 class indices, got dtype {idx.dtype}; convert with .long()")
    n = int_at_least("one_hot", "num_classes", num_classes, -1)
    if idx.size and bool(xp.any(idx < 0)):
        raise ValueError("one_hot(): class values must be non-negative")
    if n == -1:
        if not idx.size:
            raise ValueError("one_hot(): cannot infer num_classes from an empty tensor; pass num_classes")
        n = int(backend.to_numpy(xp.max(idx))) + 1
    elif idx.size and bool(xp.any(idx >= n)):
        raise ValueError(f"one_hot(): class values must be smaller than num_classes ({n})")
    classes = backend.arange(n, idx)
    return wrap(xp.astype(xp.expand_dims(idx, axis=-1) == classes, xp.int64))


def bincount(input: TensorLike, weights: Tensor | Array | None = None, minlength: int = 0) -> Tensor:  # noqa: A002 - PyTorch's argument name
    """How often each value 0, 1, ... occurs in the 1-D non-negative integer ``input`` (int64), or
    the sum of ``weights`` per value; at least ``minlength`` bins. No gradient, as in PyTorch."""
    idx = tensor_arg(input, "bincount", "input")._data
    backend = backend_of(idx)
    xp = backend.xp
    if idx.ndim != 1 or numpy_dtype(idx.dtype).kind not in "iu":
        raise TypeError(f"bincount(): input must be a 1-D integer tensor, got {idx.ndim}-D of dtype {idx.dtype}")
    if idx.size and bool(xp.any(idx < 0)):
        raise ValueError("bincount(): input must hold non-negative values")
    minlength = int_at_least("bincount", "minlength", minlength, 0)
    n = max(minlength, int(backend.to_numpy(xp.max(idx))) + 1 if idx.size else 0)
    if weights is None:
        values = backend.full(idx.shape, 1, np.int64, idx)
    else:
        values = same_device_array("bincount", "weights", weights, idx)
        if tuple(values.shape) != tuple(idx.shape):
            raise ShapeError(f"bincount(): weights have shape {tuple(values.shape)}, input has {tuple(idx.shape)}")
    counts = backend.zeros((n,), values.dtype, values)
    if not idx.size:
        return wrap(counts)
    return wrap(backend.scatter_add(counts, xp.astype(idx, xp.int64), values))
