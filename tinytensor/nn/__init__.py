"""Layers and losses: ``Module``, ``Linear``, ``Sequential``, ... and ``nn.functional``.

1.x's module paths are kept: ``nn.modules`` (Module, Sequential), ``nn.linear``, ``nn.losses``,
``nn.activations``; 1.x's ``LeReLU`` and ``Sigmod`` resolve with a DeprecationWarning.
"""

from __future__ import annotations

from ..parameter import Parameter
from . import activations, functional, init, linear, losses, modules, utils
from .activations import GELU, Identity, LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .base import Module, ModuleList
from .containers import ModuleDict, ParameterDict, ParameterList
from .functional import (
    batch_norm,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .layers import Dropout, Embedding, Flatten, LayerNorm, Linear, Sequential
from .legacy_state import convert_state as convert_1x_state
from .losses import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .normalization import BatchNorm1d


def __getattr__(name: str) -> type[Module]:
    # nn.LeReLU / nn.Sigmod (1.x): warn at the user's line (stacklevel 2), then resolve.
    if name in activations.DEPRECATED:
        return activations.deprecated_alias(name, __name__, stacklevel=2)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "functional",
    "init",
    "utils",
    "activations",
    "linear",
    "losses",
    "modules",
    "Module",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
    "Parameter",
    "convert_1x_state",
    "Linear",
    "Sequential",
    "Flatten",
    "Identity",
    "ReLU",
    "LeakyReLU",
    "GELU",
    "Tanh",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "BatchNorm1d",
    "MSELoss",
    "L1Loss",
    "CrossEntropyLoss",
    "NLLLoss",
    "BCEWithLogitsLoss",
    "BCELoss",
    "SmoothL1Loss",
    "HuberLoss",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "binary_cross_entropy_with_logits",
    "binary_cross_entropy",
    "smooth_l1_loss",
    "huber_loss",
    "batch_norm",
]
