"""The CuPy backend: arrays on NVIDIA GPUs, with the compiled extension's cuBLAS and fused kernels
where the probe (``cuda.status``) found them usable."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any

import numpy as np

from ..array_types import Array, DType, Namespace, Shape
from ..backend import Backend, DeviceIndex, SavedXent
from ..windows import Window

# A counter-based hash (splitmix64): random numbers without cuRAND at run time.
_UNIFORM = (
    "ElementwiseKernel",
    "uint64 seed",
    "T out",
    """
    unsigned long long z = seed + (unsigned long long)(i + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z = z ^ (z >> 31);
    out = (T)((double)(z >> 40) * (1.0 / 16777216.0));  // 24 bits: exact in float32
    """,
    "tinytensor_uniform",
)
# One reduction kernel for the label check (``kernel`` specs: the CuPy kernel class and its arguments).
_LABELS_OUTSIDE = (
    "ReductionKernel",
    "T x, int64 classes",
    "bool y",
    "x < 0 || x >= classes",
    "a || b",
    "y = a",
    "false",
    "tinytensor_labels_outside",
)


class CupyBackend(Backend):
    """CuPy arrays. Work is launched on the array's own device and that device's current stream.

    With the compiled extension (``ext``, the ``cuda.extension`` bridge), float matmuls run in its cuBLAS
    on every GPU (CuPy's own cuBLAS is then never loaded: pytinytensor-cu12-libs provides one), and linear
    layers, the softmax cross-entropy, convolution's im2col/col2im, pooling and batch-norm statistics
    use its kernels on the GPUs where they load (``fused``: the probe checked each GPU's architecture
    against the extension's fatbin).
    """

    name = "cupy"
    kind = "cuda"

    def __init__(
        self, cupy_module: Namespace, ext: ModuleType | None = None, fused: frozenset[int] = frozenset()
    ) -> None:
        self.xp = cupy_module
        self.ext = ext
        self.fused = fused
        self._kernels: dict[tuple[str, ...], Callable[..., Any]] = {}

    def device(self, data: Array) -> str:
        return f"cuda:{data.device.id}"

    def device_scope(self, like: Array) -> AbstractContextManager[object]:
        scope: AbstractContextManager[object] = self.xp.cuda.Device(like.device.id if like is not None else None)
        return scope

    def zeros(self, shape: Shape, dtype: DType, like: Array) -> Array:
        with self.device_scope(like):
            return self.xp.zeros(shape, dtype)

    def full(self, shape: Shape, value: float, dtype: DType, like: Array) -> Array:
        with self.device_scope(like):
            return self.xp.full(shape, value, dtype)

    def full_on(self, shape: Shape, value: float, dtype: DType, index: DeviceIndex) -> Array:
        with self.xp.cuda.Device(index):
            return self.xp.full(shape, value, dtype)

    def arange(self, n: int, like: Array) -> Array:
        with self.device_scope(like):
            return self.xp.arange(n)

    def asarray(self, value: object, dtype: DType, like: Array) -> Array:
        with self.device_scope(like):
            return self.xp.asarray(value, dtype)

    def scatter_add(self, target: Array, key: Any, values: Array) -> Array:
        import cupyx

        cupyx.scatter_add(target, key, values)
        return target

    def uniform(self, shape: Shape, dtype: DType, like: Array, seed: int) -> Array:
        with self.device_scope(like):
            out = self.xp.empty(shape, dtype)
            self.kernel(_UNIFORM)(np.uint64(seed), out)
            return out

    def labels_outside(self, labels: Array, n: int) -> bool:
        # one reduction kernel (and the one device-to-host read the error needs)
        if not labels.size:
            return False
        with self.device_scope(labels):
            return bool(self.kernel(_LABELS_OUTSIDE)(labels, n))

    def kernel(self, spec: tuple[str, ...]) -> Callable[..., Any]:
        # compiled by NVRTC on first use, once per process: no CUDA library beyond CuPy's is needed
        compiled = self._kernels.get(spec)
        if compiled is None:
            kind, *args = spec
            compiled = self._kernels[spec] = getattr(self.xp, kind)(*args)
        return compiled

    def matmul(self, x: Array, y: Array) -> Array:
        if self.ext is not None:
            out = self.ext.try_matmul(x, y)
            if out is not None:
                return out
        try:
            with self.device_scope(x):
                return x @ y
        except ImportError as exc:  # CuPy's cuBLAS is not installed (the cu12 install brings ours, for floats)
            if self.ext is None:  # float matmuls would have run on the extension's cuBLAS: say why they did not
                from . import extension  # loaded only once the GPU is used

                raise RuntimeError(
                    f"matmul of {x.dtype} and {y.dtype} on the GPU needs cuBLAS: the extension's is not available "
                    f"({extension.unavailable_reason()}; fix: {extension.unavailable_fix()}) and CuPy's "
                    f"own is not installed ({exc})"
                ) from None
            raise TypeError(
                f"matmul of {x.dtype} and {y.dtype} on the GPU needs CuPy's own cuBLAS, which is not installed "
                f"({exc}); use float32/float64, which run on the extension's cuBLAS, or pip install nvidia-cublas-cu12"
            ) from None

    def linear(self, x2: Array, w: Array, b: Array | None, activation: str | None) -> tuple[Array, Array, str | None]:
        if self.ext is not None and x2.device.id in self.fused:
            fused = self.ext.try_linear_forward(x2, w, b, activation)
            if fused is not None:
                return fused[0], fused[1], "fused"
        with self.device_scope(x2):
            return super().linear(x2, w, b, activation)

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
        ext = self.ext
        if how == "fused" and ext is not None:  # linear() says "fused" only when it used the extension
            gpre, gb = ext.linear_backward(g2, pre, out, has_bias, activation)
            return gpre, (gb if need_b else None)
        with self.device_scope(g2):
            return super().linear_grad(g2, pre, out, how, activation, has_bias, need_b)

    def softmax_xent(self, x: Array, labels: Array) -> tuple[Array, SavedXent]:
        if self.ext is not None and x.device.id in self.fused:
            fused = self.ext.try_softmax_xent_forward(x, labels)
            if fused is not None:
                return fused[0], ("fused", fused[1])
        with self.device_scope(x):
            return super().softmax_xent(x, labels)

    def softmax_xent_grad(self, saved: SavedXent, labels: Array, scale: Array) -> Array:
        ext = self.ext
        if type(saved[0]) is str and ext is not None:  # ("fused", probs), saved only when the extension ran
            return ext.softmax_xent_backward(saved[1], labels, scale)
        with self.device_scope(saved[0]):
            return super().softmax_xent_grad(saved, labels, scale)

    # Convolution, pooling and batch-norm statistics: the extension's kernels on the GPUs where they
    # load, else the reference bodies through CuPy, on the array's device.
    def _kernels_on(self, x: Array) -> ModuleType | None:
        """The extension bridge when its kernels load on ``x``'s GPU, else None."""
        return self.ext if self.ext is not None and x.device.id in self.fused else None

    def im2col(self, x: Array, win: Window, fill: float = 0.0) -> Array:
        ext = self._kernels_on(x)
        cols = ext.try_im2col(x, win, fill) if ext is not None else None
        if cols is not None:
            return cols
        with self.device_scope(x):
            return super().im2col(x, win, fill)

    def col2im(self, cols: Array, win: Window, height: int, width: int) -> Array:
        ext = self._kernels_on(cols)
        out = ext.try_col2im(cols, win, height, width) if ext is not None else None
        if out is not None:
            return out
        with self.device_scope(cols):
            return super().col2im(cols, win, height, width)

    def max_pool2d(self, x: Array, win: Window) -> tuple[Array, Array]:
        ext = self._kernels_on(x)
        pooled = ext.try_max_pool2d(x, win) if ext is not None else None
        if pooled is not None:
            return pooled[0], pooled[1]
        with self.device_scope(x):
            return super().max_pool2d(x, win)

    def max_pool2d_grad(self, g: Array, argmax: Array, height: int, width: int) -> Array:
        # argmax means the same whichever path made it, so either backward takes either forward's
        ext = self._kernels_on(g)
        out = ext.try_max_pool2d_grad(g, argmax, height, width) if ext is not None else None
        if out is not None:
            return out
        with self.device_scope(g):
            return super().max_pool2d_grad(g, argmax, height, width)

    def avg_pool2d(self, x: Array, win: Window, count_include_pad: bool, divisor: int | None) -> Array:
        ext = self._kernels_on(x)
        out = ext.try_avg_pool2d(x, win, count_include_pad, divisor) if ext is not None else None
        if out is not None:
            return out
        with self.device_scope(x):
            return super().avg_pool2d(x, win, count_include_pad, divisor)

    def avg_pool2d_grad(
        self, g: Array, win: Window, height: int, width: int, count_include_pad: bool, divisor: int | None
    ) -> Array:
        ext = self._kernels_on(g)
        out = ext.try_avg_pool2d_grad(g, win, height, width, count_include_pad, divisor) if ext is not None else None
        if out is not None:
            return out
        with self.device_scope(g):
            return super().avg_pool2d_grad(g, win, height, width, count_include_pad, divisor)

    def batch_norm_stats(self, x: Array) -> tuple[Array, Array]:
        ext = self._kernels_on(x)
        stats = ext.try_batch_norm_stats(x) if ext is not None else None
        if stats is not None:
            return stats[0], stats[1]
        with self.device_scope(x):
            return super().batch_norm_stats(x)

    def to_numpy(self, data: Array) -> np.ndarray:
        host: np.ndarray = data.get()
        return host

    def from_numpy(self, array: np.ndarray, index: DeviceIndex) -> Array:
        with self.xp.cuda.Device(index):
            return self.xp.asarray(array)
