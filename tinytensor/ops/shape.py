"""Shape and indexing ops: views, joins and gathers, with their gradients."""

from __future__ import annotations

from ..autograd import GRAD_ENABLED
from ..backend import backend_of
from ..errors import ShapeError
from ..tensor import Tensor, wrap
from .arith import combine_error, unbroadcast
from .reduce import normalize_axes


def _view(a: Tensor, out, backward):
    if a.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (lambda g: (backward(g),), (a,)))
    return wrap(out)


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def reshape(a: Tensor, *shape) -> Tensor:
    shape = _shape_arg(shape)
    x = a.data
    xp = backend_of(x).xp
    try:
        out = xp.reshape(x, shape)
    except ValueError:
        raise ShapeError(f"reshape: cannot reshape a tensor of shape {tuple(x.shape)} into {shape}") from None
    in_shape = x.shape
    return _view(a, out, lambda g: xp.reshape(g, in_shape))


def flatten(a: Tensor, start_axis: int = 0) -> Tensor:
    shape = a.shape
    start = start_axis % max(len(shape), 1)
    return reshape(a, shape[:start] + (-1,))


def permute(a: Tensor, *axes) -> Tensor:
    axes = _shape_arg(axes)
    x = a.data
    if len(axes) != x.ndim or sorted(ax % x.ndim for ax in axes) != list(range(x.ndim)):
        raise ShapeError(f"permute: {axes} is not a permutation of the {x.ndim} axes of shape {tuple(x.shape)}")
    axes = tuple(ax % x.ndim for ax in axes) if x.ndim else ()
    xp = backend_of(x).xp
    inverse = tuple(sorted(range(len(axes)), key=axes.__getitem__))
    return _view(a, xp.permute_dims(x, axes), lambda g: xp.permute_dims(g, inverse))


def transpose(a: Tensor, axis0: int = -2, axis1: int = -1) -> Tensor:
    """Swap two axes (PyTorch's ``transpose(dim0, dim1)``); the default swaps the last two."""
    ndim = a.ndim
    if ndim < 2:
        raise ShapeError(f"transpose needs at least 2 axes, got shape {a.shape}")
    i, j = normalize_axes(axis0, ndim)[0], normalize_axes(axis1, ndim)[0]
    axes = list(range(ndim))
    axes[i], axes[j] = axes[j], axes[i]
    return permute(a, tuple(axes))


def T(a: Tensor) -> Tensor:
    """All axes reversed (numpy's ``.T``)."""
    return permute(a, tuple(range(a.ndim - 1, -1, -1)))


def expand(a: Tensor, *shape) -> Tensor:
    """Broadcast to ``shape`` (-1 keeps an axis); the gradient sums the broadcast axes."""
    shape = _shape_arg(shape)
    x = a.data
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


def squeeze(a: Tensor, axis=None) -> Tensor:
    x = a.data
    if axis is None:
        axes = tuple(i for i, n in enumerate(x.shape) if n == 1)
    else:
        axes = normalize_axes(axis, x.ndim)
        for ax in axes:
            if x.shape[ax] != 1:
                raise ShapeError(f"squeeze: axis {ax} of shape {tuple(x.shape)} has size {x.shape[ax]}, not 1")
    if not axes:
        return a
    xp = backend_of(x).xp
    in_shape = x.shape
    return _view(a, xp.squeeze(x, axis=axes), lambda g: xp.reshape(g, in_shape))


def unsqueeze(a: Tensor, axis: int) -> Tensor:
    x = a.data
    ndim = x.ndim + 1
    if not -ndim <= axis < ndim:
        raise ShapeError(f"unsqueeze: axis {axis} is out of range for a result with {ndim} axes")
    xp = backend_of(x).xp
    in_shape = x.shape
    return _view(a, xp.expand_dims(x, axis=axis % ndim), lambda g: xp.reshape(g, in_shape))


def _join_inputs(op, tensors):
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{op} needs at least one tensor")
    arrays = [t.data if isinstance(t, Tensor) else t for t in tensors]
    first = arrays[0]
    backend = backend_of(first)
    for arr in arrays[1:]:
        if backend_of(arr) is not backend or backend.device(arr) != backend.device(first):
            raise combine_error(op, first, arr)
    return tensors, arrays, backend


def concatenate(tensors, axis: int = 0) -> Tensor:
    tensors, arrays, backend = _join_inputs("concatenate", tensors)
    xp = backend.xp
    ndim = arrays[0].ndim
    for arr in arrays:
        if arr.ndim != ndim or any(
            n != m for i, (n, m) in enumerate(zip(arr.shape, arrays[0].shape, strict=False)) if i != axis % max(ndim, 1)
        ):
            raise ShapeError(
                f"concatenate along axis {axis}: shapes {[tuple(a.shape) for a in arrays]} differ off that axis"
            )
    ax = normalize_axes(axis, ndim)[0]
    out = xp.concat(arrays, axis=ax)
    sizes = [arr.shape[ax] for arr in arrays]
    parents = tuple(t if isinstance(t, Tensor) else wrap(t) for t in tensors)
    if any(p.requires_grad for p in parents) and GRAD_ENABLED[0]:

        def backward(g):
            grads, start = [], 0
            for p, n in zip(parents, sizes, strict=False):
                index = (slice(None),) * ax + (slice(start, start + n), Ellipsis)
                grads.append(g[index] if p.requires_grad else None)
                start += n
            return tuple(grads)

        return wrap(out, (backward, parents))
    return wrap(out)


