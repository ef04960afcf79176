"""Batch normalization (``F.batch_norm``), with its fused gradient and the running-statistics update;
group normalization (``F.group_norm``), which runs the same fused code on each sample's channel groups.

Layer normalization, which normalizes each sample rather than each channel, is ``nn_ops.layer_norm``.
"""

from __future__ import annotations

import math
import numbers

from ..argcheck import is_integral, is_real
from ..array_types import Array
from ..autograd import GRAD_ENABLED, no_grad
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor, wrap
from .arith import add, combine_error, mul, sub
from .shape import reshape


def _channel_arg(name: str, value: Tensor | None, x: Array, channels: int) -> Array | None:
    """A per-channel tensor argument (None, or a Tensor of shape (C,) with ``x``'s dtype, on its
    device) as its array."""
    if value is None:
        return None
    if not isinstance(value, Tensor):
        raise TypeError(f"batch_norm(): {name} must be a Tensor or None, got {type(value).__name__}")
    data = value._data
    if type(data) is not type(x) or backend_of(x).device(data) != backend_of(x).device(x):
        raise combine_error("batch_norm()", x, data)
    if tuple(data.shape) != (channels,):
        raise ShapeError(
            f"batch_norm(): {name} should contain {channels} elements (one per channel of the input's "
            f"axis 1), got shape {tuple(data.shape)}"
        )
    if numpy_dtype(data.dtype) != numpy_dtype(x.dtype):
        raise TypeError(
            f"batch_norm(): {name} has dtype {numpy_dtype(data.dtype)} but the input has dtype "
            f"{numpy_dtype(x.dtype)}; they must match"
        )
    return data


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"batch_norm(): {name} must be a number, got {type(value).__name__}")
    return float(value)


