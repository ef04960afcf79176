"""Layers: Linear, Flatten, Unflatten, Dropout, Dropout2d, Embedding, LayerNorm, Sequential (activations:
``activations.py``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import overload

import numpy as np

from .. import creation
from ..activation_math import check_activation
from ..argcheck import int_at_least, is_real
from ..array_types import Array, DType
from ..errors import ShapeError
from ..ops import nn_ops, resample, shape
from ..parameter import Parameter
from ..tensor import Tensor
from .activations import Activation
from .base import Module, ModuleList


class Linear(Module):
    """``y = activation(x @ weight.T + bias)``, weight of shape (out_features, in_features).

    The input's last axis has ``in_features`` elements (any leading axes), the output's
    ``out_features``. ``weight`` and ``bias`` start from U(-k, k) with ``k = 1 / sqrt(in_features)``,
    as PyTorch's defaults (from tinytensor's random stream: other numbers than PyTorch's).

    Parameters
    ----------
    in_features, out_features : int
        Sizes of the input's and the output's last axis (0 is allowed, as in PyTorch).
    bias : bool
        False: no ``bias`` parameter (``self.bias`` is None).
    activation : str or None
        Not in PyTorch: an activation applied to the output, fused with the bias add. None, or
        a name in ``activation_math.ACTIVATIONS`` (``"relu"``, ``"gelu"``, ``"sigmoid"``,
        ``"tanh"``); on a GPU with the extension, one kernel forward and one backward for the
        activations its kernels implement. ``Sequential(Linear(...), ReLU())`` fuses the same way.
    device, dtype
        Where and in which floating dtype the parameters are made (default: the CPU, float32).

    Examples
    --------
    >>> import tinytensor as tt
    >>> layer = tt.nn.Linear(4, 2)
    >>> layer(tt.ones(3, 4)).shape
    (3, 2)
    >>> layer.weight.shape, layer.bias.shape
    ((2, 4), (2,))
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        activation: str | None = None,
        *,
        device: str | None = None,
        dtype: DType | str | None = None,
    ) -> None:
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

    def forward(self, x: Tensor, activation: str | None = None) -> Tensor:
        """``x @ weight.T + bias``, through ``activation`` (this call's, else the layer's)."""
        return nn_ops.linear(x, self.weight, self.bias, activation or self.activation)

    def _from_1x(self, name: str, array: Array) -> tuple[str, Array]:
        # 1.x computed x @ W + b with W (in, out) and b (1, out)
        if name == "weight" and array.ndim == 2:
            return name, np.ascontiguousarray(array.T)
        if name == "bias" and array.ndim == 2 and array.shape[0] == 1:
            return name, array.reshape(-1)
        return name, array

    def extra_repr(self) -> str:
        """``in_features=..., out_features=..., bias=...`` and the activation, if any."""
        act = f", activation={self.activation!r}" if self.activation else ""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}{act}"


class Flatten(Module):
    """Merge axes ``start_dim`` to ``end_dim`` (inclusive) into one; by default all but the batch
    axis, so (N, C, L) becomes (N, C * L)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        for name, value in (("start_dim", start_dim), ("end_dim", end_dim)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"Flatten: {name} must be an int, got {type(value).__name__}")
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        """``x`` with the axes ``start_dim..end_dim`` merged (a view when possible)."""
        return shape.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        """``start_dim=..., end_dim=...``."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


def size_arg(fn: str, name: str, value: object) -> int:
    """A layer size: a non-negative int (PyTorch allows 0), else an error naming the argument."""
    return int_at_least(f"{fn}()", name, value, 0)


