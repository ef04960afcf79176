"""Losses over class indices with PyTorch's semantics (reductions, class weights, ignore_index,
label_smoothing): ``cross_entropy`` and ``nll_loss``; the reduction argument checks every loss shares.

cross_entropy is fused (stable forward, one-step gradient); on a GPU with the extension,
cross_entropy without class weights, ignored targets or smoothing is one kernel. The losses that
compare input and target element by element are in ``pointwise_losses.py``.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..array_types import Array, Namespace
from ..autograd import GRAD_ENABLED
from ..backend import Backend
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor, wrap
from .arith import combine_error
from .reduce import logsumexp_array

REDUCTIONS = ("mean", "sum", "none")


def _reduce_rows(xp: Namespace, rows: Array, reduction: str) -> Array:
    if reduction == "mean":  # over every element (rows may be N-d for the elementwise losses)
        count = 1
        for n in rows.shape:
            count *= n
        return backend_of(rows).sum(rows) / count
    if reduction == "sum":
        return backend_of(rows).sum(rows)
    return rows


def _row_grad_scale(xp: Namespace, g: Array, n: int | Array, reduction: str) -> Array:
    """d loss / d row-loss as a column, for each reduction; ``n`` is the number of rows that count."""
    if reduction == "none":
        return xp.reshape(g, (-1, 1))
    return g / n if reduction == "mean" else g


def check_reduction(reduction: object, op: str) -> None:
    """One of ``REDUCTIONS`` ('mean', 'sum', 'none'), else a ValueError naming ``op``."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}: unknown reduction {reduction!r}: expected one of {REDUCTIONS}")


def check_ignore_index(ignore_index: object, op: str) -> None:
    """Any int, as in PyTorch: a target equal to it is left out; it need not be a class."""
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, numbers.Integral):
        raise TypeError(f"{op}: ignore_index must be an int, got {type(ignore_index).__name__}")


def check_label_smoothing(label_smoothing: object, op: str) -> None:
    """A number in [0, 1]: the weight moved from the target class to the uniform distribution."""
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, numbers.Real):
        raise TypeError(f"{op}: label_smoothing must be a number, got {type(label_smoothing).__name__}")
    # numbers.Real declares only < and <= (typeshed follows the ABC): float <= Real is not typed
    if not 0.0 <= label_smoothing <= 1.0:  # type: ignore[operator]
        raise ValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")


def _labels(logits: Array, target: Tensor | Array, op: str, ignore_index: int) -> tuple[Array, bool]:
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


def _valid_rows(backend: Backend, labels: Array, ignore_index: int, like: Array) -> tuple[Array, Array, Array]:
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


def _reduce_valid(xp: Namespace, rows: Array, count: Array, reduction: str) -> Array:
    if reduction == "mean":
        return xp.sum(rows) / count
    return _reduce_rows(xp, rows, reduction)


