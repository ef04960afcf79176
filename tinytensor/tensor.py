"""The Tensor: an array (numpy or CuPy) plus what autograd needs.

Op methods (``__add__``, ``exp``, ``sum``, ...) are functions in ``tinytensor.ops``, which
``ops/surface.py`` installs on the class; this file holds the state, conversions and ``backward``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from . import autograd, device_names, dtypes
from .autograd import mark_modified, share_version
from .devices import backend_of, parse_device, transfer
from .errors import DeviceError, ShapeError

if TYPE_CHECKING:  # the op methods' signatures, generated from ops/surface.py (which installs them)
    from ._surface import TensorOps
else:
    TensorOps = object

_new = object.__new__
_ndarray = np.ndarray
_generic = np.generic
_CLOCK = autograd.CLOCK

__all__ = [
    "Tensor",
    "wrap",
    "grad_array",
    "clear_grad",
    "is_array",
    "tensor_arg",
    "accepts_arrays",
    "mark_modified",
    "share_version",
]


def wrap(data, ctx=None) -> Tensor:
    """Fast internal constructor. ``ctx`` is ``(backward, parents)`` for a graph node, else None."""
    if type(data) is not _ndarray and isinstance(data, _generic):
        data = np.asarray(data)  # numpy returns scalars from 0-d ops; _data stays an ndarray
    t = _new(Tensor)
    t._data = data
    t._ctx = ctx
    t.requires_grad = ctx is not None
    if ctx is not None:
        t._stamp = _CLOCK[0]
    return t


def grad_array(t):
    """``t``'s gradient array, or None, without making the ``.grad`` Tensor (optimizers' fast path)."""
    grad = getattr(t, "_grad", None)
    return grad._data if isinstance(grad, Tensor) else grad


def clear_grad(t, set_to_none: bool = True) -> None:
    """``zero_grad`` for one tensor: drop the gradient, or set it to zeros in place (zeros, not
    grad * 0: a NaN or infinity must not survive)."""
    if set_to_none:
        t._grad = None
        return
    grad = t.grad
    if grad is not None:
        data = grad._data
        grad._data = backend_of(data).zeros(data.shape, data.dtype, data)
        mark_modified(grad)


def is_array(value) -> bool:
    """A numpy, CuPy or array_api_strict array (not a Tensor, not a numpy scalar). Judged by type
    and module, so neither CuPy nor array_api_strict is imported here."""
    if isinstance(value, _ndarray):
        return True
    return hasattr(value, "shape") and (
        hasattr(value, "__cuda_array_interface__")
        or type(value).__module__.split(".")[0] in ("cupy", "array_api_strict")
    )


def as_array(value, dtype=None, fn: str = "tensor()"):
    """What ``Tensor(value)`` stores: always a new array.

    Python data follows PyTorch (bool, int64, float32); arrays and tensors keep their dtype.
    ``dtype`` casts, refusing NaN, infinity and out-of-range values for integer dtypes.
    """
    if isinstance(value, Tensor):
        data = backend_of(value._data).copy(value._data)
    elif isinstance(value, (_ndarray, _generic)):
        dtypes.check_array_dtype(value.dtype, fn)
        data = np.array(value)  # a copy, as torch.tensor makes: later in-place updates stay ours
    elif is_array(value):
        dtypes.check_array_dtype(value.dtype, fn)
        data = backend_of(value).copy(value)
    else:
        data = dtypes.from_python(value, fn)
    if dtype is not None:
        data = dtypes.checked_cast(data, dtype, backend_of(data), fn)
    return data


def tensor_arg(value, fn: str, name: str = "input") -> Tensor:
    """``value`` as a Tensor for a function that needs one: arrays are wrapped (no copy), Python
    numbers and lists converted; anything else is a TypeError naming the function and argument."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, _generic) or is_array(value):
        dtypes.check_array_dtype(value.dtype, f"{fn}()")
        return wrap(np.asarray(value) if isinstance(value, _generic) else value)
    if isinstance(value, (bool, int, float, list, tuple)):
        return Tensor(value)
    raise TypeError(f"{fn}(): argument '{name}' must be a Tensor, got {type(value).__name__}")


def accepts_arrays(fn):
    """The module-level form of an op (``tt.exp(x)``): its first argument may also be an array or
    Python data, converted by ``tensor_arg``. Methods (``x.exp()``) skip this: ``self`` is a Tensor."""
    name = fn.__name__

    @functools.wraps(fn)
    def op(input, *args, **kwargs):  # noqa: A002 - PyTorch's argument name
        if type(input) is not Tensor:
            input = tensor_arg(input, name)  # noqa: A001
        return fn(input, *args, **kwargs)

    return op


