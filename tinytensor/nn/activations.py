"""Activation modules (PyTorch's signatures), also importable from 1.x's ``tinytensor.nn.activations``.

1.x's ``LeReLU(alpha=0.01)`` and ``Sigmod`` still resolve here and in ``tinytensor.nn``, with a
DeprecationWarning naming ``LeakyReLU`` and ``Sigmoid``.
"""

from __future__ import annotations

import numbers
import warnings

from ..ops import elementwise, nn_ops
from ..ops.elementwise import ACTIVATION_OPS
from ..ops.nn_ops import implicit_softmax_dim
from .base import Module


class Activation(Module):
    """An activation without parameters: the op ``activation_math.ACTIVATIONS[activation]``. A plain
    Linear followed by one in a Sequential runs as one fused op."""

    activation: str

    def forward(self, x):
        return ACTIVATION_OPS[self.activation](x)


class ReLU(Activation):
    """``max(x, 0)``. After a Linear in a Sequential, it runs fused with the Linear."""

    activation = "relu"


class Sigmoid(Activation):
    activation = "sigmoid"


class Tanh(Activation):
    activation = "tanh"


class LeakyReLU(Module):
    """``x`` where ``x > 0``, else ``negative_slope * x``."""

    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        if isinstance(negative_slope, bool) or not isinstance(negative_slope, numbers.Real):
            raise TypeError(f"LeakyReLU: negative_slope must be a real number, got {type(negative_slope).__name__}")
        self.negative_slope: float = negative_slope

    def forward(self, x):
        return elementwise.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class GELU(Activation):
    """GELU with the tanh approximation, the only form here (PyTorch's default is the exact erf form)."""

    activation = "gelu"

    def __init__(self, approximate: str = "tanh"):
        super().__init__()
        if approximate != "tanh":
            raise ValueError(
                f"GELU: approximate={approximate!r} is not supported; only 'tanh' is "
                "(the array API has no erf for the exact form)"
            )
        self.approximate = approximate

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """Softmax along ``dim``; with ``dim=None``, PyTorch's implicit (deprecated) choice and a warning."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = _check_dim(dim, "Softmax")

    def forward(self, x):
        # stacklevel 3: the warning names the line that called the module (forward <- __call__ <- caller)
        dim = self.dim if self.dim is not None else implicit_softmax_dim("softmax", x.ndim, stacklevel=3)
        return nn_ops.softmax(x, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """Log-softmax along ``dim``; with ``dim=None``, PyTorch's implicit (deprecated) choice and a warning."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = _check_dim(dim, "LogSoftmax")

    def forward(self, x):
        dim = self.dim if self.dim is not None else implicit_softmax_dim("log_softmax", x.ndim, stacklevel=3)
        return nn_ops.log_softmax(x, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments (as PyTorch's)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


def _check_dim(dim, who):
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, numbers.Integral)):
        raise TypeError(f"{who}: dim must be an int or None, got {type(dim).__name__}")
    return dim


# ---------------------------------------------------------------------------- 1.x names
class _LeReLU(LeakyReLU):
    """1.x's ``LeReLU(alpha=0.01)``: a LeakyReLU whose slope is also readable as ``alpha``."""

    def __init__(self, alpha: float = 0.01):
        super().__init__(negative_slope=alpha)

    @property
    def alpha(self) -> float:
        return self.negative_slope

    def extra_repr(self) -> str:
        return f"alpha={self.negative_slope}"


_LeReLU.__name__ = _LeReLU.__qualname__ = "LeReLU"

# name -> (what it resolves to, the replacement to name in the warning)
DEPRECATED = {
    "LeReLU": (_LeReLU, "LeakyReLU(negative_slope=...)"),
    "Sigmod": (Sigmoid, "Sigmoid"),
}


def deprecated_alias(name: str, module: str, stacklevel: int):
    """The object behind a deprecated 1.x name, after a DeprecationWarning naming its replacement."""
    target, replacement = DEPRECATED[name]
    warnings.warn(
        f"{module}.{name} is a deprecated 1.x name: use {module}.{replacement} instead",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )
    return target


def __getattr__(name):
    # PEP 562: runs only for names not defined above, i.e. on `activations.LeReLU` or
    # `from tinytensor.nn.activations import LeReLU`; stacklevel 2 is the line doing that.
    if name in DEPRECATED:
        return deprecated_alias(name, __name__, stacklevel=2)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Activation", "ReLU", "LeakyReLU", "Sigmoid", "Tanh", "GELU", "Softmax", "LogSoftmax", "Identity"]
