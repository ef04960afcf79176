"""Activation functions, each written once: its forward, its gradient and its documentation.

The ops (``tt.gelu``, ``Tensor.gelu``, ``nn.functional.gelu``), the backends' fused linear paths
(``Linear(activation="gelu")``) and nn's modules all read this table. Adding an activation is an
entry here, a module in ``nn/activations.py`` and the regenerated ``_activations.pyi``
(``python -m ci.dev.surface_stubs``); the CUDA extension may also fuse it with the bias add
(``csrc/cuda_gpu.cu``), otherwise the GPU runs the forms below through CuPy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from .array_types import Array

if TYPE_CHECKING:  # the backends call these with themselves; backend is a layer above
    from .backend import Backend

_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_K = 0.044715


class Activation(NamedTuple):
    """``forward(backend, x, fresh)`` is the activation of array ``x``; with ``fresh`` (an array
    nobody else holds) it may overwrite ``x``, and then ``grad`` must not read ``x``.
    ``grad(backend, g, x, out)`` is the gradient of the input, given the output's gradient ``g``."""

    forward: Callable[[Backend, Array, bool], Array]
    grad: Callable[[Backend, Array, Array, Array], Array]
    doc: str


def _relu(backend: Backend, x: Array, fresh: bool) -> Array:
    return backend.relu_fresh(x) if fresh else backend.xp.maximum(x, 0)


def _gelu(backend: Backend, x: Array, fresh: bool) -> Array:
    xp = backend.xp
    return 0.5 * x * (1 + xp.tanh(_GELU_C * (x + _GELU_K * x * x * x)))


def _gelu_grad(backend: Backend, g: Array, x: Array, out: Array) -> Array:
    x2 = x * x
    t = backend.xp.tanh(_GELU_C * (x + _GELU_K * x2 * x))
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _GELU_C * (1 + 3 * _GELU_K * x2))


def _sigmoid(backend: Backend, x: Array, fresh: bool) -> Array:
    # 0.5 * (1 + tanh(x / 2)) never overflows, unlike 1 / (1 + exp(-x)).
    return 0.5 * (backend.xp.tanh(0.5 * x) + 1)


ACTIVATIONS: dict[str, Activation] = {
    "relu": Activation(
        _relu,
        lambda backend, g, x, out: backend.masked(g, out > 0),
        "max(x, 0), elementwise. After a Linear in a Sequential it runs fused with the Linear.",
    ),
    "gelu": Activation(
        _gelu,
        _gelu_grad,
        "GELU with the tanh approximation (PyTorch's ``approximate='tanh'``; the CUDA kernel matches it).",
    ),
    "sigmoid": Activation(
        _sigmoid,
        lambda backend, g, x, out: g * out * (1 - out),
        "1 / (1 + exp(-x)), elementwise, computed without overflow.",
    ),
    "tanh": Activation(
        lambda backend, x, fresh: backend.xp.tanh(x),
        lambda backend, g, x, out: g * (1 - out * out),
        "The hyperbolic tangent, elementwise.",
    ),
}


def check_activation(name: object, fn: str) -> None:
    """None or a name in ACTIVATIONS, else a ValueError naming ``fn`` and the choices."""
    if name is not None and name not in ACTIVATIONS:
        raise ValueError(f"{fn}: unknown activation {name!r}: expected None or one of {tuple(ACTIVATIONS)}")