class Tensor(TensorOps):
    """An n-dimensional array on one device, with optional gradient tracking.

    ``Tensor(data, dtype=None, requires_grad=False, device=None)`` copies ``data``. Python data
    follows PyTorch: bools become bool, ints int64, floats (or ints mixed with floats) float32;
    numpy and CuPy arrays keep their dtype.
    """

    # ``_grad`` stays unset until a gradient arrives (the ``grad`` property reads it as None): every
    # op makes a tensor, and one store less is measurable on small ones. Backward stores the
    # gradient array there; the ``grad`` property wraps it in a Tensor when first read, so an
    # optimizer that reads ``_grad`` directly never pays for the wrapper.
    __slots__ = ("_data", "_grad", "requires_grad", "_ctx", "_stamp", "_version", "__weakref__")
    _stamp: int  # set by wrap() on graph nodes (autograd's CLOCK when the node was made)
    _version: list[int]  # the storage's in-place change cell, shared with views (autograd.share_version)
    _grad: Any  # the gradient: the array backward stored, a Tensor once read or set, or None
    __array_ufunc__ = None  # numpy defers to our reflected operators: ndarray + Tensor -> Tensor
    __hash__ = object.__hash__  # __eq__ is elementwise; identity hashing keeps dict/set use working

    def __init__(self, data, dtype=None, requires_grad=False, device=None):
        dtype = dtypes.resolve(dtype, "Tensor()")
        array = as_array(data, dtype, "Tensor()")
        if device is not None:
            array = transfer(array, parse_device(device))
        self._data = array
        self._ctx = None
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    # ------------------------------------------------------------------ properties
    @property
    def data(self) -> Tensor:
        """This tensor's values as a new Tensor, cut from the graph and sharing the storage (as
        PyTorch's ``.data``): ``w.data.add_(...)`` changes ``w``. Unlike PyTorch's, a change made
        through it still counts as an in-place change of ``w`` (a graph that saved ``w`` refuses
        to backpropagate through stale values instead of returning wrong gradients)."""
        out = wrap(self._data)
        share_version(self, out)
        return out

    @data.setter
    def data(self, value) -> None:
        """``w.data = other``: ``w`` takes ``other``'s storage (a Tensor or an array), keeping its
        identity, graph role and ``requires_grad``."""
        if isinstance(value, Tensor):
            value = value._data
        elif not is_array(value):
            raise TypeError(f"data must be set to a Tensor, got {type(value).__name__}")
        self._data = value
        mark_modified(self)

    @property
    def grad(self) -> Tensor | None:
        """The gradient after backward (a Tensor of this tensor's shape on its device), or None."""
        try:
            grad = self._grad
        except AttributeError:
            return None
        if grad is not None and not isinstance(grad, Tensor):  # autograd stores the array; wrap it once
            grad = self._grad = wrap(grad)
        return grad

    @grad.setter
    def grad(self, value) -> None:
        if value is None or isinstance(value, Tensor):
            self._grad = value
        elif is_array(value) or isinstance(value, _generic):
            self._grad = wrap(value)  # the array itself, not a copy, as autograd stores it
        else:
            raise TypeError(f"assigned grad expected to be a Tensor or None, got {type(value).__name__}")

    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self):
        return self._data.dtype

    def size(self, dim=None):
        """The shape (PyTorch's ``size()``), or the length of axis ``dim``."""
        shape = tuple(self._data.shape)
        if dim is None:
            return shape
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
            raise TypeError(f"size(): dim must be an int, got {type(dim).__name__}")
        if not -len(shape) <= dim < len(shape):
            raise IndexError(f"size(): dim {dim} is out of range for a tensor with {len(shape)} axes")
        return shape[dim]

    def numel(self) -> int:
        n = 1
        for s in self._data.shape:
            n *= s
        return n

    @property
    def device(self) -> device_names.device:
        """Where the data lives, as ``tt.device`` (a ``str`` too: ``x.device == "cpu"`` holds)."""
        return device_names.as_device(backend_of(self._data).device(self._data))

    @property
    def is_leaf(self) -> bool:
        return self._ctx is None

    @property
    def grad_fn(self) -> autograd.Node | None:
        """The graph step that made this tensor (``name()``, ``next_functions``), or None for a
        leaf; made on request, so compare nodes with ``==`` (PyTorch hands out the same object)."""
        return autograd.grad_fn(self)

    @property
    def is_cuda(self) -> bool:
        return backend_of(self._data).kind == "cuda"

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", prefix="Tensor(")
        extra = []
        device = self.device
        if device != "cpu":
            extra.append(f"device={str(device)!r}")
        if dtypes.numpy_dtype(self.dtype) not in (dtypes.DEFAULT_FLOAT, np.dtype(np.int64), np.dtype(np.bool_)):
            extra.append(f"dtype={self.dtype}")
        if self.requires_grad:
            extra.append("requires_grad=True")
        return "Tensor(" + body + "".join(", " + e for e in extra) + ")"

    def __format__(self, spec: str) -> str:
        # f"{loss:.4f}": a one-element tensor formats as its number, as in PyTorch
        if self.numel() == 1:
            return format(self.item(), spec)
        if spec:
            raise TypeError(
                f"unsupported format string {spec!r} for a tensor of shape {self.shape}: only one-element "
                "tensors format as numbers"
            )
        return repr(self)

    # ------------------------------------------------------------------ autograd
    def requires_grad_(self, flag: bool = True) -> Tensor:
        if flag and not backend_of(self._data).is_float(self._data):
            raise TypeError(f"only floating-point tensors can require gradients, got dtype {self.dtype}")
        if not flag and self._ctx is not None:
            raise RuntimeError("requires_grad cannot be turned off on a non-leaf tensor; use .detach()")
        self.requires_grad = bool(flag)
        return self

    def retain_grad(self) -> Tensor:
        """Keep ``.grad`` on this non-leaf tensor after backward (leaves always keep theirs)."""
        autograd.retain(self)
        return self

    @property
    def retains_grad(self) -> bool:
        return autograd.is_retained(self)

    def backward(self, grad=None, retain_graph: bool = False) -> None:
        """Compute gradients of this tensor with respect to every leaf that requires grad."""
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad (no graph was recorded)")
        backend = backend_of(self._data)
        if grad is None:
            if self.numel() != 1:
                raise RuntimeError(
                    f"backward() on a tensor of shape {self.shape} needs a grad argument of that shape: "
                    "only a one-element output can create its own gradient"
                )
            data = self._data
            seed = (
                backend.asarray(1, data.dtype, data)
                if data.ndim == 0
                else backend.full(data.shape, 1, data.dtype, data)
            )
        else:
            seed = grad._data if isinstance(grad, Tensor) else grad
            if not hasattr(seed, "shape"):
                seed = backend.asarray(dtypes.from_python(seed, "backward()"), self._data.dtype, self._data)
            if backend_of(seed) is not backend or backend.device(seed) != backend.device(self._data):
                raise DeviceError(
                    f"backward(): grad is on {backend_of(seed).device(seed)}, the tensor on {self.device}"
                )
            if tuple(seed.shape) != self.shape:
                raise ShapeError(f"backward(): grad has shape {tuple(seed.shape)}, the tensor has shape {self.shape}")
            if not dtypes.is_float(seed.dtype):
                raise TypeError(f"backward(): grad must be floating point, got dtype {seed.dtype}")
            # Our own copy: gradients that pass through unchanged (add, reshape) would otherwise
            # make a leaf's .grad the caller's buffer.
            seed = backend.copy(seed)
        autograd.run_backward(self, seed, retain_graph)

    def detach(self) -> Tensor:
        """The same data (and storage), cut from the graph."""
        out = wrap(self._data)
        share_version(self, out)
        return out

    def clone(self) -> Tensor:
        """A copy of the data that stays in the graph (its gradient flows back to this tensor)."""
        out = backend_of(self._data).copy(self._data)
        if self.requires_grad and autograd.GRAD_ENABLED[0]:
            return wrap(out, (_identity_backward, (self,)))
        return wrap(out)

    # ------------------------------------------------------------------ conversions
    def to(self, *args, dtype=None, device=None) -> Tensor:
        """``.to("cuda")``, ``.to("float64")``, ``.to(np.float64)``, ``.to(device, dtype)`` or ``.to(other)``.

        Differentiable between floating dtypes: gradients flow back to the source device and
        dtype. A cast to an integer or bool dtype ends the graph (and refuses NaN, infinity and
        out-of-range values).
        """
        for arg in args:
            if isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            elif isinstance(arg, str) and arg not in dtypes.NAMES:
                device = arg
            else:
                dtype = arg
        dtype = dtypes.resolve(dtype, "to()")
        data = self._data
        out = data
        if device is not None:
            out = transfer(out, parse_device(device))
        if dtype is not None:
            out = dtypes.checked_cast(out, dtype, backend_of(out), "to()")
        if out is data:
            return self
        if self.requires_grad and autograd.GRAD_ENABLED[0] and dtypes.is_float(out.dtype):
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

    def half(self) -> Tensor:
        return self.to(np.float16)

    def long(self) -> Tensor:
        return self.to(np.int64)

    def int(self) -> Tensor:
        return self.to(np.int32)

    def bool(self) -> Tensor:
        return self.to(np.bool_)

    def numpy(self) -> np.ndarray:
        """A numpy array of the values; copies back from a GPU (or fake) device."""
        return backend_of(self._data).to_numpy(self._data)

    def tolist(self):
        return self.numpy().tolist()

    def item(self):
        if self.numel() != 1:
            raise ValueError(f"item() needs a one-element tensor, got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if dtypes.numpy_dtype(self.dtype).kind not in "iu" or self.numel() != 1:
            raise TypeError(f"only one-element integer tensors can be used as an index, got {self.dtype} {self.shape}")
        return int(self.item())

    def __bool__(self):
        if self.numel() != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous; use .any() or .all()")
        return bool(self.item())

    def __array__(self, dtype=None, copy=None):
        if backend_of(self._data).kind != "cpu":
            raise TypeError(f"a tensor on {self.device} cannot become a numpy array implicitly; use .numpy()")
        return np.asarray(self._data, dtype=dtype)

    # DLPack: zero-copy exchange with torch, CuPy, JAX, numpy.
    def __dlpack__(self, *args, **kwargs):
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()


def _identity_backward(g):
    return (g,)


autograd.saves_nothing(_identity_backward)


def _device_index(data):
    backend = backend_of(data)
    if backend.kind == "cuda":
        return data.device.id
    if backend.kind == "strict":
        return backend.device(data).split(":", 1)[1]
    return None
