"""Parameter initialization, as ``torch.nn.init``: ``uniform_``, ``normal_``, ``constant_``,
``zeros_``, ``ones_``, ``eye_``, ``xavier_uniform_``, ``xavier_normal_``, ``kaiming_uniform_``,
``kaiming_normal_``, and the helpers ``calculate_gain`` and ``_calculate_fan_in_and_fan_out``.

Each function changes its tensor in place without recording a graph (as under ``no_grad()``),
counts as an in-place change of it (a graph that saved the old values refuses to backpropagate),
and returns it. Random values come from tinytensor's random stream (``tt.manual_seed``), or from
``generator=`` (a ``tt.Generator`` made for the tensor's type of device, as in PyTorch); they are
drawn on the host and copied into the tensor's storage, so one seed gives the same values on
every device. The streams are not PyTorch's: a
seed gives other numbers than it does in PyTorch, from the same distributions.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .. import random as _random
from ..argcheck import is_real
from ..autograd import no_grad
from ..devices import backend_of, device_of, transfer
from ..dtypes import numpy_dtype
from ..tensor import Tensor, wrap

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
]

_LINEAR_GAIN = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity, as PyTorch's table.

    1 for ``"linear"``, the conv names and ``"sigmoid"``; 5/3 for ``"tanh"``; sqrt(2) for
    ``"relu"``; sqrt(2 / (1 + slope**2)) for ``"leaky_relu"`` (the slope is ``param``, default
    0.01); 3/4 for ``"selu"``. Another name is a ValueError.

    Examples
    --------
    >>> from tinytensor.nn import init
    >>> init.calculate_gain("tanh")
    1.6666666666666667
    """
    if nonlinearity in _LINEAR_GAIN or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif is_real(param):
            slope = float(param)
        else:
            raise ValueError(f"calculate_gain(): negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain(): unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of shape ``(out, in, *kernel)``: ``in * prod(kernel)`` and
    ``out * prod(kernel)``; fewer than 2 dimensions is a ValueError, as in PyTorch."""
    _check_tensor("_calculate_fan_in_and_fan_out", tensor)
    shape = tensor.shape
    if len(shape) < 2:
        raise ValueError(
            f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (got shape {shape})"
        )
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: object) -> int:
    modes = ("fan_in", "fan_out")
    if not isinstance(mode, str) or mode.lower() not in modes:
        raise ValueError(f"Mode {mode!r} not supported, please use one of {modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode.lower() == "fan_in" else fan_out


# ---------------------------------------------------------------------------- writing
def _check_tensor(fn: str, tensor: object) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{fn}(): tensor must be a Tensor, got {type(tensor).__name__}")


def _rng(fn: str, generator: _random.Generator | None, tensor: Tensor) -> np.random.Generator:
    """The stream to draw from: ``generator``'s (made for the tensor's type of device, as in
    PyTorch), else the global one."""
    return _random.rng_for(generator, backend_of(tensor._data).kind, f"{fn}()")


def _number(fn: str, name: str, value: object) -> float:
    if not is_real(value):
        raise TypeError(f"{fn}(): {name} must be a number, got {type(value).__name__}")
    return float(value)


def _float_tensor(fn: str, tensor: Tensor) -> np.dtype[Any]:
    _check_tensor(fn, tensor)
    dtype = numpy_dtype(tensor.dtype)
    if dtype.kind != "f":
        raise TypeError(f"{fn}(): random values need a floating-point tensor, got dtype {dtype}")
    return dtype


def _write(tensor: Tensor, host: np.ndarray[Any, Any]) -> Tensor:
    """Copy host values into ``tensor``'s storage on its device, as an in-place change."""
    placed = transfer(host.astype(numpy_dtype(tensor.dtype), copy=False), device_of(tensor._data))
    with no_grad():
        tensor.copy_(wrap(placed))
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: _random.Generator | None = None) -> Tensor:
    """Fill the floating-point ``tensor`` with samples from U(a, b), in place; returns it.

    Parameters
    ----------
    tensor : Tensor
        The tensor to fill (a Parameter, typically).
    a, b : float
        The bounds, ``a <= b``.
    generator : tinytensor.Generator, optional
        The stream to draw from instead of the global one (made for the tensor's type of device).
    """
    _float_tensor("uniform_", tensor)
    low, high = _number("uniform_", "a", a), _number("uniform_", "b", b)
    if low > high:
        raise ValueError(f"uniform_(): a must be at most b, got a={low} and b={high}")
    return _write(tensor, _rng("uniform_", generator, tensor).uniform(low, high, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: _random.Generator | None = None) -> Tensor:
    """Fill the floating-point ``tensor`` with samples from N(mean, std**2), in place; returns it.

    Parameters
    ----------
    tensor : Tensor
        The tensor to fill.
    mean, std : float
        The distribution's mean and standard deviation (``std >= 0``).
    generator : tinytensor.Generator, optional
        The stream to draw from instead of the global one (made for the tensor's type of device).
    """
    _float_tensor("normal_", tensor)
    mean, std = _number("normal_", "mean", mean), _number("normal_", "std", std)
    if std < 0:
        raise ValueError(f"normal_(): std must be non-negative, got {std}")
    rng = _rng("normal_", generator, tensor)
    return _write(tensor, rng.normal(mean, std, tensor.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with the number ``val``, in place; returns it."""
    _check_tensor("constant_", tensor)
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with ones."""
    return constant_(tensor, 1)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with zeros."""
    return constant_(tensor, 0)


def eye_(tensor: Tensor) -> Tensor:
    """Set a 2-D ``tensor`` to the identity matrix (ones on the diagonal, zeros elsewhere)."""
    _check_tensor("eye_", tensor)
    if tensor.ndim != 2:
        raise ValueError(f"eye_(): only tensors with 2 dimensions are supported, got shape {tensor.shape}")
    rows, cols = tensor.shape
    return _write(tensor, np.eye(rows, cols))


def _xavier_std(fn: str, tensor: Tensor, gain: float) -> float:
    """Glorot's standard deviation ``gain * sqrt(2 / (fan_in + fan_out))`` (0 for a (0, 0) tensor,
    which has nothing to fill)."""
    _float_tensor(fn, tensor)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    gain = _number(fn, "gain", gain)
    return gain * math.sqrt(2.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: _random.Generator | None = None) -> Tensor:
    """Glorot uniform, in place: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``;
    returns ``tensor``.

    Parameters
    ----------
    tensor : Tensor
        A floating-point weight of at least 2 dimensions, (out, in, ...): ``fan_in`` is ``in``
        times the size of the further axes, ``fan_out`` is ``out`` times it.
    gain : float
        A scale, such as ``calculate_gain("relu")``.
    generator : tinytensor.Generator, optional
        The stream to draw from instead of the global one (made for the tensor's type of device).
    """
    std = _xavier_std("xavier_uniform_", tensor, gain)
    bound = math.sqrt(3.0) * std
    return _write(tensor, _rng("xavier_uniform_", generator, tensor).uniform(-bound, bound, tensor.shape))


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: _random.Generator | None = None) -> Tensor:
    """Glorot normal, in place: N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``;
    returns ``tensor``. The arguments are those of ``xavier_uniform_``."""
    std = _xavier_std("xavier_normal_", tensor, gain)
    return _write(tensor, _rng("xavier_normal_", generator, tensor).normal(0.0, std, tensor.shape))


def _kaiming_std(fn: str, tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    """He's standard deviation ``gain / sqrt(fan)``; None for a tensor without elements (no-op)."""
    _float_tensor(fn, tensor)
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: _random.Generator | None = None,
) -> Tensor:
    """He uniform, in place: U(-bound, bound) with ``bound = gain * sqrt(3 / fan)``; returns
    ``tensor``. A tensor without elements is left alone, with a warning (as in PyTorch).

    Parameters
    ----------
    tensor : Tensor
        A floating-point weight of at least 2 dimensions, (out, in, ...).
    a : float
        The negative slope of the leaky_relu after this layer (0: relu's gain).
    mode : str
        ``"fan_in"`` (default: keeps the forward pass's variance) or ``"fan_out"`` (the
        backward pass's): which fan ``fan`` is, as in ``xavier_uniform_``.
    nonlinearity : str
        ``gain = calculate_gain(nonlinearity, a)``; ``"relu"`` or ``"leaky_relu"`` (default).
    generator : tinytensor.Generator, optional
        The stream to draw from instead of the global one (made for the tensor's type of device).
    """
    std = _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return _write(tensor, _rng("kaiming_uniform_", generator, tensor).uniform(-bound, bound, tensor.shape))


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: _random.Generator | None = None,
) -> Tensor:
    """He normal, in place: N(0, std**2) with ``std = gain / sqrt(fan)``; returns ``tensor``.
    The arguments are those of ``kaiming_uniform_``."""
    std = _kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return _write(tensor, _rng("kaiming_normal_", generator, tensor).normal(0.0, std, tensor.shape))
