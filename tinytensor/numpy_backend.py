"""The numpy backend: the CPU, tuned for the small arrays where each numpy call's overhead is the cost."""

from __future__ import annotations

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
