"""Loss functions. cross_entropy and the logits BCE are fused (stable forward, one-step gradient)."""

from __future__ import annotations

import numpy as np

from ..autograd import GRAD_ENABLED
from ..backend import backend_of
from ..errors import ShapeError
from ..tensor import Tensor, wrap
from .arith import combine_error
from .reduce import logsumexp_array
from .shape import check_index_bounds

REDUCTIONS = ("mean", "sum", "none")


def _reduce_rows(xp, rows, reduction):
    if reduction == "mean":
        return xp.mean(rows)
    if reduction == "sum":
        return xp.sum(rows)
    return rows


def _row_grad_scale(xp, g, n, reduction):
    """d loss / d row-loss as a column, for each reduction."""
    if reduction == "none":
        return xp.reshape(g, (-1, 1))
    return g / n if reduction == "mean" else g


def _check_reduction(reduction):
    if reduction not in REDUCTIONS:
        raise ValueError(f"unknown reduction {reduction!r}: expected one of {REDUCTIONS}")


def _labels(logits, target, op):
    """The integer class-index array for ``logits`` (N, C), checked for shape, dtype, device, range."""
    labels = target.data if isinstance(target, Tensor) else target
    backend = backend_of(logits)
    if not hasattr(labels, "dtype"):
        labels = backend.asarray(labels, None, logits)
    if type(labels) is not type(logits) or backend.device(labels) != backend.device(logits):
        raise combine_error(op, logits, labels)
    if not backend.xp.isdtype(labels.dtype, "integral"):
        raise TypeError(f"{op}: target must hold integer class indices, got dtype {labels.dtype}")
    if logits.ndim != 2 or tuple(labels.shape) != (logits.shape[0],):
        raise ShapeError(
            f"{op}: expected input of shape (N, C) and target of shape (N,), got {tuple(logits.shape)} "
            f"and {tuple(labels.shape)}"
        )
    n_classes = logits.shape[1]
    check_index_bounds(backend, labels, n_classes, f"{op}: classes are 0..{n_classes - 1}", allow_negative=False)
    return labels


def _onehot(backend, labels, n_classes, like):
    xp = backend.xp
    classes = xp.reshape(backend.arange(n_classes, like), (1, -1))
    return xp.reshape(labels, (-1, 1)) == classes


def cross_entropy(logits: Tensor, target, reduction: str = "mean") -> Tensor:
    """Softmax cross-entropy of (N, C) logits against (N,) integer class indices."""
    _check_reduction(reduction)
    x = logits.data
    labels = _labels(x, target, "cross_entropy")
    backend = backend_of(x)
    xp = backend.xp
    n = x.shape[0]
    fused = None
    if backend.kind == "cuda":
        from ..backends import cuda_ext

        fused = cuda_ext.try_softmax_xent_forward(x, labels)
    if fused is not None:
        rows, probs = fused
    else:
        lse = logsumexp_array(xp, x, (1,))
        picked = xp.take_along_axis(x, xp.reshape(labels, (-1, 1)), axis=1)
        rows = xp.reshape(lse - picked, (-1,))
        probs = None
    out = _reduce_rows(xp, rows, reduction)
    if logits.requires_grad and GRAD_ENABLED[0]:

        def backward(g):
            scale = _row_grad_scale(xp, g, n, reduction)
            if fused is not None:
                return (cuda_ext.softmax_xent_backward(probs, labels, scale),)
            softmax = xp.exp(x - lse)
            hot = _onehot(backend, labels, x.shape[1], x)
            return ((softmax - xp.astype(hot, x.dtype)) * scale,)

        return wrap(out, (backward, (logits,)))
    return wrap(out)


def nll_loss(log_probs: Tensor, target, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of (N, C) log-probabilities at (N,) integer class indices."""
    _check_reduction(reduction)
    x = log_probs.data
    labels = _labels(x, target, "nll_loss")
    backend = backend_of(x)
    xp = backend.xp
    n = x.shape[0]
    rows = -xp.reshape(xp.take_along_axis(x, xp.reshape(labels, (-1, 1)), axis=1), (-1,))
    out = _reduce_rows(xp, rows, reduction)
    if log_probs.requires_grad and GRAD_ENABLED[0]:

        def backward(g):
            scale = _row_grad_scale(xp, g, n, reduction)
            hot = _onehot(backend, labels, x.shape[1], x)
            return (xp.where(hot, -scale, 0),)

        return wrap(out, (backward, (log_probs,)))
    return wrap(out)


def mse_loss(pred: Tensor, target, reduction: str = "mean") -> Tensor:
    _check_reduction(reduction)
    target_shape = target.shape if isinstance(target, Tensor) else tuple(np.shape(target))
    if pred.shape != tuple(target_shape):
        raise ShapeError(f"mse_loss: input has shape {pred.shape}, target has shape {tuple(target_shape)}")
    diff = pred - target
    sq = diff * diff
    if reduction == "mean":
        return sq.mean()
    if reduction == "sum":
        return sq.sum()
    return sq


def binary_cross_entropy_with_logits(logits: Tensor, target, reduction: str = "mean") -> Tensor:
    """BCE on logits, stable for any magnitude: max(x, 0) - x*t + log(1 + exp(-|x|))."""
    _check_reduction(reduction)
    x = logits.data
    target_tensor = target if isinstance(target, Tensor) else None
    t = target.data if target_tensor is not None else target
    backend = backend_of(x)
    xp = backend.xp
    if not hasattr(t, "shape"):
        t = backend.asarray(t, x.dtype, x)
    if type(t) is not type(x) or backend.device(t) != backend.device(x):
        raise combine_error("binary_cross_entropy_with_logits", x, t)
    if tuple(t.shape) != tuple(x.shape):
        raise ShapeError(
            f"binary_cross_entropy_with_logits: input has shape {tuple(x.shape)}, target has shape {tuple(t.shape)}"
        )
    elems = xp.maximum(x, 0) - x * t + xp.log1p(xp.exp(-xp.abs(x)))
    out = _reduce_rows(xp, elems, reduction)
    count = 1
    for s in x.shape:
        count *= s
    parents = (logits,) if target_tensor is None else (logits, target_tensor)
    if any(p.requires_grad for p in parents) and GRAD_ENABLED[0]:

        def backward(g):
            if reduction == "mean":
                g = g / count
            glogits = (0.5 * (xp.tanh(0.5 * x) + 1) - t) * g if logits.requires_grad else None
            if target_tensor is None:
                return (glogits,)
            return glogits, (-x * g if target_tensor.requires_grad else None)

        return wrap(out, (backward, parents))
    return wrap(out)
