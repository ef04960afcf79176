"""Shape and indexing ops: views, joins and gathers, with their gradients.

Axis arguments take PyTorch's spelling (``dim``, ``start_dim``, ``dim0``) or numpy's (``axis``).
A view's result shares its input's in-place version cell (see autograd), as its storage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..argcheck import dim_arg
from ..array_types import Array, Shape, TensorLike
from ..autograd import GRAD_ENABLED, mark_modified, saves_nothing, share_version
from ..backend import Backend
from ..devices import backend_of
from ..errors import ShapeError
from ..tensor import Tensor, plain_array, wrap
from .arith import combine_error, unbroadcast
from .reduce import normalize_axes


@saves_nothing
def _view_backward(g: Array, backward: Callable[[Array], Array]) -> tuple[Array]:
    return (backward(g),)


def _view(a: Tensor, out: Array, backward: Callable[[Array], Array]) -> Tensor:
    """A result that may share ``a``'s storage; ``backward(g)`` maps its gradient back (shapes only)."""
    t = wrap(out, (_view_backward, (a,), backward)) if a.requires_grad and GRAD_ENABLED[0] else wrap(out)
    share_version(a, t)
    return t


def _shape_arg(fn: str, shape: tuple[object, ...]) -> tuple[int, ...]:
    """A shape given as ints or as one sequence of ints, checked."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    ints = []
    for n in shape:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"{fn}(): a shape holds ints, got {tuple(shape)!r}")
        ints.append(int(n))
    return tuple(ints)


def reshape(a: Tensor, *shape: int | Sequence[int]) -> Tensor:
    """The same elements in ``shape`` (ints or one sequence; one may be -1), a view where possible.

    ``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` are the same. The result shares the input's
    storage whenever the layout allows (in-place changes of one show in the other).

    Raises
    ------
    TypeError
        The shape holds something other than ints.
    ShapeError
        The number of elements differs.
    """
    shape = _shape_arg("reshape", shape)
    x = a._data
    xp = backend_of(x).xp
    try:
        out = xp.reshape(x, shape)
    except ValueError:
        raise ShapeError(f"reshape: cannot reshape a tensor of shape {tuple(x.shape)} into {shape}") from None
    in_shape = x.shape
    return _view(a, out, lambda g: xp.reshape(g, in_shape))


def view(a: Tensor, *shape: int | Sequence[int]) -> Tensor:
    """PyTorch's ``view``: ``reshape`` (numpy and CuPy return a view whenever the layout allows)."""
    return reshape(a, *shape)


def _shape_of(name: str, other: object) -> Shape:
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}: other must be a Tensor, got {type(other).__name__}")
    return other.shape


def view_as(a: Tensor, other: Tensor) -> Tensor:
    """``view`` to ``other``'s shape."""
    return reshape(a, _shape_of("view_as", other))


def reshape_as(a: Tensor, other: Tensor) -> Tensor:
    """``reshape`` to ``other``'s shape."""
    return reshape(a, _shape_of("reshape_as", other))


def expand_as(a: Tensor, other: Tensor) -> Tensor:
    """``expand`` to ``other``'s shape."""
    return expand(a, _shape_of("expand_as", other))


def flatten(
    a: Tensor, start_dim: int = 0, end_dim: int = -1, *, start_axis: int | None = None, end_axis: int | None = None
) -> Tensor:
    """Merge the axes ``start_dim..end_dim`` (inclusive) into one; a 0-d tensor becomes shape (1,)."""
    start = dim_arg("flatten", start_dim if start_axis is None else None, start_axis)
    end = dim_arg("flatten", end_dim if end_axis is None else None, end_axis)
    return reshape(a, flattened_shape(a.shape, start, end))


def flattened_shape(in_shape: Shape, start_dim: object, end_dim: object) -> Shape:
    """The shape ``torch.flatten(x, start_dim, end_dim)`` gives."""
    ndim = max(len(in_shape), 1)  # as in PyTorch, a 0-d tensor flattens as if it had one axis
    dims = []
    for name, d in (("start_dim", start_dim), ("end_dim", end_dim)):
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise TypeError(f"flatten: {name} must be an int, got {type(d).__name__}")
        if not -ndim <= d < ndim:
            raise ShapeError(f"flatten: {name}={d} is out of range for shape {in_shape} (expected {-ndim}..{ndim - 1})")
        dims.append(int(d))
    start, end = dims[0] % ndim, dims[1] % ndim
    if start > end:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} for shape {in_shape}")
    if not in_shape:
        return (1,)
    merged = 1
    for n in in_shape[start : end + 1]:
        merged *= n  # an explicit size, not -1, so that zero-size axes reshape too
    return tuple(in_shape[:start]) + (merged,) + tuple(in_shape[end + 1 :])


def permute(a: Tensor, *axes: int | Sequence[int]) -> Tensor:
    """The axes reordered as ``axes`` (a view)."""
    perm = _shape_arg("permute", axes)
    x = a._data
    if len(perm) != x.ndim or sorted(ax % x.ndim for ax in perm) != list(range(x.ndim)):
        raise ShapeError(f"permute: {perm} is not a permutation of the {x.ndim} axes of shape {tuple(x.shape)}")
    perm = tuple(ax % x.ndim for ax in perm) if x.ndim else ()
    xp = backend_of(x).xp
    inverse = tuple(sorted(range(len(perm)), key=perm.__getitem__))
    return _view(a, xp.permute_dims(x, perm), lambda g: xp.permute_dims(g, inverse))


def transpose(
    a: Tensor, dim0: int = -2, dim1: int = -1, *, axis0: int | None = None, axis1: int | None = None
) -> Tensor:
    """Swap two axes (PyTorch's ``transpose(dim0, dim1)``); the default swaps the last two."""
    # dim0/dim1 have defaults, so a given axis0/axis1 (numpy's spelling) simply replaces them
    dim0 = dim0 if axis0 is None else axis0
    dim1 = dim1 if axis1 is None else axis1
    ndim = a.ndim
    if ndim < 2:
        raise ShapeError(f"transpose needs at least 2 axes, got shape {a.shape}")
    i, j = normalize_axes(dim0, ndim)[0], normalize_axes(dim1, ndim)[0]
    axes = list(range(ndim))
    axes[i], axes[j] = axes[j], axes[i]
    return permute(a, tuple(axes))


def t(a: Tensor) -> Tensor:
    """PyTorch's ``t()``: the transpose of a matrix; 0-d and 1-d tensors are returned as they are."""
    if a.ndim > 2:
        raise ShapeError(f"t() needs a tensor with at most 2 axes, got shape {a.shape}; use transpose or mT")
    return a if a.ndim < 2 else transpose(a, 0, 1)


def T(a: Tensor) -> Tensor:
    """All axes reversed (numpy's ``.T``)."""
    return permute(a, tuple(range(a.ndim - 1, -1, -1)))


def expand(a: Tensor, *shape: int | Sequence[int]) -> Tensor:
    """Broadcast to ``shape`` (-1 keeps an axis); the gradient sums the broadcast axes."""
    shape = _shape_arg("expand", shape)
    x = a._data
    lead = len(shape) - x.ndim
    if lead < 0:
        raise ShapeError(f"expand: shape {shape} has fewer axes than the tensor's {tuple(x.shape)}")
    target = tuple(x.shape[i - lead] if (n == -1 and i >= lead) else n for i, n in enumerate(shape))
    xp = backend_of(x).xp
    try:
        out = xp.broadcast_to(x, target)
    except ValueError:
        raise ShapeError(f"expand: cannot broadcast shape {tuple(x.shape)} to {shape}") from None
    in_shape = x.shape
    return _view(a, out, lambda g: unbroadcast(g, in_shape))


def squeeze(a: Tensor, dim: int | Sequence[int] | None = None, *, axis: int | Sequence[int] | None = None) -> Tensor:
    """Remove size-1 axes: all of them, or those of ``dim`` that have size 1 (others are kept, as
    in PyTorch)."""
    dim = dim_arg("squeeze", dim, axis)
    x = a._data
    if dim is None:
        axes = tuple(i for i, n in enumerate(x.shape) if n == 1)
    else:
        axes = tuple(ax for ax in normalize_axes(dim, x.ndim) if x.ndim and x.shape[ax] == 1)
    if not axes:
        return a
    xp = backend_of(x).xp
    in_shape = x.shape
    return _view(a, xp.squeeze(x, axis=axes), lambda g: xp.reshape(g, in_shape))


def unsqueeze(a: Tensor, dim: int | None = None, *, axis: int | None = None) -> Tensor:
    """A new size-1 axis at position ``dim`` of the result."""
    dim = dim_arg("unsqueeze", dim, axis)
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"unsqueeze(): dim must be an int, got {dim!r}")
    x = a._data
    ndim = x.ndim + 1
    if not -ndim <= dim < ndim:
        raise ShapeError(f"unsqueeze: dim {dim} is out of range for a result with {ndim} axes")
    xp = backend_of(x).xp
    in_shape = x.shape
    return _view(a, xp.expand_dims(x, axis=int(dim) % ndim), lambda g: xp.reshape(g, in_shape))


def _join_inputs(op: str, tensors: object) -> tuple[list[Tensor | Array], list[Array], Backend]:
    if isinstance(tensors, Tensor) or not hasattr(tensors, "__iter__"):
        raise TypeError(f"{op}(): tensors must be a list or tuple of tensors, got {type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{op}(): needs at least one tensor")
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor) and not (hasattr(t, "shape") and hasattr(t, "dtype")):
            raise TypeError(f"{op}(): tensors[{k}] must be a Tensor, got {type(t).__name__}")
    arrays = [t._data if isinstance(t, Tensor) else plain_array(t) for t in tensors]
    first = arrays[0]
    backend = backend_of(first)
    for arr in arrays[1:]:
        if backend_of(arr) is not backend or backend.device(arr) != backend.device(first):
            raise combine_error(op, first, arr)
    return tensors, arrays, backend


def concatenate(tensors: Sequence[Tensor | Array], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join tensors along an existing axis (PyTorch's ``cat``).

    Parameters
    ----------
    tensors : sequence of Tensor
        One or more tensors (arrays are taken too) on one device, of one shape off ``dim``.
    dim : int
        The axis to join along (``axis`` is numpy's spelling).

    Raises
    ------
    TypeError
        ``tensors`` is not a sequence of tensors.
    ValueError
        ``tensors`` is empty.
    ShapeError
        The tensors are 0-d or their shapes differ off ``dim``.
    DeviceError
        The tensors are on different devices.
    """
    axis = dim_arg("cat", dim if axis is None else None, axis)
    tensors, arrays, backend = _join_inputs("cat", tensors)
    xp = backend.xp
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ShapeError("cat: 0-d tensors cannot be concatenated; use stack")
    ax = normalize_axes(axis, ndim)[0]
    for arr in arrays:
        if arr.ndim != ndim or any(n != m for i, (n, m) in enumerate(zip(arr.shape, arrays[0].shape)) if i != ax):
            raise ShapeError(f"cat along axis {axis}: shapes {[tuple(a.shape) for a in arrays]} differ off that axis")
    out = xp.concat(arrays, axis=ax)
    sizes = [arr.shape[ax] for arr in arrays]
    parents = tuple(t if isinstance(t, Tensor) else wrap(t) for t in tensors)
    if any(p.requires_grad for p in parents) and GRAD_ENABLED[0]:
        return wrap(out, (_concat_backward, parents, ax, sizes, tuple(p.requires_grad for p in parents)))
    return wrap(out)


@saves_nothing
def _concat_backward(g: Array, ax: int, sizes: list[int], needs: tuple[bool, ...]) -> tuple[Array | None, ...]:
    grads, start = [], 0
    for need, n in zip(needs, sizes):
        index = (slice(None),) * ax + (slice(start, start + n), Ellipsis)
        grads.append(g[index] if need else None)
        start += n
    return tuple(grads)


cat = concatenate


def stack(tensors: Sequence[Tensor | Array], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join tensors of one shape along a new axis."""
    axis = dim if axis is None else axis  # dim has a default: a given axis (numpy's spelling) replaces it
    tensors, _, _ = _join_inputs("stack", tensors)
    shapes = {t.shape if isinstance(t, Tensor) else tuple(t.shape) for t in tensors}
    if len(shapes) > 1:
        raise ShapeError(f"stack needs tensors of one shape, got {sorted(shapes)}")
    ndim = len(next(iter(shapes))) + 1
    if not -ndim <= axis < ndim:
        raise ShapeError(f"stack: dim {axis} is out of range for a result with {ndim} axes")
    return concatenate([unsqueeze(t if isinstance(t, Tensor) else wrap(t), axis) for t in tensors], axis)


# ---------------------------------------------------------------------------- indexing
# A key as indexing takes it: a tuple of ints, slices, None, Ellipsis and index arrays (Any: the
# arrays have no static type, and the parts are told apart at run time)
Key = tuple[Any, ...]


def _is_index_array(k: object) -> bool:
    return hasattr(k, "dtype") and hasattr(k, "shape")


def _normalize_key(key: object, x: Array) -> Key:
    """Tensors to arrays, lists to integer arrays, and an explicit trailing Ellipsis."""
    backend = backend_of(x)
    if not isinstance(key, tuple):
        key = (key,)
    parts = []
    for k in key:
        if isinstance(k, Tensor):
            k = k._data
        elif isinstance(k, list):
            k = backend.asarray(k, None, x)
        if _is_index_array(k) and backend_of(k) is not backend:
            raise combine_error("indexing", x, k)
        parts.append(k)
    if not any(p is Ellipsis for p in parts):
        parts.append(Ellipsis)
    return tuple(parts)


def check_index_bounds(backend: Backend, idx: Array, n: int, what: str, allow_negative: bool = True) -> None:
    """Raise IndexError for indices outside [-n, n) (or [0, n)): CuPy would silently wrap them.

    One reduction and one device-to-host read of a flag; the offending value is read only on error.
    """
    xp = backend.xp
    low = -n if allow_negative else 0
    if idx.size and bool(xp.any(xp.logical_or(idx < low, idx >= n))):
        values = backend.to_numpy(idx).reshape(-1)
        bad = values[(values < low) | (values >= n)][0]
        raise IndexError(f"index {int(bad)} is out of range for {what}")


def _split_new_axes(key: Key, ndim: int) -> tuple[Key, tuple[int, ...]]:
    """A basic key without its ``None`` entries, and the output positions those would add.

    The array API leaves ``None`` in a key optional (array_api_strict rejects it in some places),
    so new axes are added by a reshape after indexing with the rest of the key.
    """
    if not any(k is None for k in key):
        return key, ()
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    positions, out_axis = [], 0
    for k in key:
        if k is None:
            positions.append(out_axis)
            out_axis += 1
        elif k is Ellipsis:
            out_axis += ndim - consumed
        elif isinstance(k, slice):
            out_axis += 1
    return tuple(k for k in key if k is not None), tuple(positions)


def _insert_ones(shape: Shape, positions: tuple[int, ...]) -> Shape:
    out = list(shape)
    for pos in positions:
        out.insert(pos, 1)
    return tuple(out)


def getitem(a: Tensor, key: object) -> Tensor:
    """``a[key]``: basic indexing gives a view; integer arrays, lists and bool masks gather.

    A key of ints, slices, ``None`` and ``...`` selects a view that shares the tensor's storage;
    integer tensors, arrays or lists and bool masks copy the selected elements, whose gradient is
    scattered back (repeated indices add up). Out-of-range indices raise ``IndexError`` on every
    device (CuPy alone would wrap them).
    """
    x = a._data
    backend = backend_of(x)
    xp = backend.xp
    key = _normalize_key(key, x)
    arrays = [k for k in key if _is_index_array(k)]
    gather = None  # the index array of the common x[indices] case
    new_axes: tuple[int, ...] = ()
    if arrays:
        if len(key) == 2 and key[1] is Ellipsis and xp.isdtype(key[0].dtype, "integral"):
            gather = key[0]
            if x.ndim == 0:
                raise IndexError("a 0-d tensor cannot be indexed with an integer array")
            check_index_bounds(backend, gather, x.shape[0], f"axis 0 of shape {tuple(x.shape)}")
            flat = xp.reshape(gather, (-1,))
            # negative indices counted from the end; the gradient scatters to these same rows
            flat = xp.where(flat < 0, flat + x.shape[0], flat)
            out = xp.reshape(xp.take(x, flat, axis=0), tuple(gather.shape) + tuple(x.shape[1:]))
        else:
            out = _index(x, key)
    else:
        key, new_axes = _split_new_axes(key, x.ndim)
        out = _index(x, key)
        if new_axes:
            plain_shape = tuple(out.shape)
            out = xp.reshape(out, _insert_ones(plain_shape, new_axes))
    if a.requires_grad and GRAD_ENABLED[0]:

        def backward(g: Array) -> tuple[Array]:
            if not arrays and new_axes:
                g = xp.reshape(g, plain_shape)
            gx = backend.zeros(x.shape, g.dtype, g)
            if gather is not None:
                rows = xp.reshape(g, (flat.shape[0],) + tuple(x.shape[1:]))
                return (backend.scatter_add(gx, flat, rows),)
            if arrays:
                return (backend.scatter_add(gx, key, g),)
            gx[key] = g
            return (gx,)

        result = wrap(out, (backward, (a,)))
    else:
        result = wrap(out)
    if not arrays:  # basic indexing: a view of the same storage
        share_version(a, result)
    return result


def _index(x: Array, key: Key) -> Array:
    try:
        return x[key]
    except (IndexError, TypeError) as exc:
        raise IndexError(f"index {_show_key(key)} is invalid for a tensor of shape {tuple(x.shape)}: {exc}") from None


def _show_key(key: object) -> str:
    parts = [k for k in key if k is not Ellipsis] if isinstance(key, tuple) else [key]
    return ", ".join("<array>" if hasattr(k, "shape") else repr(k) for k in parts)


def setitem(a: Tensor, key: object, value: TensorLike) -> None:
    """In-place assignment, for tensors outside any graph; backward refuses to use the old values."""
    if (a.requires_grad or a._ctx is not None) and GRAD_ENABLED[0]:
        raise RuntimeError(
            "in-place assignment to a tensor that requires grad is not supported; "
            "do it under tinytensor.no_grad() or on .detach()"
        )
    x = a._data
    key = _normalize_key(key, x)
    if isinstance(value, Tensor):
        value = value._data
        if type(value) is not type(x) or backend_of(x).device(x) != backend_of(value).device(value):
            raise combine_error("setitem", x, value)
    try:
        x[key] = value
    except ValueError as exc:
        if "read-only" in str(exc):
            raise RuntimeError(
                "setitem: this tensor is a broadcast view (from expand) whose elements share memory; "
                "clone() it before writing to it"
            ) from None
        raise ShapeError(
            f"setitem: cannot assign a value of shape {np.shape(value)} to index {_show_key(key)} "
            f"of shape {tuple(x.shape)}: {exc}"
        ) from None
    mark_modified(a)
