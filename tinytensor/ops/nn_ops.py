"""Neural-network ops with fused gradients: softmax, dropout, embedding, layer_norm, linear."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from .. import random as _random
from ..activation_math import check_activation
from ..argcheck import dim_arg
from ..array_types import Array, DType
from ..autograd import GRAD_ENABLED
from ..devices import backend_of
from ..errors import ShapeError
from ..tensor import Tensor, tensor_arg, wrap
from .arith import check_same_dtype, combine_error
from .reduce import logsumexp_array, normalize_axes
from .shape import getitem


def implicit_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    """PyTorch's choice of axis when ``dim`` is None (0 for 0-, 1- and 3-D input, else 1), with its
    warning; ``stacklevel`` counts from the caller of this function (as ``warnings.warn``'s)."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel + 1,
    )
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_input(
    fn: str, a: Tensor, dim: int | None, axis: int | None, dtype: str | DType | None
) -> tuple[Tensor, tuple[int, ...]]:
    """(the input cast to ``dtype`` where given, its axis as a 1-tuple); ``dim`` is required."""
    dim = dim_arg(fn, dim, axis)
    if dim is None:
        raise TypeError(
            f"{fn}() missing 1 required argument: 'dim' (nn.functional.{fn} without dim picks PyTorch's "
            "deprecated implicit axis, with a warning)"
        )
    if dtype is not None:
        a = a.to(dtype=dtype)
    axes = normalize_axes(dim, a._data.ndim)
    return a, axes if a._data.ndim else ()  # a 0-d input is its own softmax axis (dim 0 or -1)