def constant_weight(op: str, weight: object, x: Array) -> Array:
    """The array of a loss's ``weight`` Tensor, on ``x``'s device. It takes no gradient: one that
    requires grad while gradients are recorded is an error, as in PyTorch."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"{op}: weight must be a Tensor or None, got {type(weight).__name__}")
    if weight.requires_grad and GRAD_ENABLED[0]:
        raise RuntimeError(
            f"{op}: the loss is not differentiable with respect to weight, which requires grad "
            "(as in PyTorch); pass weight.detach()"
        )
    w = weight._data
    if type(w) is not type(x) or backend_of(x).device(w) != backend_of(x).device(x):
        raise combine_error(op, x, w)
    return w


def _class_weight(op: str, weight: object, x: Array) -> Array | None:
    """A class-weight argument (None, or a Tensor of shape (C,) with the logits' dtype, on their
    device) as its array. It takes no gradient: requiring one is an error, as in PyTorch."""
    if weight is None:
        return None
    if isinstance(weight, str):
        raise TypeError(f"{op}: weight must be a Tensor or None, got str {weight!r}; pass reduction= by keyword")
    w = constant_weight(op, weight, x)
    n_classes = x.shape[1]
    if tuple(w.shape) != (n_classes,):
        raise ShapeError(
            f"{op}: weight tensor should be defined either for all {n_classes} classes or no classes "
            f"but got weight tensor of shape {tuple(w.shape)}"
        )
    if numpy_dtype(w.dtype) != numpy_dtype(x.dtype):
        raise TypeError(
            f"{op}: weight has dtype {numpy_dtype(w.dtype)} but input has dtype {numpy_dtype(x.dtype)}; "
            "they must match (as in PyTorch)"
        )
    return w


def _target_weights(backend: Backend, w: Array, safe: Array, valid: Array, like: Array) -> tuple[Array, Array]:
    """(each row's weight ``w[target]``, 0 where ignored; their sum as the mean's divisor, NaN when 0)."""
    xp = backend.xp
    rows_w = xp.where(valid, xp.take(w, safe), 0)
    total = xp.sum(rows_w)
    return rows_w, xp.where(total != 0, total, backend.full((), float("nan"), like.dtype, like))


def cross_entropy(
    input: Tensor,  # noqa: A002 - PyTorch's argument names
    target: Tensor | Array,
    weight: Tensor | None = None,
    *,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Softmax cross-entropy of (N, C) logits against (N,) integer class indices, as PyTorch's.

    Parameters
    ----------
    input : Tensor
        Unnormalized logits of shape (N, C), floating point.
    target : Tensor or array
        Class indices of shape (N,), an integer dtype, on the input's device; each in
        ``0 .. C-1`` or equal to ``ignore_index``.
    weight : Tensor, optional
        Class weights of shape (C,) and the input's dtype: each row's loss is scaled by its
        target's weight, and the mean divides by the sum of the counted rows' weights. It takes no
        gradient (one that requires grad while gradients are recorded is an error, as in PyTorch).
    ignore_index : int, default -100
        Rows whose target equals it give 0 and do not count in the mean (a mean over no rows is
        NaN, as in PyTorch).
    reduction : {'mean', 'sum', 'none'}, default 'mean'
        ``'none'`` gives the (N,) per-row losses.
    label_smoothing : float, default 0.0
        ``s`` in [0, 1] mixes the target with the uniform distribution over the C classes: each
        row's loss is ``(1 - s) * w[t] * nll + s / C * sum_c(-w[c] * log p_c)``.

    Returns
    -------
    Tensor
        0-d, or (N,) with ``reduction='none'``.

    Raises
    ------
    IndexError
        A target outside ``0 .. C-1`` that is not ``ignore_index``.
    ShapeError
        The input is not (N, C) or the target not (N,).

    Notes
    -----
    Differences from PyTorch: only (N, C) input with class-index targets (no (N, C, d1, ...)
    input, no class-probability targets); the options after ``weight`` are keyword-only
    (PyTorch's next positional argument is its deprecated ``size_average``).
    """
    check_reduction(reduction, "cross_entropy")
    if type(ignore_index) is not int:  # the checks' common cases, inline: this runs every step
        check_ignore_index(ignore_index, "cross_entropy")
    if type(label_smoothing) is not float or label_smoothing:
        check_label_smoothing(label_smoothing, "cross_entropy")
    x = input._data
    labels, may_ignore = _labels(x, target, "cross_entropy", ignore_index)
    w = _class_weight("cross_entropy", weight, x)
    if may_ignore or label_smoothing or w is not None:
        return _cross_entropy_masked(input, labels, reduction, ignore_index, float(label_smoothing), w)
    backend = backend_of(x)
    rows, saved = backend.softmax_xent(x, labels)
    out = _reduce_rows(backend.xp, rows, reduction)
    if input.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (_cross_entropy_backward, (input,), backend, saved, labels, x.shape[0], reduction))
    return wrap(out)


def _cross_entropy_backward(
    g: Array,
    backend: Backend,
    saved: tuple[Array, Array],  # softmax_xent's: (exps, sums), or ("fused", probs) from the extension
    labels: Array,
    n: int,
    reduction: str,
) -> tuple[Array]:
    return (backend.softmax_xent_grad(saved, labels, _row_grad_scale(backend.xp, g, n, reduction)),)


