"""Activation modules (PyTorch's signatures), also importable from 1.x's ``tinytensor.nn.activations``.

1.x's ``LeReLU(alpha=0.01)`` and ``Sigmod`` still resolve here and in ``tinytensor.nn``, with a
DeprecationWarning naming ``LeakyReLU`` and ``Sigmoid``.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..argcheck import is_integral, is_real
from ..ops import elementwise, nn_ops
from ..ops.elementwise import ACTIVATION_OPS
from ..ops.nn_ops import implicit_softmax_dim
from ..tensor import Tensor
from .base import Module


class Activation(Module):
    """An activation without parameters: the op ``activation_math.ACTIVATIONS[activation]``. A plain
    Linear followed by one in a Sequential runs as one fused op."""

    activation: str

    def forward(self, x: Tensor) -> Tensor:
        """The activation applied to each element of ``x``."""
        return ACTIVATION_OPS[self.activation](x)


class ReLU(Activation):
    """``max(x, 0)``, elementwise. After a Linear in a Sequential, it runs fused with the Linear."""

    activation = "relu"


class Sigmoid(Activation):
    """``1 / (1 + exp(-x))``, elementwise. After a Linear in a Sequential, it runs fused with the
    Linear."""

    activation = "sigmoid"


class Tanh(Activation):
    """The hyperbolic tangent, elementwise. After a Linear in a Sequential, it runs fused with the
    Linear."""

    activation = "tanh"


class LeakyReLU(Module):
    """``x`` where ``x > 0``, else ``negative_slope * x``, elementwise.

    Parameters
    ----------
    negative_slope : float
        The slope for negative inputs (default 0.01). PyTorch's ``inplace`` argument does not
        exist here.
    """

    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        if not is_real(negative_slope):
            raise TypeError(f"LeakyReLU: negative_slope must be a real number, got {type(negative_slope).__name__}")
        self.negative_slope: float = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        """``x`` where positive, else ``negative_slope * x``."""
        return elementwise.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        """``negative_slope=...``."""
        return f"negative_slope={self.negative_slope}"


class GELU(Activation):
    """``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``, elementwise: GELU with
    the tanh approximation. After a Linear in a Sequential, it runs fused with the Linear.

    Unlike PyTorch, the default and only form is ``approximate="tanh"`` (PyTorch's default is the
    exact erf form, ``approximate="none"``, which raises ValueError here: the array API has no
    erf).
    """

    activation = "gelu"

    def __init__(self, approximate: str = "tanh") -> None:
        super().__init__()
        if approximate != "tanh":
            raise ValueError(
                f"GELU: approximate={approximate!r} is not supported; only 'tanh' is "
                "(the array API has no erf for the exact form)"
            )
        self.approximate = approximate

    def extra_repr(self) -> str:
        """``approximate='tanh'``."""
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """``exp(x) / sum(exp(x))`` along ``dim``: the values along it are positive and sum to 1.

    With ``dim=None``, the axis is PyTorch's implicit (deprecated) choice (0 for 0-, 1- and 3-D
    input, else 1), with a warning, as in PyTorch: pass ``dim``.
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = _check_dim(dim, "Softmax")

    def forward(self, x: Tensor) -> Tensor:
        """The softmax of ``x`` along ``dim``."""
        # stacklevel 3: the warning names the line that called the module (forward <- __call__ <- caller)
        dim = self.dim if self.dim is not None else implicit_softmax_dim("softmax", x.ndim, stacklevel=3)
        return nn_ops.softmax(x, dim)

    def extra_repr(self) -> str:
        """``dim=...``."""
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``x - log(sum(exp(x)))`` along ``dim``, the log of ``Softmax`` computed stably (the
    input NLLLoss takes).

    With ``dim=None``, the axis is PyTorch's implicit (deprecated) choice, with a warning, as in
    ``Softmax``.
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = _check_dim(dim, "LogSoftmax")

    def forward(self, x: Tensor) -> Tensor:
        """The log-softmax of ``x`` along ``dim``."""
        dim = self.dim if self.dim is not None else implicit_softmax_dim("log_softmax", x.ndim, stacklevel=3)
        return nn_ops.log_softmax(x, dim)

    def extra_repr(self) -> str:
        """``dim=...``."""
        return f"dim={self.dim}"


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments (as PyTorch's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # any arguments, ignored
        super().__init__()

    def forward(self, x: Any) -> Any:
        """``x`` itself (whatever it is: the same object)."""
        return x


def _check_dim(dim: int | None, who: str) -> int | None:
    if dim is not None and not is_integral(dim):
        raise TypeError(f"{who}: dim must be an int or None, got {type(dim).__name__}")
    return dim


# ---------------------------------------------------------------------------- 1.x names
class _LeReLU(LeakyReLU):
    """1.x's ``LeReLU(alpha=0.01)``: a LeakyReLU whose slope is also readable as ``alpha``."""

    def __init__(self, alpha: float = 0.01) -> None:
        super().__init__(negative_slope=alpha)

    @property
    def alpha(self) -> float:
        """The slope for negative inputs (``negative_slope``)."""
        return self.negative_slope

    def extra_repr(self) -> str:
        return f"alpha={self.negative_slope}"


_LeReLU.__name__ = _LeReLU.__qualname__ = "LeReLU"

# name -> (what it resolves to, the replacement to name in the warning)
DEPRECATED = {
    "LeReLU": (_LeReLU, "LeakyReLU(negative_slope=...)"),
    "Sigmod": (Sigmoid, "Sigmoid"),
}


def deprecated_alias(name: str, module: str, stacklevel: int) -> type[Module]:
    """The object behind a deprecated 1.x name, after a DeprecationWarning naming its replacement."""
    target, replacement = DEPRECATED[name]
    warnings.warn(
        f"{module}.{name} is a deprecated 1.x name: use {module}.{replacement} instead",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )
    return target


def __getattr__(name: str) -> type[Module]:
    # PEP 562: runs only for names not defined above, i.e. on `activations.LeReLU` or
    # `from tinytensor.nn.activations import LeReLU`; stacklevel 2 is the line doing that.
    if name in DEPRECATED:
        return deprecated_alias(name, __name__, stacklevel=2)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Activation", "ReLU", "LeakyReLU", "Sigmoid", "Tanh", "GELU", "Softmax", "LogSoftmax", "Identity"]
