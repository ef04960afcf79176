"""The Tensor: an array (numpy or CuPy) plus what autograd needs.

Op methods (``__add__``, ``exp``, ``sum``, ...) are defined as functions in ``tinytensor.ops`` and
installed on the class by ``ops.install``; this file holds the state, conversions and ``backward``.
"""

from __future__ import annotations

import numpy as np

from . import autograd
from .backend import DEFAULT_FLOAT, backend_of, parse_device, transfer
from .errors import DeviceError, ShapeError

_new = object.__new__
_ndarray = np.ndarray
_generic = np.generic

_DTYPE_NAMES = {
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "int32": np.int32,
    "int64": np.int64,
    "bool": np.bool_,
}


def wrap(data, ctx=None) -> Tensor:
    """Fast internal constructor. ``ctx`` is ``(backward, parents)`` for a graph node, else None."""
    if type(data) is not _ndarray and isinstance(data, _generic):
        data = np.asarray(data)  # numpy returns scalars from 0-d ops; .data stays an ndarray
    t = _new(Tensor)
    t.data = data
    t.grad = None
    t._retain_grad = False
    t._ctx = ctx
    t.requires_grad = ctx is not None
    return t


def as_array(value, dtype=None):
    """What ``Tensor(value)`` stores: arrays keep their dtype, Python numbers and lists become float32."""
    if isinstance(value, Tensor):
        data = value.data
    elif isinstance(value, (_ndarray, _generic)):
        data = np.array(value)  # a copy, as torch.tensor makes: later in-place updates stay ours
    elif hasattr(value, "__cuda_array_interface__") or type(value).__module__.startswith(("cupy", "array_api_strict")):
        data = backend_of(value).copy(value)
    else:
        data = np.asarray(value, dtype=dtype if dtype is not None else DEFAULT_FLOAT)
        return data
    if dtype is not None:
        data = backend_of(data).astype(data, dtype)
    return data


def _resolve_dtype(dtype):
    """A numpy dtype from a name, a numpy type or dtype, or an array_api_strict dtype."""
    if dtype is None:
        return None
    if hasattr(dtype, "_np_dtype"):
        return dtype._np_dtype
    if isinstance(dtype, str):
        if dtype not in _DTYPE_NAMES:
            raise TypeError(f"unknown dtype {dtype!r}: expected one of {sorted(_DTYPE_NAMES)}")
        return np.dtype(_DTYPE_NAMES[dtype])
    return dtype if not isinstance(dtype, type) else np.dtype(dtype)


