"""Functional forms of layers, activations and losses (PyTorch's ``nn.functional``).

Their first argument may also be an array (wrapped without a copy) or Python data.
"""

from ..ops import elementwise, losses, nn_ops
from ..ops.nn_ops import embedding, linear
from ..tensor import accepts_arrays

gelu, leaky_relu, relu, sigmoid, tanh = (
    accepts_arrays(f)
    for f in (elementwise.gelu, elementwise.leaky_relu, elementwise.relu, elementwise.sigmoid, elementwise.tanh)
)
dropout, layer_norm, log_softmax, softmax = (
    accepts_arrays(f) for f in (nn_ops.dropout, nn_ops.layer_norm, nn_ops.log_softmax, nn_ops.softmax)
)
binary_cross_entropy_with_logits, cross_entropy, l1_loss, mse_loss, nll_loss = (
    accepts_arrays(f)
    for f in (
        losses.binary_cross_entropy_with_logits,
        losses.cross_entropy,
        losses.l1_loss,
        losses.mse_loss,
        losses.nll_loss,
    )
)

__all__ = [
    "relu",
    "leaky_relu",
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
    "l1_loss",
    "binary_cross_entropy_with_logits",
]
