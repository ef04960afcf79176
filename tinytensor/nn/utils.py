"""Helpers on parameters and gradients (PyTorch's ``torch.nn.utils``): gradient clipping.

The norm is computed where the gradients are (numpy, CuPy or array_api_strict arrays, through
each array's own namespace): one reduction per gradient on its device, partial results combined
per device, and no transfer to the host unless ``error_if_nonfinite`` asks for a check.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable

import numpy as np

from ..array_types import Array, DType, Namespace
from ..devices import backend_of, device_of, transfer
from ..tensor import Tensor, grad_array, wrap

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients in place so that their total norm is at most ``max_norm``.

    The total norm is the ``norm_type``-norm of all gradients together, as if concatenated.
    Every gradient is multiplied by ``min(1, max_norm / (total + 1e-6))``, as PyTorch does (so a
    NaN or inf norm makes the gradients NaN or 0 unless ``error_if_nonfinite`` raises instead).

    Parameters
    ----------
    parameters : Tensor or iterable of Tensor
        The parameters whose gradients to clip (``model.parameters()``); those without
        ``.grad`` are skipped.
    max_norm : float
        The largest total norm the gradients keep.
    norm_type : float
        The order of the norm: a number > 0, ``inf`` (the largest absolute value) or ``-inf``
        (the smallest); default 2.
    error_if_nonfinite : bool
        True: raise RuntimeError, changing nothing, when the total norm is NaN or infinite.
    foreach : bool or None
        Accepted for PyTorch compatibility and ignored.

    Returns
    -------
    Tensor
        The total norm before clipping, 0-d, on the first gradient's device (a CPU 0 when no
        parameter has a gradient).

    Examples
    --------
    >>> import tinytensor as tt
    >>> w = tt.tensor([3.0, 4.0], requires_grad=True)
    >>> (w * w).sum().backward()  # grad = 2 * w = [6, 8], norm 10
    >>> tt.nn.utils.clip_grad_norm_([w], max_norm=1.0).item()
    10.0
    >>> [round(float(g), 4) for g in w.grad]
    [0.6, 0.8]
    """
    grads = _grads(parameters, "clip_grad_norm_")
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if not (norm_type > 0 or norm_type == -math.inf):
        raise ValueError(f"clip_grad_norm_: invalid norm_type {norm_type!r}: must be a number > 0, inf or -inf")
    if not grads:
        return Tensor(0.0)
    total = _total_norm(grads, norm_type)
    if error_if_nonfinite and not bool(backend_of(total).xp.isfinite(total)):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is non-finite "
            f"({float(total)}), so they cannot be clipped. To scale the gradients by the non-finite "
            "norm anyway, pass error_if_nonfinite=False"
        )
    xp = backend_of(total).xp
    coef = max_norm / (total + 1e-6)
    # minimum keeps a NaN (NaN gradients stay NaN, as in PyTorch); asarray: numpy makes 0-d results scalars
    coef = xp.asarray(xp.minimum(coef, xp.ones_like(coef)))
    # the coefficient per (array type, device, dtype): one transfer per device, not per gradient
    on_place: dict[tuple[type, str | None, DType], Array] = {}
    for g in grads:
        key = (type(g), _place_key(g), g.dtype)
        c = on_place.get(key)
        if c is None:
            c = on_place[key] = _as_on(coef, g)
        g *= c
    return wrap(total)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient to ``[-clip_value, clip_value]`` in place (NaN stays NaN).

    ``parameters`` is one Tensor or an iterable of them (those without ``.grad`` are skipped);
    ``clip_value`` is a number >= 0. ``foreach`` is accepted for PyTorch compatibility and ignored.
    """
    clip_value = float(clip_value)
    if not clip_value >= 0:
        raise ValueError(f"clip_grad_value_: invalid clip_value {clip_value!r}: must be a number >= 0")
    for g in _grads(parameters, "clip_grad_value_"):
        g[...] = backend_of(g).xp.clip(g, -clip_value, clip_value)


# ---------------------------------------------------------------------- helpers
def _grads(parameters: Tensor | Iterable[object], where: str) -> list[Array]:
    """The gradient arrays of ``parameters`` (one tensor or an iterable), skipping those without."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    elif isinstance(parameters, (str, bytes, dict)) or not hasattr(parameters, "__iter__"):
        raise TypeError(
            f"{where}: parameters must be a Tensor or an iterable of Tensors, got {type(parameters).__name__}"
        )
    grads = []
    for k, p in enumerate(parameters):
        if not isinstance(p, Tensor):
            raise TypeError(f"{where}: parameters[{k}] is a {type(p).__name__}, expected a Tensor")
        g = grad_array(p)
        if g is None:
            continue
        if isinstance(g, np.generic):  # a numpy scalar cannot change in place: store an array
            g = np.array(g)
            p.grad = g
        grads.append(g)
    return grads


