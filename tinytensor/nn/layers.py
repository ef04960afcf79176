"""Layers: Linear, activations, Dropout, Embedding, LayerNorm, Sequential."""

from __future__ import annotations

import math

from .. import creation
from ..ops import elementwise, nn_ops
from .module import Module, ModuleList, Parameter


class Linear(Module):
    """``y = activation(x @ weight.T + bias)``, weight of shape (out_features, in_features).

    ``activation`` ("relu", "gelu" or None) runs fused with the bias add: on a GPU with the
    extension, one kernel forward and one backward. ``Sequential(Linear, ReLU)`` fuses the same way.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, activation=None):
        super().__init__()
        if activation not in nn_ops.ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}: expected one of {nn_ops.ACTIVATIONS}")
        self.in_features, self.out_features, self.activation = in_features, out_features, activation
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        self.weight = Parameter(creation.uniform((out_features, in_features), -bound, bound))
        self.bias = Parameter(creation.uniform((out_features,), -bound, bound)) if bias else None

    def forward(self, x, activation=None):
        return nn_ops.linear(x, self.weight, self.bias, activation or self.activation)

    def extra_repr(self) -> str:
        act = f", activation={self.activation!r}" if self.activation else ""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}{act}"


class ReLU(Module):
    def forward(self, x):
        return elementwise.relu(x)


class GELU(Module):
    """GELU, tanh approximation."""

    def forward(self, x):
        return elementwise.gelu(x)


class Tanh(Module):
    def forward(self, x):
        return elementwise.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return elementwise.sigmoid(x)


class Dropout(Module):
    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x):
        return nn_ops.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Embedding(Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = Parameter(creation.randn(num_embeddings, embedding_dim))

    def forward(self, indices):
        return nn_ops.embedding(indices, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape, self.eps = tuple(normalized_shape), eps
        self.weight = Parameter(creation.ones(self.normalized_shape)) if elementwise_affine else None
        self.bias = Parameter(creation.zeros(self.normalized_shape)) if elementwise_affine else None

    def forward(self, x):
        return nn_ops.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


_FUSABLE = {ReLU: "relu", GELU: "gelu"}


class Sequential(ModuleList):
    """Modules applied in order. A plain Linear followed by ReLU or GELU runs as one fused op."""

    def __init__(self, *modules):
        super().__init__(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(*list(self._modules.values())[index])
        return super().__getitem__(index)

    def forward(self, x):
        layers = list(self._modules.values())
        i = 0
        while i < len(layers):
            layer = layers[i]
            following = layers[i + 1] if i + 1 < len(layers) else None
            if type(layer) is Linear and layer.activation is None and type(following) in _FUSABLE:
                x = layer(x, activation=_FUSABLE[type(following)])
                i += 2
                continue
            x = layer(x)
            i += 1
        return x


__all__ = [
    "Linear",
    "ReLU",
    "GELU",
    "Tanh",
    "Sigmoid",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "Sequential",
    "ModuleList",
]
