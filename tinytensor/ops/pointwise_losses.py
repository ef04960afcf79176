"""Losses that compare input and target element by element, with PyTorch's semantics: ``mse_loss``,
``l1_loss``, ``smooth_l1_loss``, ``huber_loss``, ``binary_cross_entropy`` (on probabilities) and
``binary_cross_entropy_with_logits``.

Input and target must have the same shape. Their dtypes follow PyTorch's rule for each loss:
mse, l1 and smooth_l1 take an integer or bool target as the input's dtype (l1 refuses a bool one)
and promote two float dtypes; huber computes in the input's dtype whatever the target's; the
logits BCE refuses integer and bool targets and returns the target's float dtype;
``binary_cross_entropy`` needs the input's dtype exactly. Gradients flow to a float target that
requires them, in its own dtype.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import numpy as np

from ..array_types import Array, DType
from ..autograd import GRAD_ENABLED
from ..backend import Backend
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor, plain_array, wrap
from . import elementwise
from .arith import combine_error
from .loss_functions import check_reduction, constant_weight

# target dtype kinds each loss converts to the input's dtype (PyTorch's type promotion); the
# others refuse integer or bool targets
_CASTS_TARGET = {"mse_loss": "biu", "l1_loss": "iu", "smooth_l1_loss": "biu", "huber_loss": "biu"}

# What a loss takes as its target: a Tensor, an array, or Python numbers (nested lists)
Target = Tensor | Array | float
# ``local_grads(need_x, need_t)``: the elementwise derivatives (d elems / d input, d elems / d target)
_LocalGrads = Callable[[bool, bool], tuple[Array | None, Array | None]]


def _operands(op: str, input: Tensor, target: Target) -> tuple[Array, Array, Tensor | None]:  # noqa: A002
    """(input array, target array, target Tensor that may take a gradient or None), checked for
    device, shape and dtype as ``op`` takes them."""
    x = input._data
    target_tensor = target if isinstance(target, Tensor) else None
    backend = backend_of(x)
    if isinstance(target, Tensor):
        t = target._data
    elif hasattr(target, "shape"):
        t = plain_array(target)
    else:  # a number or nested lists: the input's dtype
        t = backend.asarray(target, numpy_dtype(x.dtype), x)
    if type(t) is not type(x) or backend.device(t) != backend.device(x):
        raise combine_error(op, x, t)
    if tuple(t.shape) != tuple(x.shape):
        raise ShapeError(f"{op}: input has shape {tuple(x.shape)}, target has shape {tuple(t.shape)}")
    x_dtype, t_dtype = numpy_dtype(x.dtype), numpy_dtype(t.dtype)
    if x_dtype.kind != "f":
        raise TypeError(f"{op}: input must be floating point, got dtype {x_dtype}")
    if t_dtype.kind != "f":
        if t_dtype.kind not in _CASTS_TARGET.get(op, ""):
            raise TypeError(
                f"{op}: target has dtype {t_dtype}, input has dtype {x_dtype}: a {t_dtype} target is not "
                "accepted (as in PyTorch); convert it, e.g. target.float()"
            )
        return x, backend.astype(t, x_dtype), None
    if op == "huber_loss":  # PyTorch computes in the input's dtype (the target's gradient is cast back)
        t = backend.astype(t, x_dtype)
    return x, t, target_tensor


def _node(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target_tensor: Tensor | None,
    x: Array,
    t: Array,
    elems: Array,
    reduction: str,
    local_grads: _LocalGrads,
    out_dtype: DType | None = None,
) -> Tensor:
    """``elems`` reduced, as a graph node when a gradient is needed: ``local_grads(need_x, need_t)``
    gives the elementwise derivatives (d elems / d input, d elems / d target), each cast back to its
    tensor's dtype in backward."""
    backend = backend_of(x)
    out = _reduce(backend, elems, reduction)
    if out_dtype is not None:
        out = backend.astype(out, out_dtype)
    need_x = input.requires_grad
    need_t = target_tensor is not None and target_tensor.requires_grad
    if not (need_x or need_t) or not GRAD_ENABLED[0]:
        return wrap(out)
    count = math.prod(x.shape)

    def backward(g: Array) -> tuple[Array | None, ...]:
        scale = g / count if reduction == "mean" else g
        dx, dt = local_grads(need_x, need_t)
        gx = backend.astype(dx * scale, numpy_dtype(x.dtype)) if need_x else None
        if target_tensor is None:
            return (gx,)
        gt = backend.astype(dt * scale, numpy_dtype(target_tensor.dtype)) if need_t else None
        return (gx, gt)

    parents = (input,) if target_tensor is None else (input, target_tensor)
    return wrap(out, (backward, parents))


