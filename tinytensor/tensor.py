"""The Tensor: an array (numpy or CuPy) plus what autograd needs.

Op methods (``__add__``, ``exp``, ``sum``, ...) are functions in ``tinytensor.ops``, which
``ops/surface.py`` installs on the class; this file holds the state, conversions and ``backward``.
"""

from __future__ import annotations

import builtins
import functools
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Self, TypeGuard, TypeVar, overload

import numpy as np
import numpy.typing as npt

from . import autograd, device_names, dtypes
from .array_types import Array, DType
from .autograd import Ctx, mark_modified, share_version
from .device_names import parse_device
from .devices import backend_of, transfer
from .errors import DeviceError, ShapeError

if TYPE_CHECKING:  # the op methods' signatures, generated from ops/surface.py (which installs them)
    from ._surface import TensorOps
else:
    TensorOps = object

_new = object.__new__
_ndarray = np.ndarray
_generic = np.generic
_CLOCK = autograd.CLOCK
_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = [
    "Tensor",
    "wrap",
    "grad_array",
    "clear_grad",
    "is_array",
    "plain_array",
    "tensor_arg",
    "accepts_arrays",
    "mark_modified",
    "share_version",
]


def wrap(data: Array, ctx: Ctx | None = None) -> Tensor:
    """Fast internal constructor. ``ctx`` is ``(backward, parents)`` for a graph node, else None."""
    if type(data) is not _ndarray and isinstance(data, (_generic, _ndarray)):
        # numpy returns scalars from 0-d ops, and a user may hand in a subclass (np.memmap, ...):
        # _data is always a plain ndarray (a view of the subclass's memory)
        data = np.asarray(data)
    t = _new(Tensor)
    t._data = data
    t._ctx = ctx
    t.requires_grad = ctx is not None
    if ctx is not None:
        t._stamp = _CLOCK[0]
    return t


def grad_array(t: Tensor) -> Array | None:
    """``t``'s gradient array, or None, without making the ``.grad`` Tensor (optimizers' fast path)."""
    grad = getattr(t, "_grad", None)
    return grad._data if isinstance(grad, Tensor) else grad


def clear_grad(t: Tensor, set_to_none: bool = True) -> None:
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


def is_array(value: object) -> TypeGuard[Array]:
    """A numpy, CuPy or array_api_strict array (not a Tensor, not a numpy scalar). Judged by type
    and module, so neither CuPy nor array_api_strict is imported here."""
    if isinstance(value, _ndarray):
        return True
    return hasattr(value, "shape") and (
        hasattr(value, "__cuda_array_interface__")
        or type(value).__module__.split(".")[0] in ("cupy", "array_api_strict")
    )


def plain_array(value: Array) -> Array:
    """An array as tinytensor holds it: a numpy subclass (``np.memmap``, ``np.recarray``, a
    user's) as a plain ndarray viewing the same memory, as PyTorch takes them; others as they are."""
    return np.asarray(value) if type(value) is not _ndarray and isinstance(value, _ndarray) else value


def as_array(value: object, dtype: np.dtype | None = None, fn: str = "tensor()") -> Array:
    """What ``Tensor(value)`` stores: always a new array.

    Python data follows PyTorch (bool, int64, float32); arrays and tensors keep their dtype.
    ``dtype`` casts, refusing NaN, infinity and out-of-range values for integer dtypes.
    """
    data: Array
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


