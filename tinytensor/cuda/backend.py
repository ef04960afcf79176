"""The CuPy backend: arrays on NVIDIA GPUs, with the compiled extension's cuBLAS and fused kernels
where the probe (``cuda.status``) found them usable."""

from __future__ import annotations

import numpy as np

from ..backend import Backend

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
    layers and the softmax cross-entropy use its fused kernels on the GPUs where they load
    (``fused``: the probe checked each GPU's architecture against the extension's fatbin).
    """

    name = "cupy"
    kind = "cuda"

    def __init__(self, cupy_module, ext=None, fused=frozenset()):
        self.xp = cupy_module
        self.ext = ext
        self.fused = fused
        self._kernels: dict[tuple, object] = {}

    def device(self, data):
        return f"cuda:{data.device.id}"

    def device_scope(self, like):
        return self.xp.cuda.Device(like.device.id if like is not None else None)

    def zeros(self, shape, dtype, like):
        with self.device_scope(like):
            return self.xp.zeros(shape, dtype)

    def full(self, shape, value, dtype, like):
        with self.device_scope(like):
            return self.xp.full(shape, value, dtype)

    def full_on(self, shape, value, dtype, index):
        with self.xp.cuda.Device(index):
            return self.xp.full(shape, value, dtype)

    def arange(self, n, like):
        with self.device_scope(like):
            return self.xp.arange(n)

    def asarray(self, value, dtype, like):
        with self.device_scope(like):
            return self.xp.asarray(value, dtype)

    def scatter_add(self, target, key, values):
        import cupyx

        cupyx.scatter_add(target, key, values)
        return target

    def uniform(self, shape, dtype, like, seed):
        with self.device_scope(like):
            out = self.xp.empty(shape, dtype)
            self.kernel(_UNIFORM)(np.uint64(seed), out)
            return out

    def labels_outside(self, labels, n):
        # one reduction kernel (and the one device-to-host read the error needs)
        if not labels.size:
            return False
        with self.device_scope(labels):
            return bool(self.kernel(_LABELS_OUTSIDE)(labels, n))

    def kernel(self, spec):
        # compiled by NVRTC on first use, once per process: no CUDA library beyond CuPy's is needed
        compiled = self._kernels.get(spec)
        if compiled is None:
            kind, *args = spec
            compiled = self._kernels[spec] = getattr(self.xp, kind)(*args)
        return compiled

    def matmul(self, x, y):
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

    def linear(self, x2, w, b, activation):
        if self.ext is not None and x2.device.id in self.fused:
            fused = self.ext.try_linear_forward(x2, w, b, activation)
            if fused is not None:
                return fused[0], fused[1], "fused"
        with self.device_scope(x2):
            return super().linear(x2, w, b, activation)

    def linear_grad(self, g2, pre, out, how, activation, has_bias, need_b):
        if how == "fused":
            gpre, gb = self.ext.linear_backward(g2, pre, out, has_bias, activation)
            return gpre, (gb if need_b else None)
        with self.device_scope(g2):
            return super().linear_grad(g2, pre, out, how, activation, has_bias, need_b)

    def softmax_xent(self, x, labels):
        if self.ext is not None and x.device.id in self.fused:
            fused = self.ext.try_softmax_xent_forward(x, labels)
            if fused is not None:
                return fused[0], ("fused", fused[1])
        with self.device_scope(x):
            return super().softmax_xent(x, labels)

    def softmax_xent_grad(self, saved, labels, scale):
        if type(saved[0]) is str:  # ("fused", probs)
            return self.ext.softmax_xent_backward(saved[1], labels, scale)
        with self.device_scope(saved[0]):
            return super().softmax_xent_grad(saved, labels, scale)

    def to_numpy(self, data):
        return data.get()

    def from_numpy(self, array, index):
        with self.xp.cuda.Device(index):
            return self.xp.asarray(array)
