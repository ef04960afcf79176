"""Layers: Linear, Flatten, Dropout, Embedding, LayerNorm, Sequential (activations: ``activations.py``)."""

from __future__ import annotations

import math

import numpy as np

from .. import creation
from ..activation_math import check_activation
from ..argcheck import int_at_least
from ..ops import nn_ops, shape
from ..parameter import Parameter
from .activations import Activation
from .base import Module, ModuleList


class Linear(Module):
    """``y = activation(x @ weight.T + bias)``, weight of shape (out_features, in_features).

    ``activation`` (None, or a name in ``activation_math.ACTIVATIONS``: "relu", "gelu", ...) runs
    fused with the bias add: on a GPU with the extension, one kernel forward and one backward for the
    activations its kernels implement. ``Sequential(Linear, ReLU)`` fuses the same way.
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, activation=None, *, device=None, dtype=None
    ):
        super().__init__()
        in_features, out_features = (
            size_arg("Linear", "in_features", in_features),
            size_arg("Linear", "out_features", out_features),
        )
        check_activation(activation, "Linear()")
        self.in_features, self.out_features, self.activation = in_features, out_features, activation
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        init = dict(dtype=dtype, device=device)
        self.weight = Parameter(creation.uniform((out_features, in_features), -bound, bound, **init))
        self.bias = Parameter(creation.uniform((out_features,), -bound, bound, **init)) if bias else None

    def forward(self, x, activation=None):
        return nn_ops.linear(x, self.weight, self.bias, activation or self.activation)

    def _from_1x(self, name, array):
        # 1.x computed x @ W + b with W (in, out) and b (1, out)
        if name == "weight" and array.ndim == 2:
            return name, np.ascontiguousarray(array.T)
        if name == "bias" and array.ndim == 2 and array.shape[0] == 1:
            return name, array.reshape(-1)
        return name, array

    def extra_repr(self) -> str:
        act = f", activation={self.activation!r}" if self.activation else ""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}{act}"


class Flatten(Module):
    """Merge axes ``start_dim`` to ``end_dim`` (inclusive) into one; by default all but the batch axis."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        for name, value in (("start_dim", start_dim), ("end_dim", end_dim)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"Flatten: {name} must be an int, got {type(value).__name__}")
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return shape.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


def size_arg(fn: str, name: str, value) -> int:
    """A layer size: a non-negative int (PyTorch allows 0), else an error naming the argument."""
    return int_at_least(f"{fn}()", name, value, 0)


class Dropout(Module):
    def __init__(self, p: float = 0.5):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout(): p must be a probability in [0, 1], got {p!r}")
        self.p = p

    def forward(self, x):
        return nn_ops.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Embedding(Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        num_embeddings = size_arg("Embedding", "num_embeddings", num_embeddings)
        embedding_dim = size_arg("Embedding", "embedding_dim", embedding_dim)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = Parameter(creation.randn(num_embeddings, embedding_dim))

    def forward(self, indices):
        return nn_ops.embedding(indices, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True):
        super().__init__()
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (normalized_shape,)
        normalized_shape = tuple(size_arg("LayerNorm", "normalized_shape", n) for n in normalized_shape)
        if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps > 0:
            raise ValueError(f"LayerNorm(): eps must be a positive number, got {eps!r}")
        self.normalized_shape, self.eps = normalized_shape, eps
        self.weight = Parameter(creation.ones(self.normalized_shape)) if elementwise_affine else None
        self.bias = Parameter(creation.zeros(self.normalized_shape)) if elementwise_affine else None

    def forward(self, x):
        return nn_ops.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def _from_1x(self, name, array):
        return {"gamma": "weight", "beta": "bias"}.get(name, name), array  # 1.x's names

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


class Sequential(ModuleList):
    """Modules applied in order. A plain Linear followed by an activation (ReLU, GELU, ...) runs as one fused op."""

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
            if (
                type(layer) is Linear
                and layer.activation is None
                and isinstance(following, Activation)
                and type(following).forward is Activation.forward  # a subclass with its own forward is not fused
            ):
                # the Linear's own forward, called directly: this runs per layer per step
                x = nn_ops.linear(x, layer.weight, layer.bias, following.activation)
                i += 2
                continue
            x = layer(x)
            i += 1
        return x


__all__ = [
    "Linear",
    "Flatten",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "Sequential",
    "ModuleList",
]