class Dropout(Module):
    """In training mode, zero each element with probability ``p`` and scale the others by
    ``1 / (1 - p)`` (so the expected value is unchanged); in eval mode (``model.eval()``), pass
    the input through. A new random mask each call, from tinytensor's random stream.

    Parameters
    ----------
    p : float
        The probability of zeroing an element, in [0, 1] (default 0.5). PyTorch's ``inplace``
        argument does not exist here.
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not is_real(p) or not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout(): p must be a probability in [0, 1], got {p!r}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        """``x`` with dropout applied in training mode, ``x`` itself in eval mode."""
        return nn_ops.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        """``p=...``."""
        return f"p={self.p}"


class Dropout2d(Module):
    """In training mode, zero each whole channel (an (H, W) plane of (N, C, H, W) input) with
    probability ``p`` and scale the others by ``1 / (1 - p)``; in eval mode, pass the input
    through, as PyTorch's (``nn.functional.dropout2d``: a 3-D input is read as (N, C, L), with
    PyTorch's warning). A new random mask each call, from tinytensor's random stream.

    Parameters
    ----------
    p : float
        The probability of zeroing a channel, in [0, 1] (default 0.5).
    inplace : bool
        True: write the result into the input (refused while the input requires grad and
        gradients are recorded, as tinytensor's in-place ops).

    Examples
    --------
    >>> import tinytensor as tt
    >>> drop = tt.nn.Dropout2d(0.5).eval()
    >>> drop(tt.ones(2, 3, 4, 4)).sum().item()
    96.0
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not is_real(p) or not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout2d(): dropout probability has to be between 0 and 1, but got {p!r}")
        self.p, self.inplace = p, inplace

    def forward(self, x: Tensor) -> Tensor:
        """``x`` with whole channels dropped in training mode, ``x`` itself in eval mode."""
        return resample.dropout2d(x, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        """``p=..., inplace=...``, as PyTorch's."""
        return f"p={self.p}, inplace={self.inplace}"


class Unflatten(Module):
    """Split axis ``dim`` into the axes ``unflattened_size`` (the inverse of ``Flatten``), as
    PyTorch's: (N, 12) with ``Unflatten(1, (3, 4))`` becomes (N, 3, 4).

    Parameters
    ----------
    dim : int
        The axis to split (negative counts from the end).
    unflattened_size : tuple or list of ints
        The new axes' sizes, whose product is the size of axis ``dim``; one may be -1 (inferred).

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.nn.Unflatten(1, (2, 3))(tt.zeros(4, 6, 5)).shape
    (4, 2, 3, 5)
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise TypeError(f"Unflatten(): dim must be an int, got {type(dim).__name__}")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(
                f"Unflatten(): unflattened_size must be a tuple of ints, but found type {type(unflattened_size).__name__}"
            )
        for pos, size in enumerate(unflattened_size):
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
                raise TypeError(
                    f"Unflatten(): unflattened_size must be tuple of ints, but found element of type "
                    f"{type(size).__name__} at pos {pos}"
                )
        self.dim, self.unflattened_size = int(dim), unflattened_size

    def forward(self, x: Tensor) -> Tensor:
        """``x`` with axis ``dim`` split into ``unflattened_size`` (a view when possible)."""
        dims = x.shape
        if not -len(dims) <= self.dim < len(dims):
            raise IndexError(f"Unflatten: dim {self.dim} is out of range for a tensor of {len(dims)} dimensions")
        axis = self.dim % len(dims)
        sizes = [int(n) for n in self.unflattened_size]
        known = math.prod(n for n in sizes if n != -1)
        if sizes.count(-1) > 1 or (-1 not in sizes and known != dims[axis]) or (known and dims[axis] % known):
            raise ShapeError(
                f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {self.dim} ({dims[axis]}) "
                "in the input tensor"
            )
        return shape.reshape(x, (*dims[:axis], *sizes, *dims[axis + 1 :]))

    def extra_repr(self) -> str:
        """``dim=..., unflattened_size=...``."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Embedding(Module):
    """A lookup table: row ``i`` of ``weight`` (num_embeddings, embedding_dim) for each index ``i``.

    ``weight`` starts from N(0, 1), as in PyTorch. An index outside ``0..num_embeddings-1`` is an
    IndexError (-1 included: it does not count from the end). PyTorch's ``padding_idx``,
    ``max_norm`` and ``sparse`` options do not exist here.

    Parameters
    ----------
    num_embeddings : int
        The number of rows (the vocabulary size).
    embedding_dim : int
        The size of each row.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int) -> None:
        super().__init__()
        num_embeddings = size_arg("Embedding", "num_embeddings", num_embeddings)
        embedding_dim = size_arg("Embedding", "embedding_dim", embedding_dim)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = Parameter(creation.randn(num_embeddings, embedding_dim))

    def forward(self, indices: Tensor) -> Tensor:
        """The rows of ``weight`` at integer ``indices`` (any shape): shape ``indices.shape +
        (embedding_dim,)``."""
        return nn_ops.embedding(indices, self.weight)

    def extra_repr(self) -> str:
        """``num_embeddings, embedding_dim``."""
        return f"{self.num_embeddings}, {self.embedding_dim}"


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` axes of each sample (mean 0, variance 1,
    with ``eps`` added to the variance), then scale by ``weight`` and shift by ``bias``.

    Parameters
    ----------
    normalized_shape : int or sequence of int
        The shape of the trailing axes to normalize over (an int: the last axis).
    eps : float
        Added to the variance, > 0 (default 1e-5).
    elementwise_affine : bool
        True: learned ``weight`` (ones) and ``bias`` (zeros) of shape ``normalized_shape``;
        False: neither. PyTorch's separate ``bias`` flag, ``device`` and ``dtype`` do not exist
        here.
    """

    def __init__(
        self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True
    ) -> None:
        super().__init__()
        sizes = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else normalized_shape
        dims = tuple(size_arg("LayerNorm", "normalized_shape", n) for n in sizes)
        if not is_real(eps) or not eps > 0:
            raise ValueError(f"LayerNorm(): eps must be a positive number, got {eps!r}")
        self.normalized_shape, self.eps = dims, eps
        self.weight = Parameter(creation.ones(self.normalized_shape)) if elementwise_affine else None
        self.bias = Parameter(creation.zeros(self.normalized_shape)) if elementwise_affine else None

    def forward(self, x: Tensor) -> Tensor:
        """``x`` normalized over its trailing axes, scaled and shifted."""
        return nn_ops.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def _from_1x(self, name: str, array: Array) -> tuple[str, Array]:
        return {"gamma": "weight", "beta": "bias"}.get(name, name), array  # 1.x's names

    def extra_repr(self) -> str:
        """``normalized_shape, eps=...``."""
        return f"{self.normalized_shape}, eps={self.eps}"


class Sequential(ModuleList):
    """Modules applied in order, each to the previous one's output; registered as children
    ``"0"``, ``"1"``, ... A plain Linear followed by an activation module (ReLU, GELU, Sigmoid,
    Tanh) runs as one fused op (Linear's ``activation``), with the same result.

    PyTorch also takes an OrderedDict of named modules; here the modules are positional only.

    Examples
    --------
    >>> import tinytensor as tt
    >>> model = tt.nn.Sequential(tt.nn.Linear(4, 8), tt.nn.ReLU(), tt.nn.Linear(8, 1))
    >>> model(tt.ones(2, 4)).shape
    (2, 1)
    >>> model[0]
    Linear(in_features=4, out_features=8, bias=True)
    """

    def __init__(self, *modules: Module) -> None:
        super().__init__(modules)

    @overload
    def __getitem__(self, index: int) -> Module: ...
    @overload
    def __getitem__(self, index: slice) -> Sequential: ...
    def __getitem__(self, index: int | slice) -> Module | Sequential:
        if isinstance(index, slice):
            return Sequential(*list(self._modules.values())[index])
        return super().__getitem__(index)

    def forward(self, x: Tensor) -> Tensor:
        """``x`` through every module in turn."""
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
    "Unflatten",
    "Dropout",
    "Dropout2d",
    "Embedding",
    "LayerNorm",
    "Sequential",
    "ModuleList",
]
