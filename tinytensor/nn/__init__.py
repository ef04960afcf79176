"""Layers and losses: ``Module``, ``Linear``, ``Sequential``, ... and ``nn.functional``."""

from . import functional
from .functional import binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss
from .layers import GELU, Dropout, Embedding, LayerNorm, Linear, ReLU, Sequential, Sigmoid, Tanh
from .module import Module, ModuleList, Parameter

__all__ = [
    "functional",
    "Module",
    "ModuleList",
    "Parameter",
    "Linear",
    "Sequential",
    "ReLU",
    "GELU",
    "Tanh",
    "Sigmoid",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "binary_cross_entropy_with_logits",
]
