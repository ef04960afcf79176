"""The numpy backend: the CPU, tuned for the small arrays where each numpy call's overhead is the cost."""

from __future__ import annotations

import numpy as np

from .backend import Backend


class NumpyBackend(Backend):
    name = "numpy"
    kind = "cpu"
    xp = np

    def device(self, data):
        return "cpu"

    def zeros(self, shape, dtype, like):
        return np.zeros(shape, dtype)

    def full(self, shape, value, dtype, like):
        return np.full(shape, value, dtype)

    def full_on(self, shape, value, dtype, index):
        return np.full(shape, value, dtype)

    def arange(self, n, like):
        return np.arange(n)

    def asarray(self, value, dtype, like):
        return np.asarray(value, dtype)

    def scatter_add(self, target, key, values):
        np.add.at(target, key, values)
        return target

    def uniform(self, shape, dtype, like, seed):
        return np.random.default_rng(seed).random(shape, dtype=np.dtype(dtype))

    # The loss runs every training step on small arrays, where each numpy call's own overhead is
    # the cost: these use ufunc reductions directly, fancy indexing and in-place updates.
    def sum(self, x, axis=None):
        return np.add.reduce(x, axis=axis)  # np.sum's Python wrapper costs more than the sum

    def relu_fresh(self, x):
        return np.maximum(x, 0, out=x)

    def labels_outside(self, labels, n):
        # One pass: seen as unsigned, a negative label is huge, so one max covers both ends.
        unsigned = labels.view(labels.dtype.str.replace("i", "u")) if labels.dtype.kind == "i" else labels
        return bool(labels.size) and bool(np.maximum.reduce(unsigned, axis=None) >= n)

    def softmax_xent(self, x, labels):
        shifted = x - np.maximum.reduce(x, axis=1, keepdims=True)
        exps = np.exp(shifted)
        sums = np.add.reduce(exps, axis=1, keepdims=True)
        rows = np.log(sums).reshape(-1)
        positions = (np.arange(x.shape[0]), labels)
        rows -= shifted[positions]
        return rows, (exps, sums, positions)

    def softmax_xent_grad(self, saved, labels, scale):
        exps, sums, positions = saved
        grad = exps / sums  # a new array: the in-place steps below change nothing saved
        grad[positions] -= 1
        grad *= scale
        return grad

    def pick_columns(self, x, labels):
        return x[np.arange(x.shape[0]), labels]

    def onehot(self, labels, n_classes, dtype, like):
        return np.eye(n_classes, dtype=dtype)[labels]

    def to_numpy(self, data):
        return data

    def from_numpy(self, array, index):
        return array

    def is_float(self, data):
        return data.dtype.kind == "f"


NUMPY = NumpyBackend()
