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
from .windows import Window

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

    # Sliding windows (convolution, pooling, unfold/fold): the layout is (N, C, KH, KW, OH, OW).
    def pad2d(self, x: Array, ph: int, pw: int, fill: float) -> Array:
        """(N, C, H, W) ``x`` with ``ph`` rows and ``pw`` columns of ``fill`` on each side."""
        if not ph and not pw:
            return x
        n, c, h, w = x.shape
        out = self.full((n, c, h + 2 * ph, w + 2 * pw), fill, x.dtype, x)
        out[:, :, ph : ph + h, pw : pw + w] = x
        return out

    def im2col(self, x: Array, win: Window, fill: float = 0.0) -> Array:
        """Every window of (N, C, H, W) ``x``, as (N, C, KH, KW, OH, OW): padding reads ``fill``.
        The result may be a read-only view of ``x`` (numpy); reshape it, which copies, to own it."""
        xp = self.xp
        padded = self.pad2d(x, win.ph, win.pw, fill)
        rows = win.sh * (win.oh - 1) + 1
        cols = win.sw * (win.ow - 1) + 1
        pieces = [
            padded[:, :, i * win.dh : i * win.dh + rows : win.sh, j * win.dw : j * win.dw + cols : win.sw]
            for i in range(win.kh)
            for j in range(win.kw)
        ]
        n, c = x.shape[:2]
        return xp.reshape(xp.stack(pieces, axis=2), (n, c, win.kh, win.kw, win.oh, win.ow))

    def col2im(self, cols: Array, win: Window, height: int, width: int) -> Array:
        """The adjoint of ``im2col`` (fill 0): (N, C, H, W), each input position the sum of the
        window entries that read it."""
        n, c = cols.shape[:2]
        out = self.zeros((n, c, height + 2 * win.ph, width + 2 * win.pw), cols.dtype, cols)
        rows = win.sh * (win.oh - 1) + 1
        span = win.sw * (win.ow - 1) + 1
        for i in range(win.kh):
            for j in range(win.kw):
                r, s = i * win.dh, j * win.dw
                out[:, :, r : r + rows : win.sh, s : s + span : win.sw] += cols[:, :, i, j, :, :]
        return out[:, :, win.ph : win.ph + height, win.pw : win.pw + width]

    # Pooling (ops/pooling.py; the 1-d pools run these with height 1). With ceil_mode the last
    # window may reach past the padded input: the reference bodies pad the bottom and right with
    # the fill first, so that the windows ``im2col`` slices stay inside the array.
    def max_pool2d(self, x: Array, win: Window) -> tuple[Array, Array]:
        """(maxima, argmax) of every window of (N, C, H, W) ``x``, each (N, C, OH, OW); argmax (int64)
        is the flat position h * W + w of the window's maximum in the unpadded input plane
        (PyTorch's ``return_indices``). Padding counts as -inf (an integer dtype's minimum); the
        first maximum in the window, row by row, wins, and a NaN is the maximum of its window."""
        xp = self.xp
        n, c, height, width = x.shape
        fill = -float("inf") if self.is_float(x) else int(xp.iinfo(x.dtype).min)
        cols = self.im2col(self._reach_padded(x, win, fill), win, fill)
        flat = xp.reshape(cols, (n, c, win.kh * win.kw, win.oh, win.ow))
        where = xp.argmax(flat, axis=2)  # the position in the window, row-major
        rows = xp.reshape(self.arange(win.oh, x) * win.sh - win.ph, (win.oh, 1))
        cols_at = xp.reshape(self.arange(win.ow, x) * win.sw - win.pw, (1, win.ow))
        row = rows + (where // win.kw) * win.dh
        col = cols_at + (where % win.kw) * win.dw
        # where every input value ties with the padding's fill, the window's first input position
        # (PyTorch's), not a padding position outside the plane
        first_row = rows + (xp.clip(-rows, 0, None) + win.dh - 1) // win.dh * win.dh
        first_col = cols_at + (xp.clip(-cols_at, 0, None) + win.dw - 1) // win.dw * win.dw
        outside = (row < 0) | (col < 0) | (row >= height) | (col >= width)
        row, col = xp.where(outside, first_row, row), xp.where(outside, first_col, col)
        return xp.max(flat, axis=2), xp.astype(row * width + col, xp.int64)

    def max_pool2d_grad(self, g: Array, argmax: Array, height: int, width: int) -> Array:
        """The gradient of ``max_pool2d``'s input: (N, C, height, width), each of ``g``'s entries added
        at its window's ``argmax`` (windows that overlap add up)."""
        xp = self.xp
        n, c = g.shape[:2]
        plane = height * width
        starts = xp.reshape(xp.astype(self.arange(n * c, g), xp.int64) * plane, (n, c, 1, 1))
        out = self.zeros((n * c * plane,), g.dtype, g)
        self.scatter_add(out, xp.reshape(argmax + starts, (-1,)), xp.reshape(g, (-1,)))
        return xp.reshape(out, (n, c, height, width))

    def avg_pool2d(self, x: Array, win: Window, count_include_pad: bool, divisor: int | None) -> Array:
        """The mean of every window of (N, C, H, W) ``x``, as (N, C, OH, OW): the window's sum over
        ``divisor`` where given, else over PyTorch's count (the window clipped to the padded input
        with ``count_include_pad``, to the input without)."""
        cols = self.im2col(self._reach_padded(x, win, 0.0), win, 0.0)
        # the sum as KH * KW whole-array adds: numpy reduces the two short window axes of its
        # strided im2col view ~10x slower
        sums = cols[:, :, 0, 0, :, :] / 1.0  # a new array, whatever im2col returned
        for k in range(1, win.kh * win.kw):
            sums += cols[:, :, k // win.kw, k % win.kw, :, :]
        return sums / self._pool_divisors(win, x.shape[2], x.shape[3], count_include_pad, divisor, x)

    def avg_pool2d_grad(
        self, g: Array, win: Window, height: int, width: int, count_include_pad: bool, divisor: int | None
    ) -> Array:
        """The gradient of ``avg_pool2d``'s (N, C, height, width) input from ``g`` (N, C, OH, OW)."""
        xp = self.xp
        n, c = g.shape[:2]
        scaled = g / self._pool_divisors(win, height, width, count_include_pad, divisor, g)
        cols = xp.broadcast_to(xp.reshape(scaled, (n, c, 1, 1, win.oh, win.ow)), (n, c, win.kh, win.kw, win.oh, win.ow))
        extra_h, extra_w = _reach(win, height, width)
        out = self.col2im(cols, win, height + extra_h, width + extra_w)
        return out[:, :, :height, :width] if extra_h or extra_w else out

    def _reach_padded(self, x: Array, win: Window, fill: float) -> Array:
        """``x`` with rows and columns of ``fill`` added at the bottom and right where ceil_mode's
        last window reaches past the padded input."""
        extra_h, extra_w = _reach(win, x.shape[2], x.shape[3])
        if not extra_h and not extra_w:
            return x
        n, c, height, width = x.shape
        out = self.full((n, c, height + extra_h, width + extra_w), fill, x.dtype, x)
        out[:, :, :height, :width] = x
        return out

    def _pool_divisors(
        self, win: Window, height: int, width: int, count_include_pad: bool, divisor: int | None, like: Array
    ) -> Array | float:
        """What each window's sum is divided by: ``divisor``, or an (OH, OW) array of counts."""
        if divisor is not None:
            return float(divisor)
        rows = _window_counts(win.oh, win.kh, win.sh, win.ph, height, count_include_pad)
        cols = _window_counts(win.ow, win.kw, win.sw, win.pw, width, count_include_pad)
        return self.asarray([[r * s for s in cols] for r in rows], like.dtype, like)

    def batch_norm_stats(self, x: Array) -> tuple[Array, Array]:
        """(mean, biased variance) of each channel of (N, C, ...) ``x``, over every axis but 1, each
        of shape (C,)."""
        xp = self.xp
        axes = (0, *range(2, x.ndim))
        mean = xp.mean(x, axis=axes, keepdims=True)
        centered = x - mean
        return xp.reshape(mean, (-1,)), xp.mean(centered * centered, axis=axes)

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


def _reach(win: Window, height: int, width: int) -> tuple[int, int]:
    """How many rows and columns the windows reach past the padded (height, width) input (ceil_mode's
    last window may)."""
    needed_h = (win.oh - 1) * win.sh + (win.kh - 1) * win.dh + 1
    needed_w = (win.ow - 1) * win.sw + (win.kw - 1) * win.dw + 1
    return max(0, needed_h - height - 2 * win.ph), max(0, needed_w - width - 2 * win.pw)


def _window_counts(n_out: int, kernel: int, stride: int, pad: int, size: int, include_pad: bool) -> list[int]:
    """Along one axis, how many positions each average-pooling window counts (PyTorch's rule): the
    window clipped to the padded input, or to the input itself without ``include_pad``."""
    counts = []
    for i in range(n_out):
        start = i * stride - pad
        end = min(start + kernel, size + pad)
        counts.append(end - start if include_pad else min(end, size) - max(start, 0))
    return counts
