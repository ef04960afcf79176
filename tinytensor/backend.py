"""The array-backend contract: what tinytensor needs from an array library beyond the array API.

A tensor's ``.data`` decides everything: there is no global "current device". Every op asks
``devices.backend_of(data)`` for the backend of that array's library and uses its ``xp``
namespace, which for numpy, CuPy and array_api_strict is written against the same array-API
functions. The methods below are what the array API leaves out (creating an array on another
array's device, scatter-add, random numbers, host transfers) and the hot ops whose fastest form
depends on the library; their bodies here are the portable reference that the backends refine
(``numpy_backend``, ``strict_backend``, ``cuda.backend``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeAlias

import numpy as np

from .activation_math import ACTIVATIONS
from .array_types import Array, DType, Namespace, Shape

# What a device index is once parsed (``device_names.parse_device``): a CUDA device number, a
# ``strict:`` test device's name, or None for the default device.
DeviceIndex: TypeAlias = int | str | None
# An axis argument of a reduction: one axis, several, or all (None).
Axis: TypeAlias = int | tuple[int, ...] | None
# What ``softmax_xent`` saves for ``softmax_xent_grad``: arrays, in a layout each backend chooses
# (the CUDA backend tags its fused kernel's with a string), so only the backend reads it.
SavedXent: TypeAlias = tuple[Any, ...]


class Backend:
    """Operations that are not in the array API, for one array library."""

    name = ""
    kind = ""  # device kind: "cpu", "cuda", "strict"
    xp: Namespace = None  # the array namespace (numpy, cupy, array_api_strict): set by each subclass

    def device(self, data: Array) -> str:
        """The device string (``"cpu"``, ``"cuda:0"``, ``"strict:NAME"``) of an array of this library."""
        raise NotImplementedError

    def zeros(self, shape: Shape, dtype: DType, like: Array) -> Array:
        """A new array of zeros on ``like``'s device."""
        raise NotImplementedError

    def full(self, shape: Shape, value: float, dtype: DType, like: Array) -> Array:
        """A new array filled with ``value`` on ``like``'s device."""
        raise NotImplementedError

    def full_on(self, shape: Shape, value: float, dtype: DType, index: DeviceIndex) -> Array:
        """A new filled array on this backend's device ``index`` (None: the default one)."""
        raise NotImplementedError

    def arange(self, n: int, like: Array) -> Array:
        """0, 1, ..., n - 1 (the library's default integer dtype) on ``like``'s device."""
        raise NotImplementedError

    def asarray(self, value: object, dtype: DType, like: Array) -> Array:
        """A Python scalar or list as an array on ``like``'s device."""
        raise NotImplementedError

    def scatter_add(self, target: Array, key: Any, values: Array) -> Array:  # key: any index the library takes
        """``target[key] += values`` that is right for repeated indices; returns target."""
        raise NotImplementedError

    def uniform(self, shape: Shape, dtype: DType, like: Array, seed: int) -> Array:
        """Uniform [0, 1) samples on ``like``'s device, determined by ``seed``."""
        raise NotImplementedError

    def to_numpy(self, data: Array) -> np.ndarray:
        """A numpy array of ``data``'s values: ``data`` itself on the CPU, else a copy on the host."""
        raise NotImplementedError

    def from_numpy(self, array: np.ndarray, index: DeviceIndex) -> Array:
        """Copy a host array to this backend's device ``index`` (None: the default one)."""
        raise NotImplementedError

    def copy(self, data: Array) -> Array:
        """A new array with ``data``'s values, on its device."""
        return data.copy()

    def device_scope(self, like: Array) -> AbstractContextManager[object]:
        """A context in which new arrays and launched work go to ``like``'s device (CuPy's current
        device); nothing for a library with one device."""
        return contextlib.nullcontext()

    def kernel(self, spec: tuple[str, ...]) -> Callable[..., Any] | None:
        """The compiled kernel for ``spec``, the library's kernel class and its arguments (e.g.
        ``("ElementwiseKernel", in_params, out_params, body, name)`` for CuPy), or None where this
        library compiles none: the caller then runs its array-API form."""
        return None

    def sum(self, x: Array, axis: Axis = None) -> Array:
        """The sum of a floating array over ``axis`` (all by default), for the ops' hot paths."""
        return self.xp.sum(x, axis=axis)

    def relu_fresh(self, x: Array) -> Array:
        """max(x, 0) of an array nobody else holds: numpy overwrites it, saving an allocation."""
        return self.xp.maximum(x, 0)

    # The three hot ops whose fastest path depends on the array library (and, for CuPy, on the
    # compiled extension) live here, so each has one call site and the choice is made in one place.
    def matmul(self, x: Array, y: Array) -> Array:
        """``x @ y`` with numpy's rules for any rank."""
        return x @ y

    def linear(self, x2: Array, w: Array, b: Array | None, activation: str | None) -> tuple[Array, Array, str | None]:
        """``activation(x2 @ w.T + b)`` for a 2-D ``x2``: (pre-activation, output, how), where
        ``how`` tells ``linear_grad`` which path made them."""
        pre = self.matmul(x2, w.T)
        if b is not None:
            pre += b  # a fresh matmul result: adding in place saves an allocation
        # the activation may overwrite pre when its gradient reads only its output (relu)
        out = pre if activation is None else ACTIVATIONS[activation].forward(self, pre, True)
        return pre, out, None

    def linear_grad(
        self,
        g2: Array,
        pre: Array,
        out: Array,
        how: str | None,
        activation: str | None,
        has_bias: bool,
        need_b: bool,
    ) -> tuple[Array, Array | None]:
        """(gradient of the pre-activation, gradient of the bias or None) from ``linear``'s results."""
        gpre = g2 if activation is None else ACTIVATIONS[activation].grad(self, g2, pre, out)
        return gpre, (self.sum(gpre, axis=0) if need_b else None)

    def labels_outside(self, labels: Array, n: int) -> bool:
        """Whether any integer label is < 0 or >= n (one device-to-host read)."""
        xp = self.xp
        return bool(labels.size) and bool(xp.any(xp.logical_or(labels < 0, labels >= n)))

    def softmax_xent(self, x: Array, labels: Array) -> tuple[Array, SavedXent]:
        """Softmax cross-entropy of (N, C) logits ``x``: (per-row losses, what its gradient needs).

        The row max is subtracted before exponentiating; exp(shifted) / its sum is the softmax the
        gradient needs, so backward divides instead of exponentiating again. A row that is all
        -inf or holds +inf gives NaN, as in PyTorch.
        """
        xp = self.xp
        shifted = x - xp.max(x, axis=1, keepdims=True)
        exps = xp.exp(shifted)
        sums = xp.sum(exps, axis=1, keepdims=True)
        rows = xp.reshape(xp.log(sums), (-1,)) - self.pick_columns(shifted, labels)
        return rows, (exps, sums)

    def softmax_xent_grad(self, saved: SavedXent, labels: Array, scale: Array) -> Array:
        """d loss / d logits from ``softmax_xent``'s saved values; ``scale`` is d loss / d row
        (a 0-d array or one per row, shaped (N, 1))."""
        exps, sums = saved
        softmax = exps / sums
        return (softmax - self.onehot(labels, softmax.shape[1], softmax.dtype, softmax)) * scale

    def pick_columns(self, x: Array, labels: Array) -> Array:
        """``x[i, labels[i]]`` for each row i of a 2-D ``x``: a gather the array API spells
        take_along_axis."""
        xp = self.xp
        return xp.reshape(xp.take_along_axis(x, xp.reshape(labels, (-1, 1)), axis=1), (-1,))

    def onehot(self, labels: Array, n_classes: int, dtype: DType, like: Array) -> Array:
        """(N, n_classes) rows of ``dtype`` with a 1 at each label."""
        xp = self.xp
        classes = xp.reshape(self.arange(n_classes, like), (1, -1))
        return xp.astype(xp.reshape(labels, (-1, 1)) == classes, dtype)

    def masked(self, values: Array, keep: Array) -> Array:
        """``values`` where the boolean ``keep`` holds, else 0 (the gradient of relu, clip, max...)."""
        # A multiply by the mask is ~8x faster than numpy's where() with a scalar.
        return values * keep

    def astype(self, data: Array, dtype: DType) -> Array:
        """``data`` as numpy dtype ``dtype``; the same array when it already is."""
        return data if data.dtype == dtype else data.astype(dtype)

    def is_float(self, data: Array) -> bool:
        """Whether ``data`` has a real floating-point dtype."""
        return bool(self.xp.isdtype(data.dtype, "real floating"))
