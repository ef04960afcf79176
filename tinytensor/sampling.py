"""Draws from distributions given by numbers or tensors: ``normal`` and ``multinomial``.

As for ``randn``, the random numbers are drawn on the host (from the global stream or a
``tt.Generator``), so one seed gives the same values on every device.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from . import autograd
from .argcheck import int_at_least
from .array_types import Array, DType, Shape
from .creation import _finish, _float_dtype, _number, _place, _rng, _shape
from .devices import backend_of, device_of, transfer
from .dtypes import is_float, numpy_dtype
from .errors import DeviceError, ShapeError
from .random import Generator
from .tensor import Tensor, wrap


def normal(
    mean: Tensor | float,
    std: Tensor | float = 1.0,
    size: int | Sequence[int] | None = None,
    *,
    generator: Generator | None = None,
    dtype: npt.DTypeLike | None = None,
    device: str | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Normal samples, in PyTorch's forms: ``normal(mean, std, size)`` with numbers (float32 by
    default; ``dtype``, ``device`` and ``requires_grad`` apply to this form only), or a tensor
    ``mean`` and/or ``std``, broadcast against each other, giving their shape and device and
    ``mean``'s dtype (``std``'s when ``mean`` is a number).

    As in PyTorch, a result drawn from a mean or std that requires grad requires grad too, and
    its gradient with respect to them is zero (the draw is not reparameterised: write
    ``mean + std * tt.randn_like(mean)`` for that).
    """
    fn = "normal()"
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError(
                f"{fn}: with a number mean and std, size is required: normal(mean, std, size); "
                "or pass mean or std as a tensor"
            )
        return _normal_of_numbers(mean, std, size, generator, dtype, device, requires_grad)
    if size is not None:
        raise TypeError(f"{fn}: size goes with a number mean and std; a tensor mean or std gives the shape")
    if dtype is not None or device is not None or requires_grad:
        raise TypeError(
            f"{fn}: dtype, device and requires_grad go with normal(mean, std, size) of numbers; "
            "a tensor mean or std gives the dtype and device"
        )
    return _normal_of_tensors(mean, std, generator)


def _normal_of_numbers(
    mean: float,
    std: float,
    size: int | Sequence[int],
    generator: Generator | None,
    dtype: npt.DTypeLike | None,
    device: str | None,
    requires_grad: bool,
) -> Tensor:
    fn = "normal()"
    mean, std = _number(mean, fn, "mean"), _number(std, fn, "std")
    if not std >= 0:  # also refuses NaN
        raise ValueError(f"{fn}: std must be >= 0, got {std}")
    dtype = _float_dtype(dtype, fn)
    shape = _shape((size,) if isinstance(size, (int, np.integer)) else tuple(size), fn)
    rng = _rng(generator, device, fn)
    host = (mean + std * rng.standard_normal(shape)).astype(dtype)
    return _finish(_place(host, device), requires_grad)