def _reduce_elements(elems: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return elems.mean()
    if reduction == "sum":
        return elems.sum()
    return elems


def _reduce(backend: Backend, elems: Array, reduction: str) -> Array:
    if reduction == "mean":
        return backend.sum(elems) / math.prod(elems.shape)
    if reduction == "sum":
        return backend.sum(elems)
    return elems


def mse_loss(input: Tensor, target: Target, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Squared error ``(input - target) ** 2``, reduced.

    Parameters
    ----------
    input : Tensor
        Floating point.
    target : Tensor, array or nested lists
        Of the input's shape (PyTorch broadcasts them, with a warning; here different shapes are a
        ShapeError). An integer or bool target is taken as the input's dtype; two floating-point
        dtypes promote. Gradients flow to a target that requires them.
    reduction : {'mean', 'sum', 'none'}, default 'mean'
        ``'none'`` gives the elementwise losses, of the input's shape.

    Returns
    -------
    Tensor
        0-d, or of the input's shape with ``reduction='none'``.
    """
    check_reduction(reduction, "mse_loss")
    diff = input - _target_tensor("mse_loss", input, target)
    return _reduce_elements(diff * diff, reduction)


def l1_loss(input: Tensor, target: Target, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Absolute error ``|input - target|``, reduced; the gradient where they are equal is 0 (as PyTorch).

    The arguments are ``mse_loss``'s, except that a bool target is refused (as in PyTorch).
    """
    check_reduction(reduction, "l1_loss")
    return _reduce_elements(elementwise.abs(input - _target_tensor("l1_loss", input, target)), reduction)


def _target_tensor(op: str, input: Tensor, target: Target) -> Tensor:  # noqa: A002
    """The target as a Tensor with the input's dtype where PyTorch converts it, else as given."""
    _, t, target_tensor = _operands(op, input, target)
    return target_tensor if target_tensor is not None else wrap(t)


def check_positive(op: str, name: str, value: object, allow_zero: bool) -> float:
    """``beta`` or ``delta`` as a float: a number > 0 (>= 0 with ``allow_zero``), else an error naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: {name} must be a number, got {type(value).__name__}")
    value = float(value)
    if value < 0 or (value == 0 and not allow_zero) or math.isnan(value):
        kind = "negative" if allow_zero else "non-positive"
        raise ValueError(f"{op} does not support {kind} values for {name}, got {value}")
    return value


def smooth_l1_loss(input: Tensor, target: Target, *, reduction: str = "mean", beta: float = 1.0) -> Tensor:  # noqa: A002
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (``d = input - target``),
    reduced; ``beta=0`` is the L1 loss. Options are keyword-only (PyTorch's third and fourth
    positional arguments are its deprecated ``size_average`` and ``reduce``)."""
    check_reduction(reduction, "smooth_l1_loss")
    beta = check_positive("smooth_l1_loss", "beta", beta, allow_zero=True)
    x, t, target_tensor = _operands("smooth_l1_loss", input, target)
    xp = backend_of(x).xp
    d = x - t
    ad = xp.abs(d)
    elems = ad if beta == 0 else xp.where(ad < beta, (0.5 / beta) * d * d, ad - 0.5 * beta)

    def local_grads(need_x: bool, need_t: bool) -> tuple[Array | None, Array | None]:
        dx = xp.sign(d) if beta == 0 else xp.clip(d / beta, -1.0, 1.0)
        return dx, -dx

    return _node(input, target_tensor, x, t, elems, reduction, local_grads)


def huber_loss(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target: Target,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``, times ``weight`` (of
    the input's shape) where given, reduced. A target of another dtype is converted to the input's,
    as PyTorch's forward does; unlike PyTorch's, whose backward then fails, the gradient works."""
    check_reduction(reduction, "huber_loss")
    delta = check_positive("huber_loss", "delta", delta, allow_zero=False)
    x, t, target_tensor = _operands("huber_loss", input, target)
    w = None
    if weight is not None:
        w = _weight_array("huber_loss", weight, x)
        if tuple(w.shape) != tuple(x.shape):
            raise ShapeError(
                f"huber_loss: weight has shape {tuple(w.shape)}; it must have the input's {tuple(x.shape)}"
            )
    xp = backend_of(x).xp
    d = x - t
    ad = xp.abs(d)
    elems = xp.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))
    if w is not None:
        elems = elems * w

    def local_grads(need_x: bool, need_t: bool) -> tuple[Array | None, Array | None]:
        dx = xp.clip(d, -delta, delta)
        if w is not None:
            dx = dx * w
        return dx, -dx

    return _node(input, target_tensor, x, t, elems, reduction, local_grads)


def _weight_array(op: str, weight: object, x: Array) -> Array:
    """A ``weight`` tensor's array as ``x``'s dtype, checked for device; it takes no gradient (as in
    PyTorch, where requiring one is an error)."""
    w = constant_weight(op, weight, x)
    if numpy_dtype(w.dtype).kind not in "biuf":
        raise TypeError(f"{op}: weight must hold numbers, got dtype {w.dtype}")
    return backend_of(x).astype(w, numpy_dtype(x.dtype))


def binary_cross_entropy(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    target: Target,
    weight: Tensor | None = None,
    *,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross-entropy of probabilities: ``-weight * (t * log(p) + (1 - t) * log(1 - p))``, each
    log clamped to >= -100 (as PyTorch), reduced. ``input`` and ``target`` must be in [0, 1] and have
    the same dtype; ``weight`` broadcasts to the input's shape. On logits,
    ``binary_cross_entropy_with_logits`` is the stable form."""
    op = "binary_cross_entropy"
    check_reduction(reduction, op)
    if isinstance(weight, str):
        raise TypeError(f"{op}: weight must be a Tensor or None, got str {weight!r}; pass reduction= by keyword")
    x, t, target_tensor = _operands(op, input, target)
    if numpy_dtype(t.dtype) != numpy_dtype(x.dtype):
        raise TypeError(
            f"{op}: target has dtype {numpy_dtype(t.dtype)} but input has dtype {numpy_dtype(x.dtype)}; "
            "they must match (as in PyTorch)"
        )
    backend = backend_of(x)
    xp = backend.xp
    w = None
    if weight is not None:
        w = _weight_array(op, weight, x)
        try:
            fits = np.broadcast_shapes(tuple(w.shape), tuple(x.shape)) == tuple(x.shape)
        except ValueError:
            fits = False
        if not fits:
            raise ShapeError(
                f"{op}: weight of shape {tuple(w.shape)} does not broadcast to the input's {tuple(x.shape)}"
            )
    if x.size and not bool(xp.all(xp.logical_and(xp.logical_and(x >= 0, x <= 1), xp.logical_and(t >= 0, t <= 1)))):
        which = "input" if not bool(xp.all(xp.logical_and(x >= 0, x <= 1))) else "target"
        raise ValueError(f"{op}: all elements of {which} should be between 0 and 1")
    # log(p) and log(1 - p) clamped at -100 without evaluating log(0)
    log_p = xp.where(x > 0, xp.log(xp.where(x > 0, x, 1.0)), -100.0)
    log_q = xp.where(x < 1, xp.log1p(-xp.where(x < 1, x, 0.0)), -100.0)
    elems = (t - 1) * xp.maximum(log_q, -100.0) - t * xp.maximum(log_p, -100.0)
    if w is not None:
        elems = elems * w

    def local_grads(need_x: bool, need_t: bool) -> tuple[Array | None, Array | None]:
        dx = dt = None
        if need_x:
            dx = (x - t) / xp.maximum((1 - x) * x, 1e-12)
            dx = dx * w if w is not None else dx
        if need_t:  # -logit(p), unclamped (infinite at 0 and 1), as PyTorch
            dt = xp.log1p(-x) - xp.log(x)
            dt = dt * w if w is not None else dt
        return dx, dt

    return _node(input, target_tensor, x, t, elems, reduction, local_grads)


def binary_cross_entropy_with_logits(input: Tensor, target: Target, reduction: str = "mean") -> Tensor:  # noqa: A002
    """BCE on logits, stable for any magnitude: ``max(x, 0) - x * t + log(1 + exp(-|x|))``, reduced.

    The target must be floating point (PyTorch refuses integer and bool targets); with two float
    dtypes the loss has the target's dtype, as PyTorch's.
    """
    op = "binary_cross_entropy_with_logits"
    check_reduction(reduction, op)
    x, t, target_tensor = _operands(op, input, target)
    xp = backend_of(x).xp
    elems = xp.maximum(x, 0) - x * t + xp.log1p(xp.exp(-xp.abs(x)))

    def local_grads(need_x: bool, need_t: bool) -> tuple[Array | None, Array | None]:
        dx = 0.5 * (xp.tanh(0.5 * x) + 1) - t if need_x else None  # sigmoid(x) - t, without overflow
        return dx, (-x if need_t else None)

    return _node(input, target_tensor, x, t, elems, reduction, local_grads, out_dtype=numpy_dtype(t.dtype))
