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
from typing import Any

import numpy as np

from .activation_math import ACTIVATIONS


class Backend:
    """Operations that are not in the array API, for one array library."""

    name = ""
    kind = ""  # device kind: "cpu", "cuda", "strict"
    xp: Any = None  # the array namespace (numpy, cupy, array_api_strict): set by each subclass

    def device(self, data) -> str:
        raise NotImplementedError

    def zeros(self, shape, dtype, like):
        raise NotImplementedError

    def full(self, shape, value, dtype, like):
        raise NotImplementedError

    def full_on(self, shape, value, dtype, index):
        """A new filled array on this backend's device ``index`` (None: the default one)."""
        raise NotImplementedError

    def arange(self, n, like):
        raise NotImplementedError

    def asarray(self, value, dtype, like):
        """A Python scalar or list as an array on ``like``'s device."""
        raise NotImplementedError

    def scatter_add(self, target, key, values):
        """``target[key] += values`` that is right for repeated indices; returns target."""
        raise NotImplementedError

    def uniform(self, shape, dtype, like, seed):
        """Uniform [0, 1) samples on ``like``'s device, determined by ``seed``."""
        raise NotImplementedError

    def to_numpy(self, data) -> np.ndarray:
        raise NotImplementedError

    def from_numpy(self, array: np.ndarray, index):
        """Copy a host array to this backend's device ``index`` (None: the default one)."""
        raise NotImplementedError

    def copy(self, data):
        return data.copy()

    def device_scope(self, like):
        """A context in which new arrays and launched work go to ``like``'s device (CuPy's current
        device); nothing for a library with one device."""
        return contextlib.nullcontext()

    def kernel(self, spec: tuple):
        """The compiled kernel for ``spec``, the library's kernel class and its arguments (e.g.
        ``("ElementwiseKernel", in_params, out_params, body, name)`` for CuPy), or None where this
        library compiles none: the caller then runs its array-API form."""
        return None

    def sum(self, x, axis=None):
        """The sum of a floating array over ``axis`` (all by default), for the ops' hot paths."""
        return self.xp.sum(x, axis=axis)

    def relu_fresh(self, x):
        """max(x, 0) of an array nobody else holds: numpy overwrites it, saving an allocation."""
        return self.xp.maximum(x, 0)

    # The three hot ops whose fastest path depends on the array library (and, for CuPy, on the
    # compiled extension) live here, so each has one call site and the choice is made in one place.
    def matmul(self, x, y):
        """``x @ y`` with numpy's rules for any rank."""
        return x @ y

    def linear(self, x2, w, b, activation):
        """``activation(x2 @ w.T + b)`` for a 2-D ``x2``: (pre-activation, output, how), where
        ``how`` tells ``linear_grad`` which path made them."""
        pre = self.matmul(x2, w.T)
        if b is not None:
            pre += b  # a fresh matmul result: adding in place saves an allocation
        # the activation may overwrite pre when its gradient reads only its output (relu)
        out = pre if activation is None else ACTIVATIONS[activation].forward(self, pre, True)
        return pre, out, None

    def linear_grad(self, g2, pre, out, how, activation, has_bias, need_b):
        """(gradient of the pre-activation, gradient of the bias or None) from ``linear``'s results."""
        gpre = g2 if activation is None else ACTIVATIONS[activation].grad(self, g2, pre, out)
        return gpre, (self.sum(gpre, axis=0) if need_b else None)

    def labels_outside(self, labels, n: int) -> bool:
        """Whether any integer label is < 0 or >= n (one device-to-host read)."""
        xp = self.xp
        return bool(labels.size) and bool(xp.any(xp.logical_or(labels < 0, labels >= n)))

    def softmax_xent(self, x, labels):
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

    def softmax_xent_grad(self, saved, labels, scale):
        """d loss / d logits from ``softmax_xent``'s saved values; ``scale`` is d loss / d row
        (a 0-d array or one per row, shaped (N, 1))."""
        exps, sums = saved
        softmax = exps / sums
        return (softmax - self.onehot(labels, softmax.shape[1], softmax.dtype, softmax)) * scale

    def pick_columns(self, x, labels):
        """``x[i, labels[i]]`` for each row i of a 2-D ``x``: a gather the array API spells
        take_along_axis."""
        xp = self.xp
        return xp.reshape(xp.take_along_axis(x, xp.reshape(labels, (-1, 1)), axis=1), (-1,))

    def onehot(self, labels, n_classes, dtype, like):
        """(N, n_classes) rows of ``dtype`` with a 1 at each label."""
        xp = self.xp
        classes = xp.reshape(self.arange(n_classes, like), (1, -1))
        return xp.astype(xp.reshape(labels, (-1, 1)) == classes, dtype)

    def masked(self, values, keep):
        """``values`` where the boolean ``keep`` holds, else 0 (the gradient of relu, clip, max...)."""
        # A multiply by the mask is ~8x faster than numpy's where() with a scalar.
        return values * keep

    def astype(self, data, dtype):
        """``data`` as numpy dtype ``dtype``; the same array when it already is."""
        return data if data.dtype == dtype else data.astype(dtype)

    def is_float(self, data) -> bool:
        return self.xp.isdtype(data.dtype, "real floating")
