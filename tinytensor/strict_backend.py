"""The array_api_strict backend: a CPU array library whose fake devices refuse to mix, so the CPU-only
test suite catches device-placement bugs that would break on a GPU (devices ``"strict:NAME"``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .array_types import Array, DType, Namespace, Shape
from .backend import Backend, DeviceIndex


class StrictBackend(Backend):
    """array_api_strict: a CPU array library with fake devices that refuse to mix."""

    name = "array_api_strict"
    kind = "strict"

    def __init__(self, module: Namespace) -> None:
        self.xp = module

    def device(self, data: Array) -> str:
        return "strict:" + _strict_device_name(data.device)

    def zeros(self, shape: Shape, dtype: DType, like: Array) -> Array:
        return self.xp.zeros(shape, dtype=self._dtype(dtype), device=like.device)

    def full(self, shape: Shape, value: float, dtype: DType, like: Array) -> Array:
        return self.xp.full(shape, value, dtype=self._dtype(dtype), device=like.device)

    def full_on(self, shape: Shape, value: float, dtype: DType, index: DeviceIndex) -> Array:
        return self.xp.full(shape, value, dtype=self._dtype(dtype), device=self.xp.Device(index))

    def _dtype(self, dtype: DType) -> DType:
        # numpy dtypes name the strict ones
        if dtype is None or hasattr(dtype, "_np_dtype"):
            return dtype
        return getattr(self.xp, np.dtype(dtype).name)

    def arange(self, n: int, like: Array) -> Array:
        return self.xp.arange(n, device=like.device)

    def asarray(self, value: object, dtype: DType, like: Array) -> Array:
        return self.xp.asarray(value, dtype=self._dtype(dtype), device=like.device)

    def scatter_add(self, target: Array, key: Any, values: Array) -> Array:
        # The array API has no scatter-add; gathers along axis 0 are the only advanced keys the
        # library makes, so a one-hot matmul is exact (repeated indices add up).
        xp = self.xp
        if not hasattr(key, "dtype"):
            raise TypeError(
                "array_api_strict supports integer-array indexing only as x[indices] "
                f"(a gather along axis 0), got key {key!r}"
            )
        flat_idx = xp.reshape(key, (-1,))
        rows = target.shape[0]
        onehot = xp.astype(
            xp.reshape(flat_idx, (-1, 1)) == xp.reshape(xp.arange(rows, device=target.device), (1, -1)),
            values.dtype,
        )
        flat_vals = xp.reshape(values, (flat_idx.shape[0], -1))
        target += xp.reshape(xp.matrix_transpose(onehot) @ flat_vals, target.shape)
        return target

    def uniform(self, shape: Shape, dtype: DType, like: Array, seed: int) -> Array:
        host = np.random.default_rng(seed).random(shape, dtype=np.float32)
        return self.xp.asarray(host, dtype=self._dtype(dtype), device=like.device)

    def to_numpy(self, data: Array) -> np.ndarray:
        cpu = self.xp.__array_namespace_info__().default_device()
        return np.asarray(data.to_device(cpu))

    def from_numpy(self, array: np.ndarray, index: DeviceIndex) -> Array:
        return self.xp.asarray(array, device=self.xp.Device(index))

    def copy(self, data: Array) -> Array:
        return self.xp.asarray(data, copy=True)

    def masked(self, values: Array, keep: Array) -> Array:
        return self.xp.where(keep, values, 0)  # the array API does not multiply floats by booleans

    def astype(self, data: Array, dtype: DType) -> Array:
        target = self._dtype(dtype)
        return data if data.dtype == target else self.xp.astype(data, target)

    def is_float(self, data: Array) -> bool:
        return bool(self.xp.isdtype(data.dtype, "real floating"))


def _strict_device_name(device: object) -> str:
    # Device('device1') -> 'device1'; the class keeps the name in a private slot.
    text = repr(device)
    return text[text.index("(") + 2 : -2]