class Tensor:
    """An n-dimensional array on one device, with optional gradient tracking.

    ``Tensor(data, dtype=None, requires_grad=False, device=None)`` copies ``data``. Python numbers
    and lists become float32; numpy and CuPy arrays keep their dtype.
    """

    __slots__ = ("data", "grad", "requires_grad", "_ctx", "_retain_grad", "__weakref__")
    __array_ufunc__ = None  # numpy defers to our reflected operators: ndarray + Tensor -> Tensor
    __hash__ = object.__hash__  # __eq__ is elementwise; identity hashing keeps dict/set use working

    def __init__(self, data, dtype=None, requires_grad=False, device=None):
        dtype = _resolve_dtype(dtype)
        array = as_array(data, dtype)
        if device is not None:
            array = transfer(array, parse_device(device))
        self.data = array
        self.grad = None
        self._ctx = None
        self._retain_grad = False
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> tuple:
        return tuple(self.data.shape)

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def size(self) -> int:
        n = 1
        for s in self.data.shape:
            n *= s
        return n

    def numel(self) -> int:
        return self.size

    @property
    def device(self) -> str:
        return backend_of(self.data).device(self.data)

    @property
    def is_leaf(self) -> bool:
        return self._ctx is None

    @property
    def is_cuda(self) -> bool:
        return backend_of(self.data).kind == "cuda"

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", prefix="Tensor(")
        extra = []
        device = self.device
        if device != "cpu":
            extra.append(f"device={device!r}")
        if self.dtype != DEFAULT_FLOAT:
            extra.append(f"dtype={self.dtype}")
        if self.requires_grad:
            extra.append("requires_grad=True")
        return "Tensor(" + body + "".join(", " + e for e in extra) + ")"

    # ------------------------------------------------------------------ autograd
    def requires_grad_(self, flag: bool = True) -> Tensor:
        if flag and not backend_of(self.data).is_float(self.data):
            raise TypeError(f"only floating-point tensors can require gradients, got dtype {self.dtype}")
        if not flag and self._ctx is not None:
            raise RuntimeError("requires_grad cannot be turned off on a non-leaf tensor; use .detach()")
        self.requires_grad = bool(flag)
        return self

    def retain_grad(self) -> Tensor:
        """Keep ``.grad`` on this non-leaf tensor after backward (leaves always keep theirs)."""
        self._retain_grad = True
        return self

    def backward(self, grad=None, retain_graph: bool = False) -> None:
        """Compute gradients of this tensor with respect to every leaf that requires grad."""
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad (no graph was recorded)")
        backend = backend_of(self.data)
        if grad is None:
            if self.size != 1:
                raise RuntimeError(
                    f"backward() on a tensor of shape {self.shape} needs a grad argument of that shape: "
                    "only a one-element output can create its own gradient"
                )
            seed = backend.full(self.data.shape, 1, self.data.dtype, self.data)
        else:
            seed = grad.data if isinstance(grad, Tensor) else grad
            if not hasattr(seed, "shape"):
                seed = backend.asarray(seed, self.data.dtype, self.data)
            if backend_of(seed) is not backend or backend.device(seed) != backend.device(self.data):
                raise DeviceError(
                    f"backward(): grad is on {backend_of(seed).device(seed)}, the tensor on {self.device}"
                )
            if tuple(seed.shape) != self.shape:
                raise ShapeError(f"backward(): grad has shape {tuple(seed.shape)}, the tensor has shape {self.shape}")
        autograd.run_backward(self, seed, retain_graph)

    def detach(self) -> Tensor:
        """The same data, cut from the graph."""
        return wrap(self.data)

    # ------------------------------------------------------------------ conversions
    def to(self, *args, dtype=None, device=None) -> Tensor:
        """``.to("cuda")``, ``.to("float64")``, ``.to(np.float64)`` or ``.to(device, dtype)``.

        Differentiable: gradients flow back to the source device and dtype.
        """
        for arg in args:
            if isinstance(arg, str) and arg not in _DTYPE_NAMES:
                device = arg
            else:
                dtype = arg
        dtype = _resolve_dtype(dtype)
        data = self.data
        out = data
        if device is not None:
            out = transfer(out, parse_device(device))
        if dtype is not None:
            out = backend_of(out).astype(out, dtype)
        if out is data:
            return self
        if self.requires_grad and autograd.GRAD_ENABLED[0]:
            src_device = (backend_of(data).kind, _device_index(data))
            src_dtype = data.dtype

            def backward(g):
                g = transfer(g, src_device)
                return (backend_of(g).astype(g, src_dtype),)

            return wrap(out, (backward, (self,)))
        return wrap(out)

    def cuda(self, index=None) -> Tensor:
        return self.to("cuda" if index is None else f"cuda:{index}")

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def float(self) -> Tensor:
        return self.to(np.float32)

    def double(self) -> Tensor:
        return self.to(np.float64)

    def numpy(self) -> np.ndarray:
        """A numpy array of the values; copies back from a GPU (or fake) device."""
        return backend_of(self.data).to_numpy(self.data)

    def tolist(self):
        return self.numpy().tolist()

    def item(self):
        if self.size != 1:
            raise ValueError(f"item() needs a one-element tensor, got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous; use .any() or .all()")
        return bool(self.item())

    def __array__(self, dtype=None, copy=None):
        if backend_of(self.data).kind != "cpu":
            raise TypeError(f"a tensor on {self.device} cannot become a numpy array implicitly; use .numpy()")
        return np.asarray(self.data, dtype=dtype)

    # DLPack: zero-copy exchange with torch, CuPy, JAX, numpy.
    def __dlpack__(self, *args, **kwargs):
        return self.data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.data.__dlpack_device__()


def _device_index(data):
    backend = backend_of(data)
    if backend.kind == "cuda":
        return data.device.id
    if backend.kind == "strict":
        return backend.device(data).split(":", 1)[1]
    return None