def _normal_of_tensors(mean: Tensor | float, std: Tensor | float, generator: Generator | None) -> Tensor:
    fn = "normal()"
    tensors = [(name, t) for name, t in (("mean", mean), ("std", std)) if isinstance(t, Tensor)]
    for name, t in tensors:
        if not is_float(t.dtype):
            raise TypeError(f"{fn}: {name} must be a floating-point tensor, got dtype {t.dtype}")
    devices = {str(t.device) for _, t in tensors}
    if len(devices) > 1:
        (_, mean_tensor), (_, std_tensor) = tensors  # both are tensors: one alone is on one device
        raise DeviceError(f"{fn}: mean is on {mean_tensor.device} and std on {std_tensor.device}; move one with .to()")
    like = tensors[0][1]._data
    backend = backend_of(like)
    xp = backend.xp
    try:
        shape = np.broadcast_shapes(*(tuple(t.shape) for _, t in tensors))
    except ValueError:
        (_, mean_tensor), (_, std_tensor) = tensors  # both are tensors: one alone broadcasts with itself
        raise ShapeError(
            f"{fn}: mean of shape {mean_tensor.shape} and std of shape {std_tensor.shape} cannot be broadcast"
        ) from None
    dtype = numpy_dtype(tensors[0][1].dtype)  # mean's dtype, else std's: as PyTorch, no promotion
    if isinstance(std, Tensor):
        if not bool(xp.all(std._data >= 0)):
            raise ValueError(f"{fn}: every element of std must be >= 0 (found a negative value or NaN)")
        std_value = std._data if numpy_dtype(std.dtype) == dtype else backend.astype(std._data, dtype)
    else:
        std_value = _number(std, fn, "std")
        if not std_value >= 0:
            raise ValueError(f"{fn}: std must be >= 0, got {std_value}")
    mean_value = mean._data if isinstance(mean, Tensor) else _number(mean, fn, "mean")
    rng = _rng(generator, str(tensors[0][1].device), fn)
    noise = transfer(rng.standard_normal(shape).astype(dtype), device_of(like))
    out = mean_value + std_value * noise
    parents = tuple(t for _, t in tensors if t.requires_grad)
    if parents and autograd.GRAD_ENABLED[0]:
        return wrap(out, (_zero_gradients, parents, tuple((p.shape, p.dtype) for p in parents)))
    return wrap(out)


@autograd.saves_nothing
def _zero_gradients(g: Array, shapes_dtypes: tuple[tuple[Shape, DType], ...]) -> tuple[Array, ...]:
    # PyTorch's normal has a zero gradient for its mean and std: the sample is not reparameterised.
    backend = backend_of(g)
    return tuple(backend.zeros(shape, dtype, g) for shape, dtype in shapes_dtypes)


def multinomial(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    num_samples: int,
    replacement: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Category indices (int64) drawn from the probabilities in each row of ``input`` (1-D: one
    distribution; 2-D: one per row, giving ``(rows, num_samples)``). The rows need not sum to 1.

    Without replacement, each row gives ``num_samples`` distinct categories; as in PyTorch,
    categories of probability zero come last, once the others are used up.
    """
    fn = "multinomial()"
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}: input must be a tensor of probabilities, got {type(input).__name__}")
    if not is_float(input.dtype):
        raise TypeError(f"{fn}: input must be a floating-point tensor of probabilities, got dtype {input.dtype}")
    if input.ndim not in (1, 2):
        raise ValueError(f"{fn}: input must be 1-D or 2-D (rows of probabilities), got shape {input.shape}")
    num_samples = int_at_least(fn, "num_samples", num_samples, 1)
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise ValueError(
            f"{fn}: cannot draw {num_samples} samples without replacement from {categories} categories "
            "(pass replacement=True)"
        )
    probs = input.numpy().astype(np.float64).reshape(-1, categories)
    if not np.all(np.isfinite(probs) & (probs >= 0)):
        raise ValueError(f"{fn}: probabilities must be finite and >= 0 (found inf, NaN or a negative value)")
    totals = probs.sum(axis=1)
    empty = np.flatnonzero(totals <= 0)
    if empty.size:
        where = "the probabilities sum" if input.ndim == 1 else f"row {int(empty[0])} of the probabilities sums"
        raise ValueError(f"{fn}: {where} to 0: there is nothing to draw")
    rng = _rng(generator, str(input.device), fn)
    if replacement:
        cdf = np.cumsum(probs, axis=1) / totals[:, None]  # each row ends at exactly 1.0
        draws = rng.random((probs.shape[0], num_samples))
        # The first category whose cumulative probability exceeds the draw; one of probability zero
        # has the same cumulative value as the one before it, so it is never chosen.
        host = np.empty(draws.shape, np.int64)
        for r in range(draws.shape[0]):
            host[r] = np.searchsorted(cdf[r], draws[r], side="right")
    else:
        # The exponential race: ordering the categories by E_i / p_i (E_i exponential draws) picks
        # them one after another with probability proportional to p among those left.
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = rng.standard_exponential(probs.shape) / probs
        host = np.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    host = host.astype(np.int64).reshape((*input.shape[:-1], num_samples))
    return wrap(transfer(host, device_of(input._data)))