def softmax(a: Tensor, dim: int | None = None, *, dtype: str | DType | None = None, axis: int | None = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``: non-negative values that sum to 1 along it.

    Parameters
    ----------
    dim : int
        The axis to normalize along; required, as for PyTorch's ``Tensor.softmax`` and
        ``torch.softmax`` (``nn.functional.softmax`` without it picks PyTorch's deprecated
        implicit axis, with a warning). ``axis`` is numpy's spelling of it.
    dtype : str or numpy dtype, optional
        Cast the input to it first (differentiably).

    Returns
    -------
    Tensor
        Of the input's shape. Computed stably (the maximum is subtracted before exponentiating).
    """
    a, ax = _softmax_input("softmax", a, dim, axis, dtype)
    x = a._data
    xp = backend_of(x).xp
    out = xp.exp(x - logsumexp_array(xp, x, ax))
    if a.requires_grad and GRAD_ENABLED[0]:

        def backward(g: Array) -> tuple[Array]:
            return (out * (g - xp.sum(g * out, axis=ax, keepdims=True)),)

        return wrap(out, (backward, (a,)))
    return wrap(out)


def log_softmax(
    a: Tensor, dim: int | None = None, *, dtype: str | DType | None = None, axis: int | None = None
) -> Tensor:
    """``x - logsumexp(x)`` along ``dim``: the log of ``softmax``, computed stably.

    Parameters
    ----------
    dim : int
        The axis to normalize along; required, as for PyTorch's ``Tensor.log_softmax`` and
        ``torch.log_softmax``. ``axis`` is numpy's spelling of it.
    dtype : str or numpy dtype, optional
        Cast the input to it first (differentiably).

    Returns
    -------
    Tensor
        Of the input's shape.
    """
    a, ax = _softmax_input("log_softmax", a, dim, axis, dtype)
    x = a._data
    xp = backend_of(x).xp
    out = x - logsumexp_array(xp, x, ax)
    if a.requires_grad and GRAD_ENABLED[0]:

        def backward(g: Array) -> tuple[Array]:
            return (g - xp.exp(out) * xp.sum(g, axis=ax, keepdims=True),)

        return wrap(out, (backward, (a,)))
    return wrap(out)


def functional_softmax(
    input: Tensor | Array,  # noqa: A002 - PyTorch's name
    dim: int | None = None,
    *,
    dtype: str | DType | None = None,
    axis: int | None = None,
) -> Tensor:
    """``nn.functional.softmax``: as ``softmax``, but without ``dim`` it picks PyTorch's deprecated
    implicit axis (0 for 0-, 1- and 3-D input, else 1) and warns, as PyTorch's does."""
    a = tensor_arg(input, "softmax")
    if dim is None and axis is None:
        dim = implicit_softmax_dim("softmax", a.ndim, stacklevel=2)
    return softmax(a, dim, dtype=dtype, axis=axis)


def functional_log_softmax(
    input: Tensor | Array,  # noqa: A002 - PyTorch's name
    dim: int | None = None,
    *,
    dtype: str | DType | None = None,
    axis: int | None = None,
) -> Tensor:
    """``nn.functional.log_softmax``: as ``log_softmax``, but without ``dim`` it picks PyTorch's
    deprecated implicit axis (as ``F.softmax``) and warns, as PyTorch's does."""
    a = tensor_arg(input, "log_softmax")
    if dim is None and axis is None:
        dim = implicit_softmax_dim("log_softmax", a.ndim, stacklevel=2)
    return log_softmax(a, dim, dtype=dtype, axis=axis)


def dropout(a: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (inverted dropout).

    Parameters
    ----------
    p : float, default 0.5
        The probability of zeroing an element, in [0, 1].
    training : bool, default True
        With False (or ``p=0``) the input itself comes back, unchanged.

    Returns
    -------
    Tensor
        Of the input's shape. The mask is drawn on the input's device from a seed taken from the
        global stream (``tt.manual_seed``); it is not PyTorch's mask for the same seed.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return a
    x = a._data
    backend = backend_of(x)
    xp = backend.xp
    if p == 1.0:
        scale = backend.zeros(x.shape, x.dtype, x)  # on x's device (zeros_like would use CuPy's current one)
    else:
        keep = backend.uniform(x.shape, x.dtype, x, _random.next_seed()) >= p
        # the mask as x's dtype, times the kept scale (where() with two scalars is not array API)
        scale = xp.astype(keep, x.dtype) * (1.0 / (1.0 - p))
    out = x * scale
    if a.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (lambda g: (g * scale,), (a,)))
    return wrap(out)


def embedding(input: Tensor | Array, weight: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument name
    """Rows of ``weight`` picked by the integer indices ``input``; a row picked twice adds both gradients.

    Parameters
    ----------
    input : Tensor, array or nested lists
        Integer row numbers of any shape, each in ``0 .. rows-1`` (-1 does not count from the
        end: it is an IndexError, as in PyTorch).
    weight : Tensor
        The table, of shape (rows, dim).

    Returns
    -------
    Tensor
        Of shape ``input.shape + (dim,)``.

    Notes
    -----
    PyTorch's ``padding_idx``, ``max_norm``, ``scale_grad_by_freq`` and ``sparse`` are not
    supported (``nn.Embedding`` is the layer).
    """
    idx = input._data if isinstance(input, Tensor) else input
    if not hasattr(idx, "dtype"):
        idx = backend_of(weight._data).asarray(idx, None, weight._data)
    backend = backend_of(idx)
    if not backend.xp.isdtype(idx.dtype, "integral"):
        raise TypeError(f"embedding indices must be integers, got dtype {idx.dtype}")
    rows = weight.shape[0] if weight.ndim else 0
    if idx.size:
        # one read of (min, max): a negative index would pick a row from the end, and CuPy does
        # not check bounds at all
        xp = backend.xp
        low, high = (int(v) for v in backend.to_numpy(xp.stack([xp.min(idx), xp.max(idx)])))
        if low < 0 or high >= rows:
            raise IndexError(
                f"index out of range in self: embedding() got index {low if low < 0 else high} for a "
                f"weight of {rows} rows (indices must be in 0..{rows - 1})"
            )
    return getitem(weight, idx)


def layer_norm(
    a: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` axes, then scale by ``weight`` and shift by ``bias``.

    Each sample is ``(x - mean) / sqrt(var + eps)`` over those axes, with the biased variance, as
    in PyTorch.

    Parameters
    ----------
    normalized_shape : int or sequence of ints
        The trailing shape of the input to normalize over.
    weight, bias : Tensor, optional
        Of shape ``normalized_shape``.
    eps : float, default 1e-5
        Added to the variance.

    Returns
    -------
    Tensor
        Of the input's shape.
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    x = a._data
    if tuple(x.shape[x.ndim - len(normalized_shape) :]) != normalized_shape:
        raise ShapeError(
            f"layer_norm: the trailing axes of shape {tuple(x.shape)} must be normalized_shape {normalized_shape}"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and p.shape != normalized_shape:
            raise ShapeError(f"layer_norm: {name} has shape {p.shape}, expected {normalized_shape}")
    xp = backend_of(x).xp
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    batch_axes = tuple(range(x.ndim - len(normalized_shape)))
    centered = x - xp.mean(x, axis=axes, keepdims=True)
    rstd = 1.0 / xp.sqrt(xp.mean(centered * centered, axis=axes, keepdims=True) + eps)
    xhat = centered * rstd
    w = weight._data if weight is not None else None
    out = xhat * w if w is not None else xhat
    if bias is not None:
        out = out + bias._data
    parents = tuple(t for t in (a, weight, bias) if t is not None)
    if any(t.requires_grad for t in parents) and GRAD_ENABLED[0]:

        def backward(g: Array) -> tuple[Array | None, ...]:
            grads: list[Array | None] = []
            gxhat = g * w if w is not None else g
            if a.requires_grad:
                m1 = xp.mean(gxhat, axis=axes, keepdims=True)
                m2 = xp.mean(gxhat * xhat, axis=axes, keepdims=True)
                grads.append(rstd * (gxhat - m1 - xhat * m2))
            else:
                grads.append(None)
            if weight is not None:
                grads.append(xp.sum(g * xhat, axis=batch_axes) if weight.requires_grad else None)
            if bias is not None:
                grads.append(xp.sum(g, axis=batch_axes) if bias.requires_grad else None)
            return tuple(grads)

        return wrap(out, (backward, parents))
    return wrap(out)


_ndarray = np.ndarray
_numpy_matmul = np.matmul


def linear(
    input: Tensor | Array,  # noqa: A002 - PyTorch's argument name
    weight: Tensor | Array,
    bias: Tensor | Array | None = None,
    activation: str | None = None,
) -> Tensor:
    """``activation(input @ weight.T + bias)`` as one graph node.

    Parameters
    ----------
    weight : Tensor
        Of shape (out_features, in_features), PyTorch's layout; the input's last axis has
        ``in_features`` elements.
    bias : Tensor, optional
        Of shape (out_features,).
    activation : {None, 'relu', 'gelu', 'sigmoid', 'tanh'}
        Applied to the result in the same node; a tinytensor extension (PyTorch's ``linear`` has
        none). ``'gelu'`` is the tanh approximation.

    Returns
    -------
    Tensor
        Of shape ``input.shape[:-1] + (out_features,)``. The input, weight and bias must have one
        dtype and be on one device.

    Notes
    -----
    On a GPU with the extension built, the matmul runs in cuBLAS and bias + activation (forward
    and backward) in one fused kernel.
    """
    # this runs once per layer per step: it keeps to plain checks
    check_activation(activation, "linear")
    a = input if type(input) is Tensor else tensor_arg(input, "linear", "input")
    if not isinstance(weight, Tensor) or (bias is not None and not isinstance(bias, Tensor)):
        weight = tensor_arg(weight, "linear", "weight")
        bias = None if bias is None else tensor_arg(bias, "linear", "bias")
    x, w = a._data, weight._data
    b = bias._data if bias is not None else None
    if type(x) is not type(w) or (b is not None and type(b) is not type(w)):
        raise combine_error("linear", x, w if type(x) is not type(w) else b)
    if x.ndim < 1 or w.ndim != 2 or x.shape[-1] != w.shape[1]:
        raise ShapeError(
            f"linear: input of shape {tuple(x.shape)} does not fit weight of shape {tuple(w.shape)} "
            "(the input's last axis must equal weight.shape[1])"
        )
    if b is not None and (b.ndim != 1 or b.shape[0] != w.shape[0]):
        raise ShapeError(f"linear: bias has shape {tuple(b.shape)}, expected ({w.shape[0]},)")
    if x.dtype is not w.dtype or (b is not None and b.dtype is not w.dtype):
        arrays = (w, x) if b is None else (w, x, b)
        check_same_dtype("linear", *arrays, *("weight", "input", "bias")[: len(arrays)])
    backend = backend_of(x)
    if type(x) is not _ndarray:  # one device for all three (numpy has only one)
        device = backend.device(x)
        other = w if backend.device(w) != device else b if b is not None and backend.device(b) != device else None
        if other is not None:
            raise combine_error("linear", x, other)
    xp = backend.xp
    x2 = x if x.ndim == 2 else xp.reshape(x, (-1, x.shape[-1]))
    pre, out2, how = backend.linear(x2, w, b, activation)
    out = out2 if x.ndim == 2 else xp.reshape(out2, tuple(x.shape[:-1]) + (w.shape[0],))
    need_b = bias is not None and bias.requires_grad
    if (a.requires_grad or weight.requires_grad or need_b) and GRAD_ENABLED[0]:
        parents = (a, weight) if bias is None else (a, weight, bias)
        saved = (
            x,
            x2,
            w,
            b is not None,
            pre,
            out2,
            activation,
            how,
            a.requires_grad,
            weight.requires_grad,
            need_b,
        )
        return wrap(out, (_linear_backward, parents, *saved))
    return wrap(out)


def _linear_backward(
    g: Array,
    x: Array,
    x2: Array,
    w: Array,
    has_bias: bool,
    pre: Array,
    out2: Array,
    activation: str | None,
    how: str | None,  # the backend's note on which path made pre and out2, for linear_grad
    need_x: bool,
    need_w: bool,
    need_b: bool,
) -> tuple[Array | None, ...]:
    backend = backend_of(g)
    xp = backend.xp
    g2 = g if g.ndim == 2 else xp.reshape(g, (-1, g.shape[-1]))
    gpre, gb = backend.linear_grad(g2, pre, out2, how, activation, has_bias, need_b)
    matmul = _numpy_matmul if type(gpre) is _ndarray else backend.matmul
    gx = gw = None
    if need_x:
        gx = matmul(gpre, w)
        if x.ndim != 2:
            gx = xp.reshape(gx, x.shape)
    if need_w:
        gw = matmul(gpre.T, x2)
    return (gx, gw, gb) if has_bias else (gx, gw)
