"""The numpy backend: the CPU, tuned for the small arrays where each numpy call's overhead is the cost."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .activation_math import ACTIVATIONS
from .array_types import Array, DType, Shape
from .backend import Axis, Backend, DeviceIndex, SavedXent
from .windows import Window


class NumpyBackend(Backend):
    """numpy arrays: the CPU."""

    name = "numpy"
    kind = "cpu"
    xp = np

    def device(self, data: Array) -> str:
        return "cpu"

    def zeros(self, shape: Shape, dtype: DType, like: Array) -> Array:
        return np.zeros(shape, dtype)

    def full(self, shape: Shape, value: float, dtype: DType, like: Array) -> Array:
        return np.full(shape, value, dtype)

    def full_on(self, shape: Shape, value: float, dtype: DType, index: DeviceIndex) -> Array:
        return np.full(shape, value, dtype)

    def arange(self, n: int, like: Array) -> Array:
        return np.arange(n)

    def asarray(self, value: object, dtype: DType, like: Array) -> Array:
        return np.asarray(value, dtype)

    def scatter_add(self, target: Array, key: Any, values: Array) -> Array:
        np.add.at(target, key, values)
        return target

    def uniform(self, shape: Shape, dtype: DType, like: Array, seed: int) -> Array:
        return np.random.default_rng(seed).random(shape, dtype=np.dtype(dtype))

    # The loss runs every training step on small arrays, where each numpy call's own overhead is
    # the cost: these use ufunc reductions directly, fancy indexing and in-place updates.
    def sum(self, x: Array, axis: Axis = None) -> Array:
        return np.add.reduce(x, axis=axis)  # np.sum's Python wrapper costs more than the sum

    def relu_fresh(self, x: Array) -> Array:
        # numpy's maximum of an array and a scalar runs a loop several times slower than that of
        # two arrays, so relu takes the maximum with (slices of) a cached block of zeros
        if x.dtype.kind != "f" or not x.flags.c_contiguous:
            return np.maximum(x, 0, out=x)
        flat = x.reshape(-1)
        n = flat.size
        zeros = _constant(0, x.dtype, min(n, _BLOCK))
        if n <= _BLOCK:
            np.maximum(flat, zeros, out=flat)
            return x
        for start in range(0, n, _BLOCK):
            part = flat[start : start + _BLOCK]
            np.maximum(part, zeros[: part.size], out=part)
        return x

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
        gpre = g2 if activation is None else ACTIVATIONS[activation].grad(self, g2, pre, out)
        if not need_b:
            return gpre, None
        return gpre, _sums(gpre, axis=0)

    def labels_outside(self, labels: Array, n: int) -> bool:
        # One pass: seen as unsigned, a negative label is huge, so one max covers both ends.
        unsigned = labels.view(labels.dtype.str.replace("i", "u")) if labels.dtype.kind == "i" else labels
        return bool(labels.size) and bool(np.maximum.reduce(unsigned, axis=None) >= n)

    def softmax_xent(self, x: Array, labels: Array) -> tuple[Array, SavedXent]:
        n, c = x.shape
        if c <= 32 < n:
            # numpy reduces along a short last axis row by row; the rows of a transposed copy
            # reduce elementwise, several times faster
            top = np.maximum.reduce(np.ascontiguousarray(x.T), axis=0).reshape(n, 1)
        else:
            top = np.maximum.reduce(x, axis=1, keepdims=True)
        shifted = x - top
        exps = np.exp(shifted)
        sums = _sums(exps, axis=1).reshape(n, 1)
        rows = np.log(sums).reshape(-1)
        positions = (np.arange(n), labels)
        rows -= shifted[positions]
        return rows, (exps, sums, positions)

    def softmax_xent_grad(self, saved: SavedXent, labels: Array, scale: Array) -> Array:
        exps, sums, positions = saved
        grad = exps / sums  # a new array: the in-place steps below change nothing saved
        grad[positions] -= 1
        grad *= scale
        return grad

    def pick_columns(self, x: Array, labels: Array) -> Array:
        return x[np.arange(x.shape[0]), labels]

    def onehot(self, labels: Array, n_classes: int, dtype: DType, like: Array) -> Array:
        return np.eye(n_classes, dtype=dtype)[labels]

    def im2col(self, x: Array, win: Window, fill: float = 0.0) -> Array:
        # a strided view of the padded input: no copy until the caller reshapes it
        padded = self.pad2d(x, win.ph, win.pw, fill)
        sn, sc, sh, sw = padded.strides
        shape = (*x.shape[:2], win.kh, win.kw, win.oh, win.ow)
        strides = (sn, sc, sh * win.dh, sw * win.dw, sh * win.sh, sw * win.sw)
        return np.lib.stride_tricks.as_strided(padded, shape, strides, writeable=False)

    def max_pool2d(self, x: Array, win: Window) -> tuple[Array, Array]:
        # PyTorch's rule, as its CPU kernel and the CUDA extension apply it: a window's first
        # position inside the input starts, and a later one wins where it is greater or NaN (so
        # the first maximum and the last NaN win, and the padding never does). The reference
        # (an argmax over the short window axis of an im2col copy) runs ~7x slower.
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        cols = self.im2col(self._reach_padded(x, win, fill), win, fill)  # (N, C, KH, KW, OH, OW) view
        area = win.kh * win.kw
        best, where = _running_max(cols, win.kw) if area <= _POOL_STEPS else _window_max(cols)
        corner, first = _pool_geometry(win, x.shape[3])
        if first is not None:
            # a window that starts in the padding: the padding holds the lowest value, so it can
            # only tie, where the window's first position inside the input wins instead
            np.maximum(where, first, out=where)
        # position k = ki * KW + kj of the window is ki * DH * W + kj * DW past its corner
        argmax = (where // win.kw).astype(np.int64)
        argmax *= win.dh * x.shape[3] - win.kw * win.dw
        argmax += where if win.dw == 1 else where * np.int64(win.dw)
        argmax += corner
        return best, argmax

    def to_numpy(self, data: np.ndarray) -> np.ndarray:
        return data

    def from_numpy(self, array: np.ndarray, index: DeviceIndex) -> Array:
        return array

    def is_float(self, data: np.ndarray) -> bool:
        return data.dtype.kind == "f"


# Read-only blocks of one value (relu's zeros, the ones that turn sums into BLAS products), one
# per value and dtype, sliced to the length needed; longer arrays go block by block or without.
_BLOCK = 1 << 15
_BLOCKS: dict[tuple[int, DType], np.ndarray] = {}


def _constant(value: int, dtype: DType, n: int) -> np.ndarray:
    """``n`` (at most ``_BLOCK``) elements equal to ``value``, read-only."""
    block = _BLOCKS.get((value, dtype))
    if block is None:
        block = _BLOCKS[(value, dtype)] = np.full(_BLOCK, value, dtype)
        block.flags.writeable = False
    return block[:n]


# Windows of up to this many positions pool in whole-array steps per position; larger ones (global
# pooling) reduce a copy with each window's positions along its last axis: fewer numpy calls.
_POOL_STEPS = 64  # at most 256 (positions are uint8)


@functools.lru_cache(maxsize=256)
def _pool_geometry(win: Window, width: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Max pooling's window placements over rows of ``width``: each window's corner h * W + w in
    the unpadded plane, (OH, OW) int64, and, where windows start in the padding, the row-major
    position in each window of its first element inside the input (OH, OW), else None.
    Read-only: the cache shares them."""
    top = np.arange(win.oh) * win.sh - win.ph
    left = np.arange(win.ow) * win.sw - win.pw
    corner = top[:, None] * width + left[None, :]
    corner.flags.writeable = False
    if not win.ph and not win.pw:
        return corner, None
    # a window starting `before` rows above the input skips ceil(before / dilation) of its rows
    # (the window sizes keep one inside the input); likewise for columns
    row = -(np.minimum(top, 0) // win.dh)
    col = -(np.minimum(left, 0) // win.dw)
    first = (row[:, None] * win.kw + col[None, :]).astype(_position_dtype(win.kh * win.kw))
    first.flags.writeable = False
    return corner, first


def _position_dtype(area: int) -> np.dtype:
    """The narrowest unsigned dtype for the positions 0 .. area - 1 of a window."""
    return np.min_scalar_type(area - 1)


def _running_max(cols: np.ndarray, kw: int) -> tuple[np.ndarray, np.ndarray]:
    """(maxima, row-major position in the window) of im2col's (N, C, KH, KW, OH, OW) ``cols``, each
    (N, C, OH, OW), in whole-array steps over its KH * KW (OH, OW) slices; a later position wins
    where it is greater, and (floats) the last NaN wins. Branch-free throughout: a masked copy
    (``copyto(where=)``) runs ~100x slower on a mask of data-dependent values."""
    area = cols.shape[2] * cols.shape[3]
    dtype = np.dtype(np.uint8)  # area <= _POOL_STEPS: the positions fit, and bools view as them
    best = cols[:, :, 0, 0].copy()
    where = np.zeros(best.shape, dtype)
    part = np.empty_like(best)
    wins = np.empty(best.shape, np.bool_)
    steps = np.empty(best.shape, dtype)
    for k in range(1, area):
        # one strided gather, so that the four steps below run on contiguous arrays (SIMD)
        np.copyto(part, cols[:, :, k // kw, k % kw])
        np.greater(part, best, out=wins)
        # k grows, so the last position that won is the largest one: a maximum records it
        np.multiply(wins.view(dtype), dtype.type(k), out=steps)
        np.maximum(where, steps, out=where)
        # maximum(part, best) is best where they are equal, so a tie keeps the first one's value
        # (a zero's sign included); a NaN stays the maximum
        np.maximum(part, best, out=best)
    if best.dtype.kind == "f" and best.size and np.isnan(np.maximum.reduce(best, axis=None)):
        # every position that won came before its window's first NaN (nothing is greater than
        # a NaN), so the largest NaN position, the last, overrides it
        for k in range(area):
            np.isnan(cols[:, :, k // kw, k % kw], out=wins)
            np.multiply(wins.view(dtype), dtype.type(k), out=steps)
            np.maximum(where, steps, out=where)
    return best, where


def _window_max(cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``_running_max``'s result for large windows: each window's positions copied to a last axis,
    its argmax (the first maximum, or the first NaN) along it, then the last NaN where there is one."""
    n, c, kh, kw, oh, ow = cols.shape
    area = kh * kw
    rows = np.ascontiguousarray(cols.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c, oh, ow, area)
    where = np.argmax(rows, axis=-1)
    best = np.take_along_axis(rows, where[..., None], axis=-1)[..., 0]
    if best.dtype.kind == "f" and best.size:
        nan = np.isnan(best)
        if nan.any():
            last = area - 1 - np.argmax(np.isnan(rows[..., ::-1]), axis=-1)
            where[nan] = last[nan]
    return best, where.astype(_position_dtype(area))


def _sums(a: Array, axis: int) -> Array:
    """Column (``axis=0``) or row (``axis=1``) sums of a 2-D array, as a BLAS matrix-vector product
    with ones where the dtype allows: numpy's reduction along either axis takes about twice as long.

    Quiet about the invalid-operation flag: OpenBLAS's small matrix-vector kernels can raise it on
    finite input, which numpy then reports as a warning about the data. The one invalid case a sum
    has (inf plus -inf) still gives nan, as it does in PyTorch, which never warns.
    """
    n = a.shape[axis]
    with np.errstate(invalid="ignore"):
        if a.dtype.char not in "fd" or n > _BLOCK:
            return np.add.reduce(a, axis=axis)
        ones = _constant(1, a.dtype, n)
        return ones @ a if axis == 0 else a @ ones


NUMPY = NumpyBackend()
