"""Array backends: how each array library is driven, chosen by the array's own type.

A tensor's ``.data`` decides everything: there is no global "current device". Every op asks
``backend_of(data)`` (one dict lookup on ``type(data)``) and uses that backend's ``xp`` namespace,
which for numpy, CuPy and array_api_strict is written against the same array-API functions. The
few things the array API leaves out (creating an array on another array's device, scatter-add,
random numbers, host transfers) are the methods below.

Devices are strings: ``"cpu"``, ``"cuda"`` / ``"cuda:N"``, and ``"strict:NAME"``, a fake device of
``array_api_strict`` that the CPU-only CI uses to catch device-placement bugs that would break on
a GPU.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from .errors import DeviceError

_CUDA_KINDS = ("cuda",)


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
        if activation == "relu":
            out = self.relu_fresh(pre)  # relu's gradient needs only its output: pre may be overwritten
        elif activation == "gelu":
            from .ops.elementwise import gelu_forward

            out = gelu_forward(self.xp, pre)
        else:
            out = pre
        return pre, out, None

    def linear_grad(self, g2, pre, out, how, activation, has_bias, need_b):
        """(gradient of the pre-activation, gradient of the bias or None) from ``linear``'s results."""
        if activation == "relu":
            gpre = self.masked(g2, out > 0)
        elif activation == "gelu":
            from .ops.elementwise import gelu_grad

            gpre = gelu_grad(self.xp, g2, pre)
        else:
            gpre = g2
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

    # Optimizer updates, in place on ``param`` (and the state arrays): one call per parameter, so
    # a GPU backend can make each one kernel instead of a launch per arithmetic step.
    def sgd_step(self, param, grad, buf, lr, momentum, dampening, nesterov, wd):
        """PyTorch's SGD update; returns the momentum buffer (a new one when ``buf`` is None)."""
        if wd:
            grad = grad + wd * param
        if momentum:
            if buf is None:
                buf = grad * 1  # its own copy: updated in place from the next step on
            else:
                buf *= momentum
                buf += (1 - dampening) * grad if dampening else grad
            grad = grad + momentum * buf if nesterov else buf
        param -= lr * grad
        return buf

    def adam_step(self, param, grad, m, v, lr, beta1, beta2, eps, wd, decoupled, step):
        """PyTorch's Adam (``decoupled``: AdamW) update at ``step`` (1, 2, ...) on ``m`` and ``v``."""
        if wd:
            if decoupled:
                param *= 1 - lr * wd
            else:
                grad = grad + wd * param
        m *= beta1
        m += (1 - beta1) * grad
        v *= beta2
        v += (1 - beta2) * (grad * grad)
        denom = self.xp.sqrt(v) / math.sqrt(1 - beta2**step) + eps
        param -= (lr / (1 - beta1**step)) * (m / denom)

    def masked(self, values, keep):
        """``values`` where the boolean ``keep`` holds, else 0 (the gradient of relu, clip, max...)."""
        # A multiply by the mask is ~8x faster than numpy's where() with a scalar.
        return values * keep

    def astype(self, data, dtype):
        """``data`` as numpy dtype ``dtype``; the same array when it already is."""
        return data if data.dtype == dtype else data.astype(dtype)

    def is_float(self, data) -> bool:
        return self.xp.isdtype(data.dtype, "real floating")


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


