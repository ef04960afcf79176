"""Layers and losses: ``Module``, ``Linear``, ``Sequential``, ... and ``nn.functional``.

1.x's module paths are kept: ``nn.modules`` (Module, Sequential), ``nn.linear``, ``nn.losses``,
``nn.activations``; 1.x's ``LeReLU`` and ``Sigmod`` resolve with a DeprecationWarning.
"""

from ..parameter import Parameter
from . import activations, functional, linear, losses, modules, utils
from .activations import GELU, Identity, LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .base import Module, ModuleList
from .functional import binary_cross_entropy_with_logits, cross_entropy, l1_loss, mse_loss, nll_loss
from .layers import Dropout, Embedding, Flatten, LayerNorm, Linear, Sequential
from .legacy_state import convert_state as convert_1x_state
from .losses import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss


def __getattr__(name):
    # nn.LeReLU / nn.Sigmod (1.x): warn at the user's line (stacklevel 2), then resolve.
    if name in activations.DEPRECATED:
        return activations.deprecated_alias(name, __name__, stacklevel=2)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "functional",
    "utils",
    "activations",
    "linear",
    "losses",
    "modules",
    "Module",
    "ModuleList",
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
    "MSELoss",
    "L1Loss",
    "CrossEntropyLoss",
    "NLLLoss",
    "BCEWithLogitsLoss",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "binary_cross_entropy_with_logits",
]
