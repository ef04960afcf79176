"""Functional forms of layers, activations and losses (PyTorch's ``nn.functional``)."""

from ..ops.elementwise import gelu, relu, sigmoid, tanh
from ..ops.losses import binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss
from ..ops.nn_ops import dropout, embedding, layer_norm, linear, log_softmax, softmax

__all__ = [
    "relu",
    "gelu",
    "tanh",
    "sigmoid",
    "softmax",
    "log_softmax",
    "dropout",
    "embedding",
    "layer_norm",
    "linear",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "binary_cross_entropy_with_logits",
]
