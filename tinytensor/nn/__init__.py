"""Layers and losses: ``Module``, ``Linear``, ``Sequential``, ``Conv2d``, ... and ``nn.functional``.

1.x's module paths are kept: ``nn.modules`` (Module, Sequential), ``nn.linear``, ``nn.losses``,
``nn.activations``, ``nn.conv``, ``nn.pooling``, ``nn.batchnorm``, ``nn.residual``, ``nn.flatten``;
1.x's ``LeReLU`` and ``Sigmod`` resolve with a DeprecationWarning.
"""

from __future__ import annotations

from ..parameter import Parameter
from . import activations, batchnorm, conv, flatten, functional, init, linear, losses, modules, pooling, residual, utils
from .activations import GELU, Identity, LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .base import Module, ModuleList
from .blocks import ResidualBlock
from .containers import ModuleDict, ParameterDict, ParameterList
from .conv import Conv1d, Conv2d, ConvTranspose2d, LazyConv2d
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
from .layers import Dropout, Dropout2d, Embedding, Flatten, LayerNorm, Linear, Sequential, Unflatten
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
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm
from .pooling import (
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    AvgPool2d,
    GlobalAvgPool2d,
    MaxPool1d,
    MaxPool2d,
    Upsample,
    ZeroPad2d,
)


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
    "conv",
    "pooling",
    "batchnorm",
    "residual",
    "flatten",
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
    "Unflatten",
    "Identity",
    "ReLU",
    "LeakyReLU",
    "GELU",
    "Tanh",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "Dropout",
    "Dropout2d",
    "Embedding",
    "LayerNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "GroupNorm",
    "Conv1d",
    "Conv2d",
    "ConvTranspose2d",
    "LazyConv2d",
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool2d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d",
    "GlobalAvgPool2d",
    "Upsample",
    "ZeroPad2d",
    "ResidualBlock",
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