def tensor_arg(value: object, fn: str, name: str = "input") -> Tensor:
    """``value`` as a Tensor for a function that needs one: arrays are wrapped (no copy), Python
    numbers and lists converted; anything else is a TypeError naming the function and argument."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, _generic) or is_array(value):
        dtypes.check_array_dtype(value.dtype, f"{fn}()")
        return wrap(np.asarray(value) if isinstance(value, _generic) else value)
    if isinstance(value, (bool, int, float, list, tuple)):
        return wrap(as_array(value, None, f"{fn}()"))  # inferred, as tt.tensor does
    raise TypeError(f"{fn}(): argument '{name}' must be a Tensor, got {type(value).__name__}")


def accepts_arrays(fn: Callable[Concatenate[Tensor, _P], _R]) -> Callable[..., _R]:
    """The module-level form of an op (``tt.exp(x)``): its first argument may also be an array or
    Python data, converted by ``tensor_arg``. Methods (``x.exp()``) skip this: ``self`` is a Tensor.
    (``input`` may also be passed by keyword, which no ``Concatenate`` type can say; the generated
    stubs give each function's signature.)"""
    name = fn.__name__

    @functools.wraps(fn)
    def op(input: object, *args: _P.args, **kwargs: _P.kwargs) -> _R:  # noqa: A002 - PyTorch's argument name
        tensor = input if type(input) is Tensor else tensor_arg(input, name)
        return fn(tensor, *args, **kwargs)

    return op


_WARNED_IMPLICIT_ONES = [False]


def _warn_implicit_ones(shape: tuple[builtins.int, ...]) -> None:
    """1.x's ``backward()`` on a tensor of several elements seeded it with ones; PyTorch raises."""
    if _WARNED_IMPLICIT_ONES[0]:
        return
    _WARNED_IMPLICIT_ONES[0] = True
    warnings.warn(
        f"backward() on a tensor of shape {shape} without a grad argument uses a gradient of ones, as "
        "tinytensor 1.x did; PyTorch raises here. Write .sum().backward(), or pass grad=, to run on both "
        "(this warning is shown once)",
        FutureWarning,
        stacklevel=3,
    )


class ElementCount(builtins.int):
    """What ``x.size`` is: the number of elements (an int), and called, PyTorch's ``size()``."""

    shape: tuple[builtins.int, ...]

    def __new__(cls, shape: tuple[builtins.int, ...]) -> ElementCount:
        count = 1
        for n in shape:
            count *= n
        self = super().__new__(cls, count)
        self.shape = tuple(shape)
        return self

    @overload
    def __call__(self, dim: None = None) -> tuple[builtins.int, ...]: ...
    @overload
    def __call__(self, dim: builtins.int) -> builtins.int: ...
    def __call__(self, dim: object = None) -> tuple[builtins.int, ...] | builtins.int:
        shape = self.shape
        if dim is None:
            return shape
        if not isinstance(dim, (builtins.int, np.integer)) or isinstance(dim, builtins.bool):
            raise TypeError(f"size(): dim must be an int, got {type(dim).__name__}")
        if not -len(shape) <= dim < len(shape):
            raise IndexError(f"size(): dim {dim} is out of range for a tensor with {len(shape)} axes")
        return shape[dim]


class Tensor(TensorOps):
    """An n-dimensional array on one device, with optional gradient tracking (PyTorch's ``torch.Tensor``).

    ``Tensor(data)`` copies ``data``: a Python number or nested list, a numpy or CuPy array, or
    another Tensor. As PyTorch's class constructor ``torch.Tensor(data)`` (and 1.x's ``Tensor``),
    it makes the default float dtype, ``float32``, from numbers, lists and arrays of any dtype; a
    Tensor keeps its dtype. ``tt.tensor(data)`` infers the dtype from the data instead (ints give
    ``int64``, bools ``bool``), as ``torch.tensor`` does; ``tt.zeros``, ``tt.randn`` and the other
    creation functions make tensors too.

    The values are one array of one library: numpy on the CPU, CuPy on a GPU (``x.to("cuda")``).
    Ops (``x + y``, ``x @ w``, ``x.exp()``, ``x.sum(dim=0)``, ``x[0]``, ...) return new tensors;
    where an input requires grad they also record the graph, and ``loss.backward()`` then sets the
    ``.grad`` of every leaf tensor that requires grad.

    Parameters
    ----------
    data : number, nested list, array or Tensor
        The values, copied.
    dtype : str, numpy dtype or type, optional
        The dtype to cast to instead of ``float32``: ``"float16"``, ``"float32"``, ``"float64"``,
        ``"int32"``, ``"int64"`` or ``"bool"`` (also as ``tt.float32``, ``np.float32``, ...). A
        cast to an integer dtype refuses NaN, infinity and out-of-range values instead of wrapping.
    requires_grad : bool, default False
        Record the ops on this tensor so that ``backward()`` computes its gradient; floating-point
        tensors only.
    device : str or tt.device, optional
        ``"cpu"`` (the default), ``"cuda"`` or ``"cuda:N"``.

    Raises
    ------
    TypeError
        Data that is not numbers or bools (complex numbers, strings, objects), an unsupported
        dtype, or ``requires_grad=True`` for a tensor that is not floating point.
    ValueError
        Ragged nested lists, an int that does not fit in int64, or a cast that would lose values.
    DeviceError
        An unknown device; ``CudaUnavailableError`` (a ``DeviceError``) when ``"cuda"`` cannot be
        used, with the reason and its fix.

    Notes
    -----
    Differences from PyTorch: ``Tensor(3)`` is the number 3.0 as a 0-d tensor, as in 1.x
    (``torch.Tensor(3)`` is an uninitialised tensor of 3 elements: use ``tt.zeros(3)``);
    ``x.dtype`` is the array library's dtype (numpy's
    ``dtype('float32')``), which equals its name, so ``x.dtype == tt.float32`` and
    ``x.dtype == "float32"`` both hold; ``x.device`` is a ``tt.device``, which is also a string
    (``x.device == "cpu"`` holds). Tensors support ``len()``, iteration over the first axis,
    ``float()``, ``int()``, ``bool()`` and formatting of one-element tensors (``f"{loss:.4f}"``),
    ``np.asarray(x)`` on the CPU, and DLPack (``torch.from_dlpack(x)``).

    Examples
    --------
    >>> import tinytensor as tt
    >>> x = tt.Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> loss = (x * x).sum()
    >>> loss.backward()
    >>> x.grad
    Tensor([[2., 4.],
            [6., 8.]])
    """

    # ``_grad`` stays unset until a gradient arrives (the ``grad`` property reads it as None): every
    # op makes a tensor, and one store less is measurable on small ones. Backward stores the
    # gradient array there; the ``grad`` property wraps it in a Tensor when first read, so an
    # optimizer that reads ``_grad`` directly never pays for the wrapper.
    __slots__ = ("_data", "_grad", "requires_grad", "_ctx", "_stamp", "_version", "__weakref__")
    _data: Array  # the values: a numpy, CuPy or array_api_strict array
    _ctx: Ctx | None  # the graph node that made this tensor (autograd's module docstring); None: a leaf
    requires_grad: builtins.bool  # whether ops on this tensor are recorded for backward()
    _stamp: builtins.int  # set by wrap() on graph nodes (autograd's CLOCK when the node was made)
    _version: list[builtins.int]  # the storage's in-place change cell, shared with views (autograd.share_version)
    _grad: Any  # the gradient: the array backward stored, a Tensor once read or set, or None
    __array_ufunc__ = None  # numpy defers to our reflected operators: ndarray + Tensor -> Tensor
    __hash__ = object.__hash__  # __eq__ is elementwise; identity hashing keeps dict/set use working

    def __init__(
        self,
        data: object,
        dtype: npt.DTypeLike | None = None,
        requires_grad: builtins.bool = False,
        device: str | None = None,
    ) -> None:
        resolved = dtypes.resolve(dtype, "Tensor()")
        if resolved is None and not isinstance(data, Tensor):
            resolved = dtypes.DEFAULT_FLOAT
        array = as_array(data, resolved, "Tensor()")
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
        to backpropagate through stale values instead of returning wrong gradients).

        Assigning, ``w.data = other``, gives ``w`` the storage of ``other`` (a Tensor or an array),
        keeping its identity, its place in the graph and ``requires_grad``."""
        out = wrap(self._data)
        share_version(self, out)
        return out

    @data.setter
    def data(self, value: object) -> None:
        if isinstance(value, Tensor):
            array = value._data
        elif is_array(value):
            array = plain_array(value)
        else:
            raise TypeError(f"data must be set to a Tensor, got {type(value).__name__}")
        self._data = array
        mark_modified(self)

    @property
    def grad(self) -> Tensor | None:
        """The gradient after ``backward()``: a Tensor of this tensor's shape, dtype and device, or
        None before any gradient arrived. Gradients add up over backward passes until reset
        (``optimizer.zero_grad()``, ``x.grad = None``); assigning a Tensor, an array or None sets it."""
        try:
            grad = self._grad
        except AttributeError:
            return None
        if grad is None or isinstance(grad, Tensor):
            return grad
        wrapped = self._grad = wrap(grad)  # autograd stores the array; wrap it once
        return wrapped

    @grad.setter
    def grad(self, value: object) -> None:
        if value is None or isinstance(value, Tensor):
            self._grad = value
        elif is_array(value) or isinstance(value, _generic):
            self._grad = wrap(value)  # the array itself, not a copy, as autograd stores it
        else:
            raise TypeError(f"assigned grad expected to be a Tensor or None, got {type(value).__name__}")

    @property
    def shape(self) -> tuple[builtins.int, ...]:
        """The length of each axis, as a tuple (PyTorch's ``torch.Size`` is a tuple too)."""
        return tuple(self._data.shape)

    @property
    def ndim(self) -> builtins.int:
        """The number of axes (0 for a scalar tensor)."""
        ndim: builtins.int = self._data.ndim
        return ndim

    def dim(self) -> builtins.int:
        """The number of axes, as ``ndim``."""
        ndim: builtins.int = self._data.ndim
        return ndim

    @property
    def dtype(self) -> DType:
        """The element type, as the array library's dtype (numpy's ``dtype('float32')`` on the CPU and
        with CuPy). It equals its name: ``x.dtype == tt.float32`` and ``x.dtype == "float32"`` hold."""
        return self._data.dtype

    @property
    def size(self) -> ElementCount:
        """PyTorch's ``size()``: ``x.size()`` is the shape, ``x.size(dim)`` the length of axis ``dim``
        (negative counts from the end). Read without a call, ``x.size`` is the number of elements,
        as numpy's ``size`` attribute (1.x's ``.data`` was a numpy array: its programs read
        ``x.data.size``).

        Raises
        ------
        TypeError
            ``dim`` is not an int.
        IndexError
            ``dim`` is out of range.
        """
        return ElementCount(self._data.shape)

    @property
    def flat(self) -> Iterator[Tensor]:
        """The elements in order, each a 0-d tensor, as numpy's ``flat`` iterates (a 0-d tensor
        gives its one element; 1.x programs, and pytest's ``approx``, read ``.flat`` from when
        ``.data`` was a numpy array)."""
        flat = self.reshape(-1)
        return (flat[i] for i in range(flat.shape[0]))

    def numel(self) -> builtins.int:
        """The number of elements: the product of the shape (1 for a scalar tensor)."""
        n = 1
        for s in self._data.shape:
            n *= s
        return n

    @property
    def device(self) -> device_names.device:
        """Where the data lives, as ``tt.device`` (a ``str`` too: ``x.device == "cpu"`` holds)."""
        return device_names.as_device(backend_of(self._data).device(self._data))

    @property
    def is_leaf(self) -> builtins.bool:
        """Whether no recorded op made this tensor (True for one you created, or a result made while
        recording was off or from inputs that do not require grad). ``backward()`` fills ``.grad``
        only on leaves (and on tensors that called ``retain_grad()``)."""
        return self._ctx is None

    @property
    def grad_fn(self) -> autograd.Node | None:
        """The graph step that made this tensor (``name()``, ``next_functions``), or None for a
        leaf; made on request, so compare nodes with ``==`` (PyTorch hands out the same object)."""
        return autograd.grad_fn(self)

    @property
    def is_cuda(self) -> builtins.bool:
        """Whether the data is on a GPU."""
        return backend_of(self._data).kind == "cuda"

    def __len__(self) -> builtins.int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        length: builtins.int = self._data.shape[0]
        return length

    def __iter__(self) -> Iterator[Tensor]:
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
    def requires_grad_(self, flag: builtins.bool = True) -> Self:
        """Turn gradient recording on (or off) for this tensor, in place; returns the tensor.

        Raises
        ------
        TypeError
            Turning it on for a tensor that is not floating point.
        RuntimeError
            Turning it off for a tensor that an op made (not a leaf): use ``detach()`` instead.
        """
        if flag and not backend_of(self._data).is_float(self._data):
            raise TypeError(f"only floating-point tensors can require gradients, got dtype {self.dtype}")
        if not flag and self._ctx is not None:
            raise RuntimeError("requires_grad cannot be turned off on a non-leaf tensor; use .detach()")
        self.requires_grad = builtins.bool(flag)
        return self

    @property
    def _backward(self) -> Callable[[], None]:
        """1.x's hook on this node's step of the backward pass. ``x._backward = f`` makes backward
        call ``f()`` in place of the step; ``f`` may call the step it replaced, read before as
        ``original = x._backward`` (1.x's own tests count calls this way)."""
        return functools.partial(autograd.run_step, self)

    @_backward.setter
    def _backward(self, fn: Callable[[], object]) -> None:
        autograd.override_step(self, fn)

    def retain_grad(self) -> Self:
        """Keep ``.grad`` on this non-leaf tensor after backward (leaves always keep theirs)."""
        autograd.retain(self)
        return self

    @property
    def retains_grad(self) -> builtins.bool:
        """Whether ``retain_grad()`` was called on this tensor (False for leaves, as in PyTorch)."""
        return autograd.is_retained(self)

    def backward(
        self, grad: Tensor | Array | builtins.float | None = None, retain_graph: builtins.bool = False
    ) -> None:
        """Compute the gradient of this tensor with respect to every leaf that requires grad, and
        add it to their ``.grad``.

        Parameters
        ----------
        grad : Tensor, array or number, optional
            d(something) / d(this tensor), of this tensor's shape, device and a floating dtype.
            By default 1 for a tensor of one element (a loss). For a tensor of several elements
            PyTorch needs ``grad``; tinytensor takes ones, as 1.x did (``x.sum().backward()``),
            and warns once (a FutureWarning) that PyTorch raises there.
        retain_graph : bool, default False
            Keep the graph so that another ``backward()`` can run through it; by default its
            saved values are freed and a second pass raises.

        This tensor keeps the gradient it started from in ``.grad`` (1.x did so; PyTorch keeps a
        non-leaf's only after ``retain_grad()``).

        Raises
        ------
        RuntimeError
            This tensor does not require grad; the graph was freed by an earlier backward; or a
            tensor the graph saved was changed in place since (``backward()`` names the op).
        ShapeError
            ``grad`` has another shape.
        DeviceError
            ``grad`` is on another device.
        TypeError
            ``grad`` is not floating point.
        """
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad (no graph was recorded)")
        backend = backend_of(self._data)
        if grad is None:
            if self.numel() != 1:
                _warn_implicit_ones(self.shape)
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

    def copy(self) -> Tensor:
        """``clone()``, under numpy's name (1.x programs call ``x.data.copy()``, from when ``.data``
        was a numpy array)."""
        return self.clone()

    # ------------------------------------------------------------------ conversions
    def to(
        self, *args: Tensor | str | npt.DTypeLike, dtype: npt.DTypeLike | None = None, device: str | None = None
    ) -> Tensor:
        """This tensor on another device and/or with another dtype: ``.to("cuda")``,
        ``.to("float64")``, ``.to(np.float64)``, ``.to(device, dtype)``, ``.to(other)`` (``other``'s
        device and dtype), or by keyword. Returns this tensor itself when nothing changes.

        Differentiable between floating dtypes: gradients flow back to the source device and
        dtype. A cast to an integer or bool dtype ends the graph (and refuses NaN, infinity and
        out-of-range values with a ValueError).
        """
        for arg in args:
            if isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            elif isinstance(arg, str) and arg not in dtypes.NAMES:
                device = arg
            else:
                dtype = arg
        resolved = dtypes.resolve(dtype, "to()")
        data = self._data
        out = data
        if device is not None:
            out = transfer(out, parse_device(device))
        if resolved is not None:
            out = dtypes.checked_cast(out, resolved, backend_of(out), "to()")
        if out is data:
            return self
        if self.requires_grad and autograd.GRAD_ENABLED[0] and dtypes.is_float(out.dtype):
            src_device = (backend_of(data).kind, _device_index(data))
            src_dtype = data.dtype

            def backward(g: Array) -> tuple[Array]:
                g = transfer(g, src_device)
                return (backend_of(g).astype(g, src_dtype),)

            return wrap(out, (backward, (self,)))
        return wrap(out)

    def cuda(self, index: builtins.int | None = None) -> Tensor:
        """This tensor on a GPU: ``"cuda"`` (the current one), or ``"cuda:index"``; see ``to()``."""
        return self.to("cuda" if index is None else f"cuda:{index}")

    def cpu(self) -> Tensor:
        """This tensor on the CPU (itself when it is there already); see ``to()``."""
        return self.to("cpu")

    def float(self) -> Tensor:
        """This tensor as float32; see ``to()``."""
        return self.to(np.float32)

    def double(self) -> Tensor:
        """This tensor as float64; see ``to()``."""
        return self.to(np.float64)

    def half(self) -> Tensor:
        """This tensor as float16; see ``to()``."""
        return self.to(np.float16)

    def long(self) -> Tensor:
        """This tensor as int64 (NaN, infinity and out-of-range values raise ValueError); see ``to()``."""
        return self.to(np.int64)

    def int(self) -> Tensor:
        """This tensor as int32 (NaN, infinity and out-of-range values raise ValueError); see ``to()``."""
        return self.to(np.int32)

    def bool(self) -> Tensor:
        """This tensor as bool (nonzero is True); see ``to()``."""
        return self.to(np.bool_)

    def numpy(self) -> np.ndarray:
        """A numpy array of the values; copies back from a GPU (or fake) device."""
        return backend_of(self._data).to_numpy(self._data)

    def tolist(self) -> Any:  # nested lists as deep as the tensor; a number for a 0-d one
        """The values as nested Python lists of Python numbers (a number for a 0-d tensor)."""
        return self.numpy().tolist()

    def item(self) -> builtins.int | builtins.float | builtins.bool:
        """The value of a one-element tensor (of any shape) as a Python number.

        Raises
        ------
        ValueError
            The tensor has more or fewer than one element.
        """
        if self.numel() != 1:
            raise ValueError(f"item() needs a one-element tensor, got shape {self.shape}")
        value: builtins.int | builtins.float | builtins.bool = self.numpy().reshape(()).item()
        return value

    def __float__(self) -> builtins.float:
        return builtins.float(self.item())

    def __int__(self) -> builtins.int:
        return builtins.int(self.item())

    def __index__(self) -> builtins.int:
        if dtypes.numpy_dtype(self.dtype).kind not in "iu" or self.numel() != 1:
            raise TypeError(f"only one-element integer tensors can be used as an index, got {self.dtype} {self.shape}")
        return builtins.int(self.item())

    def __bool__(self) -> builtins.bool:
        if self.numel() != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous; use .any() or .all()")
        return builtins.bool(self.item())

    def __array__(self, dtype: npt.DTypeLike | None = None, copy: builtins.bool | None = None) -> np.ndarray:
        if backend_of(self._data).kind != "cpu":
            raise TypeError(f"a tensor on {self.device} cannot become a numpy array implicitly; use .numpy()")
        return np.asarray(self._data, dtype=dtype)

    # DLPack: zero-copy exchange with torch, CuPy, JAX, numpy.
    def __dlpack__(self, *args: Any, **kwargs: Any) -> object:  # the protocol's arguments, passed on as they are
        capsule: object = self._data.__dlpack__(*args, **kwargs)
        return capsule

    def __dlpack_device__(self) -> tuple[builtins.int, builtins.int]:
        device: tuple[builtins.int, builtins.int] = self._data.__dlpack_device__()
        return device


def _identity_backward(g: Array) -> tuple[Array]:
    return (g,)


autograd.saves_nothing(_identity_backward)


def _device_index(data: Array) -> int | str | None:
    backend = backend_of(data)
    if backend.kind == "cuda":
        index: int = data.device.id
        return index
    if backend.kind == "strict":
        return backend.device(data).split(":", 1)[1]
    return None