class CupyBackend(Backend):
    """CuPy arrays. Work is launched on the array's own device and that device's current stream.

    With the compiled extension (``ext``, the ``cuda_extension`` bridge), float matmuls run in its cuBLAS
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
        self._uniform_kernel = None

    def device(self, data):
        return f"cuda:{data.device.id}"

    def _on(self, like):
        return self.xp.cuda.Device(like.device.id if like is not None else None)

    def zeros(self, shape, dtype, like):
        with self._on(like):
            return self.xp.zeros(shape, dtype)

    def full(self, shape, value, dtype, like):
        with self._on(like):
            return self.xp.full(shape, value, dtype)

    def full_on(self, shape, value, dtype, index):
        with self.xp.cuda.Device(index):
            return self.xp.full(shape, value, dtype)

    def arange(self, n, like):
        with self._on(like):
            return self.xp.arange(n)

    def asarray(self, value, dtype, like):
        with self._on(like):
            return self.xp.asarray(value, dtype)

    def scatter_add(self, target, key, values):
        import cupyx

        cupyx.scatter_add(target, key, values)
        return target

    def uniform(self, shape, dtype, like, seed):
        # A counter-based hash (splitmix64) compiled by NVRTC: no cuRAND needed at run time.
        if self._uniform_kernel is None:
            self._uniform_kernel = self.xp.ElementwiseKernel(
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
        with self._on(like):
            out = self.xp.empty(shape, dtype)
            self._uniform_kernel(np.uint64(seed), out)
            return out

    def labels_outside(self, labels, n):
        # one reduction kernel (and the one device-to-host read the error needs)
        if not labels.size:
            return False
        with self._on(labels):
            return bool(_cupy_kernels(self.xp)["labels_outside"](labels, n))

    def sgd_step(self, param, grad, buf, lr, momentum, dampening, nesterov, wd):
        if param.dtype not in _FUSED_FLOATS:
            with self._on(param):
                return super().sgd_step(param, grad, buf, lr, momentum, dampening, nesterov, wd)
        kernels, t = _cupy_kernels(self.xp), param.dtype.type
        grad = grad.astype(param.dtype, copy=False)  # the kernel takes one T; numpy would promote
        with self._on(param):
            if not momentum:
                kernels["sgd"](grad, t(lr), t(wd), param)
                return None
            first = buf is None
            if first:
                buf = self.xp.empty_like(param)  # inside the device: on the parameter's
            kernels["sgd_momentum"](grad, t(lr), t(momentum), t(dampening), t(wd), nesterov, first, param, buf)
        return buf

    def adam_step(self, param, grad, m, v, lr, beta1, beta2, eps, wd, decoupled, step):
        if param.dtype not in _FUSED_FLOATS:
            with self._on(param):
                return super().adam_step(param, grad, m, v, lr, beta1, beta2, eps, wd, decoupled, step)
        t = param.dtype.type
        grad = grad.astype(param.dtype, copy=False)
        bias1, root_bias2 = 1 - beta1**step, math.sqrt(1 - beta2**step)
        with self._on(param):
            _cupy_kernels(self.xp)["adam"](
                grad, t(lr), t(beta1), t(beta2), t(eps), t(wd), t(bias1), t(root_bias2), decoupled, param, m, v
            )

    def matmul(self, x, y):
        if self.ext is not None:
            out = self.ext.try_matmul(x, y)
            if out is not None:
                return out
        try:
            with self._on(x):
                return x @ y
        except ImportError as exc:  # CuPy's cuBLAS is not installed (the cu12 install brings ours, for floats)
            if self.ext is None:  # float matmuls would have run on the extension's cuBLAS: say why they did not
                from . import cuda_extension

                raise RuntimeError(
                    f"matmul of {x.dtype} and {y.dtype} on the GPU needs cuBLAS: the extension's is not available "
                    f"({cuda_extension.unavailable_reason()}; fix: {cuda_extension.unavailable_fix()}) and CuPy's "
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
        with self._on(x2):
            return super().linear(x2, w, b, activation)

    def linear_grad(self, g2, pre, out, how, activation, has_bias, need_b):
        if how == "fused":
            gpre, gb = self.ext.linear_backward(g2, pre, out, has_bias, activation)
            return gpre, (gb if need_b else None)
        with self._on(g2):
            return super().linear_grad(g2, pre, out, how, activation, has_bias, need_b)

    def softmax_xent(self, x, labels):
        if self.ext is not None and x.device.id in self.fused:
            fused = self.ext.try_softmax_xent_forward(x, labels)
            if fused is not None:
                return fused[0], ("fused", fused[1])
        with self._on(x):
            return super().softmax_xent(x, labels)

    def softmax_xent_grad(self, saved, labels, scale):
        if type(saved[0]) is str:  # ("fused", probs)
            return self.ext.softmax_xent_backward(saved[1], labels, scale)
        with self._on(saved[0]):
            return super().softmax_xent_grad(saved, labels, scale)

    def to_numpy(self, data):
        return data.get()

    def from_numpy(self, array, index):
        with self.xp.cuda.Device(index):
            return self.xp.asarray(array)


_FUSED_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_KERNELS: dict[str, object] = {}


def _cupy_kernels(cupy) -> dict:
    """CuPy kernels compiled by NVRTC on first use (no CUDA library beyond CuPy's needs): the label
    check as one reduction, and each optimizer update as one kernel per parameter."""
    if not _KERNELS:
        _KERNELS["labels_outside"] = cupy.ReductionKernel(
            "T x, int64 classes",
            "bool y",
            "x < 0 || x >= classes",
            "a || b",
            "y = a",
            "false",
            "tinytensor_labels_outside",
        )
        _KERNELS["sgd"] = cupy.ElementwiseKernel(
            "T grad, T lr, T wd",
            "T param",
            "param -= lr * (wd != 0 ? grad + wd * param : grad);",
            "tinytensor_sgd",
        )
        _KERNELS["sgd_momentum"] = cupy.ElementwiseKernel(
            "T grad, T lr, T momentum, T dampening, T wd, bool nesterov, bool first",
            "T param, T buf",
            """
            T g = wd != 0 ? grad + wd * param : grad;
            buf = first ? g : momentum * buf + (1 - dampening) * g;
            param -= lr * (nesterov ? g + momentum * buf : buf);
            """,
            "tinytensor_sgd_momentum",
        )
        _KERNELS["adam"] = cupy.ElementwiseKernel(
            "T grad, T lr, T beta1, T beta2, T eps, T wd, T bias1, T root_bias2, bool decoupled",
            "T param, T m, T v",
            """
            T g = grad;
            if (wd != 0) {
                if (decoupled) param *= 1 - lr * wd;
                else g += wd * param;
            }
            m = beta1 * m + (1 - beta1) * g;
            v = beta2 * v + (1 - beta2) * g * g;
            param -= (lr / bias1) * (m / (sqrt(v) / root_bias2 + eps));
            """,
            "tinytensor_adam",
        )
    return _KERNELS


class StrictBackend(Backend):
    """array_api_strict: a CPU array library with fake devices that refuse to mix."""

    name = "array_api_strict"
    kind = "strict"

    def __init__(self, module):
        self.xp = module

    def device(self, data):
        return "strict:" + _strict_device_name(data.device)

    def zeros(self, shape, dtype, like):
        return self.xp.zeros(shape, dtype=self._dtype(dtype), device=like.device)

    def full(self, shape, value, dtype, like):
        return self.xp.full(shape, value, dtype=self._dtype(dtype), device=like.device)

    def full_on(self, shape, value, dtype, index):
        return self.xp.full(shape, value, dtype=self._dtype(dtype), device=self.xp.Device(index))

    def _dtype(self, dtype):
        # numpy dtypes name the strict ones
        if dtype is None or hasattr(dtype, "_np_dtype"):
            return dtype
        return getattr(self.xp, np.dtype(dtype).name)

    def arange(self, n, like):
        return self.xp.arange(n, device=like.device)

    def asarray(self, value, dtype, like):
        return self.xp.asarray(value, dtype=self._dtype(dtype), device=like.device)

    def scatter_add(self, target, key, values):
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

    def uniform(self, shape, dtype, like, seed):
        host = np.random.default_rng(seed).random(shape, dtype=np.float32)
        return self.xp.asarray(host, dtype=self._dtype(dtype), device=like.device)

    def to_numpy(self, data):
        cpu = self.xp.__array_namespace_info__().default_device()
        return np.asarray(data.to_device(cpu))

    def from_numpy(self, array, index):
        return self.xp.asarray(array, device=self.xp.Device(index))

    def copy(self, data):
        return self.xp.asarray(data, copy=True)

    def masked(self, values, keep):
        return self.xp.where(keep, values, 0)  # the array API does not multiply floats by booleans

    def astype(self, data, dtype):
        target = self._dtype(dtype)
        return data if data.dtype == target else self.xp.astype(data, target)

    def is_float(self, data):
        return self.xp.isdtype(data.dtype, "real floating")


def _strict_device_name(device) -> str:
    # Device('device1') -> 'device1'; the class keeps the name in a private slot.
    text = repr(device)
    return text[text.index("(") + 2 : -2]


NUMPY = NumpyBackend()
_BY_TYPE: dict[type, Backend] = {np.ndarray: NUMPY}


class _LazyBackends(TypedDict, total=False):
    """The backends built on first use (a plain dict at run time, typed per key)."""

    cupy: CupyBackend
    strict: StrictBackend


_lazy: _LazyBackends = {}


def backend_of(data) -> Backend:
    """The backend for an array (numpy, cupy or array_api_strict)."""
    backend = _BY_TYPE.get(type(data))
    if backend is None:
        backend = _resolve(type(data))
    return backend


def _resolve(array_type) -> Backend:
    module = array_type.__module__.split(".")[0]
    backend: Backend
    if module == "cupy":
        backend = _cupy_backend()
    elif module == "array_api_strict":
        backend = _strict_backend()
    else:
        raise TypeError(
            f"tinytensor arrays must be numpy or cupy arrays, got {array_type.__module__}.{array_type.__name__}"
        )
    _BY_TYPE[array_type] = backend
    return backend


def _cupy_backend() -> CupyBackend:
    """The CuPy backend, with the extension where the one probe found it usable."""
    if "cupy" not in _lazy:
        import cupy

        from . import cuda_extension
        from .cuda_status import cuda_status

        status = cuda_status()
        ext = cuda_extension if status.extension_loaded else None
        _lazy["cupy"] = CupyBackend(cupy, ext, status.fused_devices)
    return _lazy["cupy"]


def _strict_backend() -> StrictBackend:
    if "strict" not in _lazy:
        try:
            import array_api_strict
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise DeviceError(
                "the 'strict:' test devices need the array_api_strict package: pip install array-api-strict"
            ) from exc
        _lazy["strict"] = StrictBackend(array_api_strict)
    return _lazy["strict"]


def parse_device(spec) -> tuple[str, object]:
    """Split a device string into (kind, index-or-name), or raise DeviceError naming it."""
    if not isinstance(spec, str):
        raise DeviceError(f"a device must be a string such as 'cpu' or 'cuda:0', got {spec!r}")
    kind, _, rest = spec.partition(":")
    if kind == "cpu" and not rest:
        return "cpu", None
    if kind in _CUDA_KINDS:
        if not rest:
            return "cuda", None
        if rest.isdigit():
            return "cuda", int(rest)
    if kind == "strict" and rest:
        return "strict", rest
    raise DeviceError(
        f"unknown device {spec!r}: expected 'cpu', 'cuda', 'cuda:N' (N a device number) "
        "or 'strict:NAME' (array_api_strict's test devices)"
    )


def same_device(kind_index, data) -> bool:
    kind, index = kind_index
    backend = backend_of(data)
    if backend.kind != kind:
        return False
    if kind == "cuda":
        return index is None or data.device.id == index
    if kind == "strict":
        return backend.device(data) == "strict:" + index
    return True


def backend_for(kind_index) -> Backend:
    """The backend that holds arrays of a parsed device; CUDA is checked for usability first."""
    kind, index = kind_index
    if kind == "cuda":
        from .cuda_status import cuda_status, require_cuda

        require_cuda()
        count = cuda_status().device_count
        if index is not None and index >= count:
            visible = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
            raise DeviceError(
                f"device 'cuda:{index}' does not exist: {count} CUDA device{'s' if count != 1 else ''} "
                f"visible ({visible}; CUDA_VISIBLE_DEVICES decides which)"
            )
        return _cupy_backend()
    if kind == "strict":
        return _strict_backend()
    return NUMPY


def device_of(data) -> tuple[str, object]:
    """The parsed device (kind, index) that holds ``data``, as ``transfer`` takes it."""
    return parse_device(backend_of(data).device(data))


def transfer(data, kind_index):
    """Copy ``data`` to the parsed device; returns ``data`` itself when it is already there."""
    if same_device(kind_index, data):
        return data
    kind, index = kind_index
    target = backend_for(kind_index)
    source = backend_of(data)
    if source is target and kind == "cuda":
        with target.xp.cuda.Device(index):
            return target.xp.asarray(data)  # peer copy between GPUs
    return target.from_numpy(source.to_numpy(data), index)