def batch_norm(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel (axis 1) of an (N, C, ...) input, then scale by ``weight`` and shift by ``bias``.

    Parameters
    ----------
    input : Tensor
        Floating point, of shape (N, C) or (N, C, d1, ...).
    running_mean, running_var : Tensor or None
        Per-channel statistics of shape (C,). With ``training=True`` each one given is updated in
        place to ``(1 - momentum) * running + momentum * batch`` (the batch's unbiased variance,
        as PyTorch); with ``training=False`` both are required and used to normalize.
    weight, bias : Tensor, optional
        Per-channel scale and shift, of shape (C,).
    training : bool, default False
        Normalize with the batch's mean and biased variance over every axis but 1 (True), or with
        the running statistics (False).
    momentum : float, default 0.1
        The weight of the batch's statistics in the running ones.
    eps : float, default 1e-5
        Added to the variance.

    Returns
    -------
    Tensor
        Of the input's shape.

    Raises
    ------
    ValueError
        ``training=True`` with one value per channel, or ``training=False`` without running
        statistics.
    TypeError
        A per-channel tensor whose dtype is not the input's (as PyTorch on the CPU).
    """
    x = input._data
    if x.ndim < 2:
        raise ShapeError(f"batch_norm(): expected an input of shape (N, C, *), got shape {tuple(x.shape)}")
    if numpy_dtype(x.dtype).kind != "f":
        raise TypeError(f"batch_norm(): the input must be floating point, got dtype {numpy_dtype(x.dtype)}")
    channels = x.shape[1]
    rm = _channel_arg("running_mean", running_mean, x, channels)
    rv = _channel_arg("running_var", running_var, x, channels)
    w = _channel_arg("weight", weight, x, channels)
    b = _channel_arg("bias", bias, x, channels)
    momentum, eps = _number("momentum", momentum), _number("eps", eps)
    axes = (0, *range(2, x.ndim))
    count = math.prod(x.shape[i] for i in axes)
    if training and count == 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {tuple(x.shape)} (batch_norm())"
        )
    if not training and (rm is None or rv is None):
        raise ValueError(
            "batch_norm(): running_mean and running_var must be defined in evaluation mode (training=False)"
        )
    xp = backend_of(x).xp
    column = (1, channels) + (1,) * (x.ndim - 2)  # a per-channel array broadcast against x
    use_batch = training and count > 0  # an empty batch has no statistics (and changes none)
    if use_batch:
        mean, var = backend_of(x).batch_norm_stats(x)
        mean, var = xp.reshape(mean, column), xp.reshape(var, column)
        centered = x - mean
        rstd = 1.0 / xp.sqrt(var + eps)
        _update_running(running_mean, mean, momentum)
        _update_running(running_var, var * (count / (count - 1)), momentum)
    elif training:
        centered, rstd = x, backend_of(x).full(column, 1.0, x.dtype, x)
    else:
        centered = x - xp.reshape(rm, column)
        rstd = 1.0 / xp.sqrt(xp.reshape(rv, column) + eps)
    # in place where the array is this call's own: a 4-D batch's arrays are large, and each
    # allocation costs about as much as the arithmetic
    if centered is x:
        xhat = centered * rstd
    else:
        centered *= rstd
        xhat = centered
    wc = xp.reshape(w, column) if w is not None else None
    out = xhat * wc if wc is not None else xhat
    if b is not None:
        if out is xhat:
            out = out + xp.reshape(b, column)
        else:
            out += xp.reshape(b, column)
    parents = tuple(t for t in (input, weight, bias) if t is not None)
    if any(t.requires_grad for t in parents) and GRAD_ENABLED[0]:

        def backward(g: Array) -> tuple[Array | None, ...]:
            gxhat = g * wc if wc is not None else g
            if not input.requires_grad:
                gx = None
            elif use_batch:
                m1 = xp.mean(gxhat, axis=axes, keepdims=True)
                m2 = xp.mean(gxhat * xhat, axis=axes, keepdims=True)
                gx = xhat * -m2  # rstd * (gxhat - m1 - xhat * m2), with one allocation
                gx += gxhat
                gx -= m1
                gx *= rstd
            else:  # constant statistics: a per-channel affine map
                gx = gxhat * rstd
            grads = [gx]
            if weight is not None:
                grads.append(xp.sum(g * xhat, axis=axes) if weight.requires_grad else None)
            if bias is not None:
                grads.append(xp.sum(g, axis=axes) if bias.requires_grad else None)
            return tuple(grads)

        return wrap(out, (backward, parents))
    return wrap(out)


def _update_running(stat: Tensor | None, batch: Array, momentum: float) -> None:
    """``stat = (1 - momentum) * stat + momentum * batch``, in place (a change of ``stat``'s version)."""
    if stat is None:
        return
    current = stat._data
    xp = backend_of(current).xp
    new = (1.0 - momentum) * current + momentum * xp.reshape(batch, current.shape)
    with no_grad():
        stat.copy_(wrap(new))


def group_norm(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each sample's channels in ``num_groups`` groups, then scale by ``weight`` and shift by ``bias``.

    The C channels of an (N, C, ...) input are split into ``num_groups`` groups of consecutive
    channels; each group of each sample is normalized with its own mean and (biased) variance, over
    its channels and every position, as PyTorch's ``group_norm``.

    Parameters
    ----------
    input : Tensor
        Floating point, of shape (N, C, ...), C divisible by ``num_groups``.
    num_groups : int
        The number of groups.
    weight, bias : Tensor, optional
        Per-channel scale and shift, of shape (C,).
    eps : float, default 1e-5
        Added to the variance.

    Returns
    -------
    Tensor
        Of the input's shape.

    Raises
    ------
    ShapeError
        An input of fewer than 2 dimensions, C not divisible by ``num_groups``, or ``weight`` or
        ``bias`` not of shape (C,).

    Examples
    --------
    >>> import tinytensor as tt
    >>> x = tt.tensor([[[1.0, 3.0], [5.0, 7.0]]])  # (N=1, C=2, L=2)
    >>> tt.nn.functional.group_norm(x, 1).numpy().round(3)
    array([[[-1.342, -0.447],
            [ 0.447,  1.342]]], dtype=float32)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"group_norm(): input must be a Tensor, got {type(input).__name__}")
    shape = input.shape
    if len(shape) < 2:
        raise ShapeError(f"group_norm(): expected at least 2 dimensions for input tensor but received {len(shape)}")
    if not is_integral(num_groups) or num_groups <= 0:
        raise ValueError(f"group_norm(): num_groups must be a positive integer, got {num_groups!r}")
    if not is_real(eps):
        raise TypeError(f"group_norm(): eps must be a number, got {type(eps).__name__}")
    groups, channels = int(num_groups), shape[1]
    if channels % groups:
        raise ShapeError(
            "group_norm(): expected number of channels in input to be divisible by num_groups, but got input of "
            f"shape {list(shape)} and num_groups={groups}"
        )
    affine: tuple[tuple[str, object], ...] = (("weight", weight), ("bias", bias))  # object: checked at run time
    for name, value in affine:
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"group_norm(): {name} must be a Tensor or None, got {type(value).__name__}")
        if isinstance(value, Tensor) and value.shape != (channels,):
            raise ShapeError(
                f"group_norm(): expected {name} to be a vector of size equal to the number of channels in input, "
                f"but got {name} of shape {list(value.shape)} and input of shape {list(shape)}"
            )
    per_group = math.prod(shape[1:]) // groups
    # each (sample, group) is one "channel" of batch_norm's training-mode statistics
    flat = reshape(input, (1, shape[0] * groups, per_group))
    # one value per group: the variance is 0 and the normalized value 0 (batch_norm refuses it)
    normalized = sub(flat, flat) if per_group == 1 else batch_norm(flat, None, None, training=True, eps=eps)
    out = reshape(normalized, shape)
    column = (1, channels) + (1,) * (len(shape) - 2)
    if weight is not None:
        out = mul(out, reshape(weight, column))
    if bias is not None:
        out = add(out, reshape(bias, column))
    return out
