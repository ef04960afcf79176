"""Loss functions with PyTorch's semantics (reductions, ignore_index, label_smoothing).

cross_entropy and the logits BCE are fused (stable forward, one-step gradient); on a GPU with the
extension, cross_entropy without ignored targets or smoothing is one kernel.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..autograd import GRAD_ENABLED
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor, wrap
from . import elementwise
from .arith import combine_error
from .reduce import logsumexp_array

REDUCTIONS = ("mean", "sum", "none")


def _reduce_rows(xp, rows, reduction):
    if reduction == "mean":  # over every element (rows may be N-d for the elementwise losses)
        count = 1
        for n in rows.shape:
            count *= n
        return backend_of(rows).sum(rows) / count
    if reduction == "sum":
        return backend_of(rows).sum(rows)
    return rows


def _row_grad_scale(xp, g, n, reduction):
    """d loss / d row-loss as a column, for each reduction; ``n`` is the number of rows that count."""
    if reduction == "none":
        return xp.reshape(g, (-1, 1))
    return g / n if reduction == "mean" else g


def check_reduction(reduction, op):
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}: unknown reduction {reduction!r}: expected one of {REDUCTIONS}")


def check_ignore_index(ignore_index, op):
    """Any int, as in PyTorch: a target equal to it is left out; it need not be a class."""
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, numbers.Integral):
        raise TypeError(f"{op}: ignore_index must be an int, got {type(ignore_index).__name__}")


def check_label_smoothing(label_smoothing, op):
    """A number in [0, 1]: the weight moved from the target class to the uniform distribution."""
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, numbers.Real):
        raise TypeError(f"{op}: label_smoothing must be a number, got {type(label_smoothing).__name__}")
    # numbers.Real declares only < and <= (typeshed follows the ABC): float <= Real is not typed
    if not 0.0 <= label_smoothing <= 1.0:  # type: ignore[operator]
        raise ValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")


def _labels(logits, target, op, ignore_index):
    """The integer class-index array for ``logits`` (N, C), checked for shape, dtype, device, range.

    Returns ``(labels, may_ignore)``: ``may_ignore`` is False only when no target can equal
    ``ignore_index``, so the caller can take the plain (or fused) path without masks.
    """
    labels = target._data if isinstance(target, Tensor) else target
    backend = backend_of(logits)
    if not hasattr(labels, "dtype"):
        labels = backend.asarray(labels, None, logits)
    if type(labels) is not type(logits) or (
        type(logits) is not np.ndarray and backend.device(labels) != backend.device(logits)
    ):
        raise combine_error(op, logits, labels)
    if numpy_dtype(labels.dtype).kind not in "iu":
        raise TypeError(f"{op}: target must hold integer class indices, got dtype {labels.dtype}")
    if logits.ndim != 2 or tuple(labels.shape) != (logits.shape[0],):
        raise ShapeError(
            f"{op}: expected input of shape (N, C) and target of shape (N,), got {tuple(logits.shape)} "
            f"and {tuple(labels.shape)}"
        )
    n_classes = logits.shape[1]
    xp = backend.xp
    # One reduction and one device-to-host read when every target is a class (the usual case);
    # CuPy would silently read out of bounds, so a bad target must raise here.
    ignored_found = False
    if backend.labels_outside(labels, n_classes):
        outside = xp.logical_or(labels < 0, labels >= n_classes)
        bad = xp.logical_and(outside, labels != ignore_index)
        if bool(xp.any(bad)):
            values = backend.to_numpy(labels).reshape(-1)
            first = values[backend.to_numpy(bad).reshape(-1)][0]
            raise IndexError(
                f"index {int(first)} is out of range for {op}: classes are 0..{n_classes - 1} "
                f"(or ignore_index={ignore_index})"
            )
        ignored_found = True
    return labels, ignored_found or 0 <= ignore_index < n_classes


def _valid_rows(backend, labels, ignore_index, like):
    """(mask of rows whose target is not ignore_index, their labels with ignored ones set to 0, count).

    ``count`` is a 0-d array of ``like``'s dtype, NaN when every row is ignored, so that a mean
    over no rows is NaN (as in PyTorch) without a division by zero.
    """
    xp = backend.xp
    valid = labels != ignore_index
    safe = xp.where(valid, labels, backend.zeros((), labels.dtype, labels))
    count = xp.sum(xp.astype(valid, like.dtype))
    count = xp.where(count > 0, count, backend.full((), float("nan"), like.dtype, like))
    return valid, safe, count


def _reduce_valid(xp, rows, count, reduction):
    if reduction == "mean":
        return xp.sum(rows) / count
    return _reduce_rows(xp, rows, reduction)


def cross_entropy(
    logits: Tensor, target, reduction: str = "mean", *, ignore_index: int = -100, label_smoothing: float = 0.0
) -> Tensor:
    """Softmax cross-entropy of (N, C) logits against (N,) integer class indices (PyTorch's semantics).

    Rows whose target is ``ignore_index`` give 0 and do not count in the mean (a mean over no rows
    is NaN). ``label_smoothing`` mixes the target with the uniform distribution over the C classes:
    each row's loss is ``(1 - label_smoothing) * nll + label_smoothing / C * sum over classes of -log p``.
    """
    check_reduction(reduction, "cross_entropy")
    if type(ignore_index) is not int:  # the checks' common cases, inline: this runs every step
        check_ignore_index(ignore_index, "cross_entropy")
    if type(label_smoothing) is not float or label_smoothing:
        check_label_smoothing(label_smoothing, "cross_entropy")
    x = logits._data
    labels, may_ignore = _labels(x, target, "cross_entropy", ignore_index)
    if may_ignore or label_smoothing:
        return _cross_entropy_masked(logits, labels, reduction, ignore_index, float(label_smoothing))
    backend = backend_of(x)
    rows, saved = backend.softmax_xent(x, labels)
    out = _reduce_rows(backend.xp, rows, reduction)
    if logits.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (_cross_entropy_backward, (logits,), backend, saved, labels, x.shape[0], reduction))
    return wrap(out)


def _cross_entropy_backward(g, backend, saved, labels, n, reduction):
    return (backend.softmax_xent_grad(saved, labels, _row_grad_scale(backend.xp, g, n, reduction)),)


def _cross_entropy_masked(logits, labels, reduction, ignore_index, smoothing):
    """cross_entropy with ignored targets and/or label smoothing: every row masked, no fused kernel."""
    x = logits._data
    backend = backend_of(x)
    xp = backend.xp
    n_classes = x.shape[1]
    valid, safe, count = _valid_rows(backend, labels, ignore_index, x)
    log_probs = x - logsumexp_array(xp, x, (1,))
    rows = -backend.pick_columns(log_probs, safe)
    if smoothing:
        rows = (1.0 - smoothing) * rows - (smoothing / n_classes) * xp.sum(log_probs, axis=1)
    rows = xp.where(valid, rows, 0)
    out = _reduce_valid(xp, rows, count, reduction)
    if logits.requires_grad and GRAD_ENABLED[0]:

        def backward(g):
            scale = _row_grad_scale(xp, g, count, reduction)
            hot = backend.onehot(safe, n_classes, x.dtype, x)
            # d row / d logits = softmax - (1 - s) * onehot - s / C
            target_probs = (1.0 - smoothing) * hot + smoothing / n_classes if smoothing else hot
            grad = (xp.exp(log_probs) - target_probs) * scale
            return (xp.where(xp.reshape(valid, (-1, 1)), grad, 0),)

        return wrap(out, (backward, (logits,)))
    return wrap(out)


def nll_loss(log_probs: Tensor, target, reduction: str = "mean", *, ignore_index: int = -100) -> Tensor:
    """Negative log-likelihood of (N, C) log-probabilities at (N,) integer class indices.

    Rows whose target is ``ignore_index`` give 0 and do not count in the mean (a mean over no rows
    is NaN, as in PyTorch).
    """
    check_reduction(reduction, "nll_loss")
    check_ignore_index(ignore_index, "nll_loss")
    x = log_probs._data
    labels, may_ignore = _labels(x, target, "nll_loss", ignore_index)
    backend = backend_of(x)
    xp = backend.xp
    valid, count = None, x.shape[0]
    if may_ignore:
        valid, labels, count = _valid_rows(backend, labels, ignore_index, x)
    rows = -backend.pick_columns(x, labels)
    if valid is None:
        out = _reduce_rows(xp, rows, reduction)
    else:
        rows = xp.where(valid, rows, 0)
        out = _reduce_valid(xp, rows, count, reduction)
    if log_probs.requires_grad and GRAD_ENABLED[0]:

        def backward(g):
            scale = _row_grad_scale(xp, g, count, reduction)
            grad = backend.onehot(labels, x.shape[1], x.dtype, x) * -scale
            if valid is not None:
                grad = xp.where(xp.reshape(valid, (-1, 1)), grad, 0)
            return (grad,)

        return wrap(out, (backward, (log_probs,)))
    return wrap(out)


def _check_same_shape(pred, target, op):
    target_shape = target.shape if isinstance(target, Tensor) else tuple(np.shape(target))
    if pred.shape != tuple(target_shape):
        raise ShapeError(f"{op}: input has shape {pred.shape}, target has shape {tuple(target_shape)}")


def _reduce_elements(elems: Tensor, reduction):
    if reduction == "mean":
        return elems.mean()
    if reduction == "sum":
        return elems.sum()
    return elems


def mse_loss(pred: Tensor, target, reduction: str = "mean") -> Tensor:
    """Squared error ``(input - target) ** 2``, reduced; gradients flow to a target that requires them."""
    check_reduction(reduction, "mse_loss")
    _check_same_shape(pred, target, "mse_loss")
    diff = pred - target
    return _reduce_elements(diff * diff, reduction)


def l1_loss(pred: Tensor, target, reduction: str = "mean") -> Tensor:
    """Absolute error ``|input - target|``, reduced; the gradient where they are equal is 0 (as PyTorch)."""
    check_reduction(reduction, "l1_loss")
    _check_same_shape(pred, target, "l1_loss")
    return _reduce_elements(elementwise.abs(pred - target), reduction)


def binary_cross_entropy_with_logits(logits: Tensor, target, reduction: str = "mean") -> Tensor:
    """BCE on logits, stable for any magnitude: max(x, 0) - x*t + log(1 + exp(-|x|))."""
    check_reduction(reduction, "binary_cross_entropy_with_logits")
    x = logits._data
    target_tensor = target if isinstance(target, Tensor) else None
    t = target._data if target_tensor is not None else target
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