cat = concatenate


def stack(tensors, axis: int = 0) -> Tensor:
    tensors = list(tensors)
    shapes = {t.shape if isinstance(t, Tensor) else tuple(t.shape) for t in tensors}
    if len(shapes) > 1:
        raise ShapeError(f"stack needs tensors of one shape, got {sorted(shapes)}")
    ndim = len(next(iter(shapes))) + 1 if shapes else 1
    if not -ndim <= axis < ndim:
        raise ShapeError(f"stack: axis {axis} is out of range for a result with {ndim} axes")
    return concatenate([unsqueeze(t if isinstance(t, Tensor) else wrap(t), axis) for t in tensors], axis=axis)


# ---------------------------------------------------------------------------- indexing
def _is_index_array(k) -> bool:
    return hasattr(k, "dtype") and hasattr(k, "shape")


def _normalize_key(key, x):
    """Tensors to arrays, lists to integer arrays, and an explicit trailing Ellipsis."""
    backend = backend_of(x)
    if not isinstance(key, tuple):
        key = (key,)
    parts = []
    for k in key:
        if isinstance(k, Tensor):
            k = k.data
        elif isinstance(k, list):
            k = backend.asarray(k, None, x)
        if _is_index_array(k) and backend_of(k) is not backend:
            raise combine_error("indexing", x, k)
        parts.append(k)
    if not any(p is Ellipsis for p in parts):
        parts.append(Ellipsis)
    return tuple(parts)


def check_index_bounds(backend, idx, n, what, allow_negative=True):
    """Raise IndexError for indices outside [-n, n) (or [0, n)): CuPy would silently wrap them.

    One reduction and one device-to-host read of a flag; the offending value is read only on error.
    """
    xp = backend.xp
    low = -n if allow_negative else 0
    if idx.size and bool(xp.any(xp.logical_or(idx < low, idx >= n))):
        values = backend.to_numpy(idx).reshape(-1)
        bad = values[(values < low) | (values >= n)][0]
        raise IndexError(f"index {int(bad)} is out of range for {what}")


def _split_new_axes(key, ndim):
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


def _insert_ones(shape, positions):
    shape = list(shape)
    for pos in positions:
        shape.insert(pos, 1)
    return tuple(shape)


def getitem(a: Tensor, key) -> Tensor:
    x = a.data
    backend = backend_of(x)
    xp = backend.xp
    key = _normalize_key(key, x)
    arrays = [k for k in key if _is_index_array(k)]
    gather = None  # the index array of the common x[indices] case
    new_axes = ()
    if arrays:
        if len(key) == 2 and key[1] is Ellipsis and xp.isdtype(key[0].dtype, "integral"):
            gather = key[0]
            if x.ndim == 0:
                raise IndexError("a 0-d tensor cannot be indexed with an integer array")
            check_index_bounds(backend, gather, x.shape[0], f"axis 0 of shape {tuple(x.shape)}")
            flat = xp.reshape(gather, (-1,))
            flat = xp.where(flat < 0, flat + x.shape[0], flat)
            out = xp.reshape(xp.take(x, flat, axis=0), tuple(gather.shape) + tuple(x.shape[1:]))
        else:
            out = x[key]
    else:
        key, new_axes = _split_new_axes(key, x.ndim)
        out = x[key]
        if new_axes:
            plain_shape = tuple(out.shape)
            out = xp.reshape(out, _insert_ones(plain_shape, new_axes))
    if a.requires_grad and GRAD_ENABLED[0]:

        def backward(g):
            if not arrays and new_axes:
                g = xp.reshape(g, plain_shape)
            gx = backend.zeros(x.shape, g.dtype, g)
            if gather is not None:
                return (backend.scatter_add(gx, gather, g),)
            if arrays:
                return (backend.scatter_add(gx, key, g),)
            gx[key] = g
            return (gx,)

        return wrap(out, (backward, (a,)))
    return wrap(out)


def setitem(a: Tensor, key, value) -> None:
    """In-place assignment, for tensors outside any graph (autograd does not track mutation)."""
    if (a.requires_grad or a._ctx is not None) and GRAD_ENABLED[0]:
        raise RuntimeError(
            "in-place assignment to a tensor that requires grad is not supported; "
            "do it under tinytensor.no_grad() or on .detach()"
        )
    key = _normalize_key(key, a.data)
    a.data[key] = value.data if isinstance(value, Tensor) else value