def _cross_entropy_masked(
    logits: Tensor, labels: Array, reduction: str, ignore_index: int, smoothing: float, w: Array | None
) -> Tensor:
    """cross_entropy with class weights, ignored targets and/or label smoothing: every row masked,
    no fused kernel."""
    x = logits._data
    backend = backend_of(x)
    xp = backend.xp
    n_classes = x.shape[1]
    valid, safe, count = _valid_rows(backend, labels, ignore_index, x)
    log_probs = x - logsumexp_array(xp, x, (1,))
    rows = -backend.pick_columns(log_probs, safe)
    rows_w = None
    if w is not None:
        rows_w, count = _target_weights(backend, w, safe, valid, x)
        rows = rows_w * rows
    if smoothing:
        spread = log_probs * w if w is not None else log_probs
        rows = (1.0 - smoothing) * rows - (smoothing / n_classes) * xp.sum(spread, axis=1)
    rows = xp.where(valid, rows, 0)
    out = _reduce_valid(xp, rows, count, reduction)
    if logits.requires_grad and GRAD_ENABLED[0]:

        def backward(g: Array) -> tuple[Array]:
            scale = _row_grad_scale(xp, g, count, reduction)
            hot = backend.onehot(safe, n_classes, x.dtype, x)
            probs = xp.exp(log_probs)
            if w is None:
                # d row / d logits = softmax - (1 - s) * onehot - s / C
                target_probs = (1.0 - smoothing) * hot + smoothing / n_classes if smoothing else hot
                grad = probs - target_probs
            else:
                # (1 - s) * w[t] * (softmax - onehot) + s / C * (softmax * sum(w) - w)
                grad = xp.reshape(rows_w, (-1, 1)) * (probs - hot)
                if smoothing:
                    grad = (1.0 - smoothing) * grad + (smoothing / n_classes) * (probs * xp.sum(w) - w)
            return (xp.where(xp.reshape(valid, (-1, 1)), grad * scale, 0),)

        return wrap(out, (backward, (logits,)))
    return wrap(out)


def nll_loss(
    input: Tensor,  # noqa: A002 - PyTorch's argument names
    target: Tensor | Array,
    weight: Tensor | None = None,
    *,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of (N, C) log-probabilities at (N,) integer class indices.

    ``nll_loss(log_softmax(x, 1), t)`` is ``cross_entropy(x, t)``.

    Parameters
    ----------
    input : Tensor
        Log-probabilities of shape (N, C), floating point.
    target : Tensor or array
        Class indices of shape (N,), an integer dtype; each in ``0 .. C-1`` or equal to
        ``ignore_index``.
    weight : Tensor, optional
        Class weights of shape (C,) and the input's dtype: each row is scaled by its target's
        weight, and the mean divides by the sum of the counted rows' weights. It takes no gradient.
    ignore_index : int, default -100
        Rows whose target equals it give 0 and do not count in the mean (a mean over no rows is
        NaN, as in PyTorch).
    reduction : {'mean', 'sum', 'none'}, default 'mean'
        ``'none'`` gives the (N,) per-row losses.

    Returns
    -------
    Tensor
        0-d, or (N,) with ``reduction='none'``.

    Notes
    -----
    Only (N, C) input; the options after ``weight`` are keyword-only (PyTorch's next positional
    argument is its deprecated ``size_average``).
    """
    check_reduction(reduction, "nll_loss")
    check_ignore_index(ignore_index, "nll_loss")
    x = input._data
    labels, may_ignore = _labels(x, target, "nll_loss", ignore_index)
    w = _class_weight("nll_loss", weight, x)
    backend = backend_of(x)
    xp = backend.xp
    valid, count = None, x.shape[0]
    if may_ignore or w is not None:
        valid, labels, count = _valid_rows(backend, labels, ignore_index, x)
    rows = -backend.pick_columns(x, labels)
    rows_w = None
    if w is not None:
        rows_w, count = _target_weights(backend, w, labels, valid, x)
        rows = rows_w * rows
    if valid is None:
        out = _reduce_rows(xp, rows, reduction)
    else:
        rows = xp.where(valid, rows, 0)
        out = _reduce_valid(xp, rows, count, reduction)
    if input.requires_grad and GRAD_ENABLED[0]:

        def backward(g: Array) -> tuple[Array]:
            scale = _row_grad_scale(xp, g, count, reduction)
            if rows_w is not None:
                scale = scale * xp.reshape(rows_w, (-1, 1))
            grad = backend.onehot(labels, x.shape[1], x.dtype, x) * -scale
            if valid is not None:
                grad = xp.where(xp.reshape(valid, (-1, 1)), grad, 0)
            return (grad,)

        return wrap(out, (backward, (input,)))
    return wrap(out)