def _total_norm(grads: list[Array], norm_type: float) -> Array:
    """The norm of all gradients together, as a 0-d array on the first gradient's device."""
    by_place: dict[
        tuple[type, str | None], list[Array]
    ] = {}  # partial results per device, combined there before any transfer
    for g in grads:
        by_place.setdefault((type(g), _place_key(g)), []).append(_partial(g, norm_type))
    first = grads[0]
    parts = []
    for (array_type, _place), partials in by_place.items():
        part = _combine(partials, norm_type)
        if len(by_place) > 1:  # a few 0-d transfers: one per device
            part = transfer(np.asarray(part) if array_type is np.ndarray else part, device_of(first))
        parts.append(part)
    total = _combine(parts, norm_type)
    xp = backend_of(first).xp
    if norm_type == 2.0:
        total = xp.sqrt(total)
    elif norm_type not in (math.inf, -math.inf):
        total = total ** (1.0 / norm_type)
    return xp.asarray(total)  # numpy reductions return scalars; the others are 0-d arrays already


def _partial(g: Array, norm_type: float) -> Array:
    """One gradient's contribution: max/min ``|g|`` for +-inf, else ``sum |g|**p`` (p = 2: a dot product,
    which needs no temporary array)."""
    backend = backend_of(g)
    xp = backend.xp
    half = getattr(xp, "float16", None)  # array_api_strict has none
    if half is not None and g.dtype == half:  # accumulate half precision in float32, as PyTorch does
        g = backend.astype(g, np.float32)
    if norm_type == math.inf:
        return xp.max(xp.abs(g)) if 0 not in g.shape else backend.full((), 0.0, g.dtype, g)
    if norm_type == -math.inf:
        return xp.min(xp.abs(g)) if 0 not in g.shape else backend.full((), math.inf, g.dtype, g)
    if norm_type == 2.0:
        flat = xp.reshape(g, (-1,))
        return backend.matmul(flat, flat)  # a dot product; on a GPU, the extension's cuBLAS (not CuPy's)
    if norm_type == 1.0:
        return xp.sum(xp.abs(g))
    return xp.sum(xp.abs(g) ** norm_type)


def _combine(values: list[Array], norm_type: float) -> Array:
    if len(values) == 1:
        return values[0]
    if norm_type == math.inf:
        return functools.reduce(_xp_of(values[0]).maximum, values)
    if norm_type == -math.inf:
        return functools.reduce(_xp_of(values[0]).minimum, values)
    return functools.reduce(lambda a, b: a + b, values)


def _xp_of(value: Array) -> Namespace:
    return np if isinstance(value, np.generic) else backend_of(value).xp


def _place_key(g: Array) -> str | None:
    """What tells devices apart within one array type (numpy has one device)."""
    return None if type(g) is np.ndarray else backend_of(g).device(g)


def _as_on(value: Array, like: Array) -> Array:
    """``value`` (0-d) on ``like``'s device, in ``like``'s dtype."""
    value = transfer(value, device_of(like))
    return backend_of(value).astype(value, like.dtype)
