"""Module, the base class of layers: registration, traversal, modes, state dicts, device moves and
saving (``save``/``load``); ModuleList."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any, NamedTuple, Self, overload

import numpy as np

from .. import dtypes, serialization
from ..array_types import Array, DType
from ..device_names import parse_device
from ..devices import backend_of, device_of, transfer
from ..errors import ShapeError
from ..numpy_backend import NUMPY
from ..parameter import Parameter
from ..tensor import Tensor, as_array, clear_grad, grad_array, is_array, wrap
from . import legacy_state


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


class LoadResult(_IncompatibleKeys):
    """What ``load_state_dict(strict=False)`` left out, as PyTorch's ``_IncompatibleKeys``."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()


class Parameters(list[Tensor]):
    """What ``Module.parameters()`` returns: a list of the parameters that is also its own
    iterator. ``next()`` walks it once, as PyTorch's generator; ``len()``, indexing and ``for``
    loops see every parameter, as 1.x's list."""

    __slots__ = ("_position",)

    def __init__(self, items: Iterable[Tensor] = ()) -> None:
        super().__init__(items)
        self._position = 0

    def __next__(self) -> Tensor:
        if self._position >= len(self):
            raise StopIteration
        self._position += 1
        return self[self._position - 1]


class Module:
    """Base class of layers and models, as PyTorch's ``torch.nn.Module``.

    A subclass calls ``super().__init__()`` first, then assigns its parts as attributes: a
    ``Parameter`` (or, as pytinytensor 1.x modules did, a leaf Tensor that requires grad) becomes a
    parameter, a ``Module`` a child, and a non-empty list or tuple of Modules a ``ModuleList``
    child (so its layers are seen by ``parameters()``, ``state_dict()`` and ``to()``; PyTorch
    leaves a plain list unregistered). ``register_buffer`` adds state that is saved but not
    trained. The subclass defines ``forward``; calling the module calls it, and numpy or CuPy
    arrays passed to the call become Tensors without a copy.

    Attributes
    ----------
    training : bool
        True in training mode (the default), False after ``eval()``; read by Dropout and
        BatchNorm1d.

    Examples
    --------
    >>> import tinytensor as tt
    >>> class MLP(tt.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.hidden = tt.nn.Linear(4, 8)
    ...         self.out = tt.nn.Linear(8, 2)
    ...
    ...     def forward(self, x):
    ...         return self.out(self.hidden(x).relu())
    >>> model = MLP()
    >>> model(tt.randn(3, 4)).shape
    (3, 2)
    >>> list(model.state_dict())
    ['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
    """

    # Set by __init__ through object.__setattr__ (bypassing the registering __setattr__ below),
    # declared here for type checkers: annotations only, no class attributes.
    _parameters: OrderedDict[str, Tensor | None]  # Parameters, or 1.x-style leaf Tensors that require grad
    _buffers: OrderedDict[str, Tensor | None]
    _modules: OrderedDict[str, Module]
    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # ------------------------------------------------------------------ registration
    def __setattr__(self, name: str, value: object) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"assign {name!r} after calling super().__init__() in {type(self).__name__}.__init__")
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        if isinstance(value, Parameter) or (isinstance(value, Tensor) and value.requires_grad and value.is_leaf):
            # a plain leaf Tensor that requires grad counts as a parameter too: pytinytensor 1.x
            # modules declared their weights that way
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, Module) for v in value):
            # A plain list of layers would be invisible to .to(), parameters() and state_dict().
            value = ModuleList(value)
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        object.__delattr__(self, name)

    def register_buffer(self, name: str, value: object) -> None:
        """Register ``value`` as the buffer ``name``: state that ``to()`` moves and ``state_dict()``
        saves, but that is not a parameter (not trained), such as BatchNorm1d's running statistics.

        ``value`` is a Tensor, None (no buffer yet: nothing is saved under the name), or anything
        ``tt.tensor()`` accepts (an array, Python numbers), which is converted with its dtype
        inferred (an int count stays int64). It becomes the attribute ``name``.
        """
        value = (
            value if isinstance(value, Tensor) or value is None else wrap(as_array(value, None, "register_buffer()"))
        )
        object.__setattr__(self, name, value)
        self._buffers[name] = value

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (a Parameter, or None) under ``name``, as ``self.name = param`` does."""
        check_name(type(self).__name__, "parameter", name)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign {type(param).__name__} as parameter {name!r} (tinytensor.nn.Parameter or None expected)"
            )
        if param is None:
            for table in (self._buffers, self._modules):
                table.pop(name, None)
            self._parameters[name] = None
            object.__setattr__(self, name, None)
        else:
            setattr(self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register ``module`` (a Module, or None) as the child ``name``."""
        check_name(type(self).__name__, "module", name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if module is None:
            for table in (self._parameters, self._buffers):
                table.pop(name, None)
            object.__setattr__(self, name, None)
            self._modules.pop(name, None)
        else:
            setattr(self, name, module)

    register_module = add_module

    # ------------------------------------------------------------------ traversal
    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """``(name, module)`` for this module (named ``prefix``) and every module below it, depth
        first in registration order, each module once even when registered twice; names are
        dotted paths such as ``"encoder.0"``."""
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [(f"{name}.{k}" if name else k, m) for k, m in module._modules.items()]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        """This module and every module below it, in ``named_modules()`` order."""
        for _, module in self.named_modules():
            yield module

    def children(self) -> Iterator[Module]:
        """The direct children, in registration order (not their children)."""
        yield from self._modules.values()

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Tensor]]:
        """``(name, parameter)`` for each parameter, named as in ``state_dict()`` (``"0.weight"``);
        a parameter shared by two modules comes once, under its first name.

        Parameters
        ----------
        prefix : str
            Put before every name (with a dot).
        recurse : bool
            False: this module's own parameters only, not its children's.
        """
        seen: set[int] = set()
        modules: Iterable[tuple[str, Module]] = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mod_name, module in modules:
            for name, p in module._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{mod_name}.{name}" if mod_name else name), p

    def parameters(self, recurse: bool = True) -> Parameters:
        """Every parameter (each once), in ``named_parameters()`` order: what an optimizer takes,
        as in ``SGD(model.parameters(), lr=0.1)``. ``recurse=False``: this module's own only.

        The result is an iterator, as PyTorch's generator is (``next(model.parameters())``), and
        also a list, as 1.x's was (``len(model.parameters())``, ``model.parameters()[0]``)."""
        return Parameters(p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self) -> Iterator[tuple[str, Tensor]]:
        """``(name, buffer)`` for each buffer of this module and the modules below it (None
        buffers left out), named as in ``state_dict()``."""
        for mod_name, module in self.named_modules():
            for name, b in module._buffers.items():
                if b is not None:
                    yield (f"{mod_name}.{name}" if mod_name else name), b

    def apply(self, fn: Callable[[Module], object]) -> Self:
        """Call ``fn(module)`` on every child (recursively, children first), then on this module;
        returns this module (for weight initialization: ``model.apply(init_fn)``)."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode: bool = True) -> Self:
        """Set ``training`` to ``mode`` on this module and every module below it; returns this
        module. Training mode changes what Dropout and BatchNorm1d do."""
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Self:
        """Evaluation mode, ``train(False)``: Dropout passes its input through, BatchNorm1d uses
        its running statistics. Returns this module. Gradients are still recorded: wrap
        inference in ``tt.no_grad()`` for that."""
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient: ``.grad`` becomes None, or, with
        ``set_to_none=False``, zeros in place."""
        for p in self.parameters():
            clear_grad(p, set_to_none)

    # ------------------------------------------------------------------ device and dtype
    def _apply(self, fn: Callable[[Array], Array]) -> Self:
        """Replace every parameter's and buffer's array (and its gradient's) by ``fn(array)``, in place.

        The Parameter objects stay the same, so optimizers holding them keep working.
        """
        for module in self.modules():
            for p in module._parameters.values():
                if p is None:
                    continue
                p._data = fn(p._data)
                grad = grad_array(p)
                if grad is not None:
                    p.grad = fn(grad)
            for _name, b in module._buffers.items():
                if b is not None:
                    b._data = fn(b._data)
        return self

    def to(self, *args: Tensor | str | DType, dtype: DType | str | None = None, device: str | None = None) -> Self:
        """Move and/or cast every parameter and buffer (and gradient) in place; returns this module.

        The positional arguments are a device (``"cpu"``, ``"cuda"``, ``"cuda:1"``), a dtype
        (``tt.float64``, ``"float64"``, ``np.float32``) or a Tensor (its device and dtype), as in
        ``model.to("cuda")`` or ``model.to("cuda", tt.float64)``; ``dtype=`` and ``device=`` name
        them. Only floating-point state changes dtype (an integer buffer such as
        ``num_batches_tracked`` keeps its own). The Parameter objects stay the same, so an
        optimizer made before the move keeps working.

        Raises
        ------
        TypeError
            For a dtype that is not floating point, or a bare int as the device (PyTorch reads
            it as a CUDA index; here a device is a string such as ``"cuda:0"``).
        """
        for arg in args:
            if isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            elif isinstance(arg, str) and arg not in dtypes.NAMES:
                device = arg
            elif isinstance(arg, (int, float)):  # PyTorch reads an int as a CUDA index; say what to write
                raise TypeError(f"Module.to(): got {arg!r}; a device is a string such as 'cpu' or 'cuda:{arg}'")
            else:
                dtype = arg
        wanted = dtypes.resolve(dtype, "Module.to()")
        if wanted is not None and wanted.kind != "f":
            raise TypeError(f"Module.to(): only floating-point dtypes are accepted, got {wanted}")
        target = parse_device(device) if device is not None else None

        def convert(data: Array) -> Array:
            if target is not None:
                data = transfer(data, target)
            backend = backend_of(data)
            if wanted is not None and backend.is_float(data):
                data = backend.astype(data, wanted)
            return data

        return self._apply(convert)

    def cuda(self, index: int | None = None) -> Self:
        """``to("cuda")``, or ``to(f"cuda:{index}")``; returns this module."""
        return self.to("cuda" if index is None else f"cuda:{index}")

    def cpu(self) -> Self:
        """``to("cpu")``; returns this module."""
        return self.to("cpu")

    def float(self) -> Self:
        """Cast floating-point parameters and buffers to float32; returns this module."""
        return self.to(np.float32)

    def double(self) -> Self:
        """Cast floating-point parameters and buffers to float64; returns this module."""
        return self.to(np.float64)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> OrderedDict[str, Tensor]:
        """Name -> tensor for every parameter and buffer, in PyTorch's order and naming: each
        module's parameters, then its buffers, then its children's, as ``"0.weight"``.

        The tensors are detached and share their data with the module (as in PyTorch): save the
        dict (``tt.save`` or ``save()``) or copy it before training on if it must keep these
        values. A parameter shared by two modules is saved once, under its first name.
        """
        return OrderedDict((name, t.detach()) for name, t in self._named_state())

    def _named_state(self) -> Iterator[tuple[str, Tensor]]:
        """(name, tensor) of each state dict entry, in ``state_dict()`` order."""
        seen: set[int] = set()  # a parameter shared by two modules is saved once, under its first name
        for mod_name, module in self.named_modules():
            prefix = f"{mod_name}." if mod_name else ""
            for name, p in module._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield prefix + name, p
            for name, b in module._buffers.items():
                if b is not None:
                    yield prefix + name, b

    def load_state_dict(self, state: Mapping[str, Tensor | Array], strict: bool = True) -> LoadResult:
        """Copy values into this module's parameters and buffers, onto their current device and dtype.

        All or nothing: every entry is checked (names, shapes, types), converted and moved first, and
        the module changes only when all succeed. Values are cast to each tensor's dtype as
        PyTorch's ``copy_`` casts; a cast that would lose values (NaN into an integer) is refused.

        Parameters
        ----------
        state : Mapping[str, Tensor or array]
            Names as ``state_dict()`` gives them; values are Tensors, numpy or CuPy arrays, or
            numbers (copied: changing ``state`` afterwards leaves the module alone).
        strict : bool
            True: a missing or unexpected name is an error. False: they are returned.

        Returns
        -------
        LoadResult
            ``(missing_keys, unexpected_keys)``, in PyTorch's order.

        Raises
        ------
        KeyError
            With ``strict=True``, for missing or unexpected names.
        ShapeError
            For a value whose shape differs from the tensor's, even with ``strict=False`` (as in
            PyTorch).
        TypeError
            When ``state`` is not a mapping or a value is not a tensor, an array or numbers.
        """
        if not isinstance(state, Mapping):
            raise TypeError(
                f"load_state_dict(): state_dict must be a mapping of names to tensors, got {type(state).__name__}"
            )
        own = OrderedDict(self._named_state())
        missing = [k for k in own if k not in state]
        unexpected = self._unexpected_keys(state, own)
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        sources = {name: _state_value(name, state[name]) for name in own if name in state}
        mismatched = [
            f"size mismatch for {name}: copying a param with shape {tuple(source.shape)} from checkpoint, "
            f"the shape in current model is {own[name].shape}."
            for name, source in sources.items()
            if tuple(source.shape) != own[name].shape
        ]
        if mismatched:
            raise ShapeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(mismatched))
        placed = {name: _placed(name, source, own[name]._data) for name, source in sources.items()}
        for name, data in placed.items():  # nothing below can fail: the module changes all at once
            own[name]._data = data
        return LoadResult(missing, unexpected)

    def _unexpected_keys(self, state: Mapping[Any, object], own: Mapping[str, Tensor]) -> list[Any]:
        """The names in ``state`` that match no entry here, in PyTorch's order: grouped by the module
        that reports them (the deepest one the name's leading parts reach), modules in traversal order."""
        order = {id(module): i for i, module in enumerate(self.modules())}

        def reporter(key: object) -> int:
            module, rest = self, key if isinstance(key, str) else ""
            head, dot, tail = rest.partition(".")
            while dot and isinstance(module._modules.get(head), Module):
                module, rest = module._modules[head], tail
                head, dot, tail = rest.partition(".")
            return order[id(module)]

        return sorted((k for k in state if k not in own), key=reporter)

    def save(self, path: str | os.PathLike[str] | IO[bytes]) -> None:
        """Write ``state_dict()`` to ``path`` as a ``.tt`` file with ``tt.save`` (atomically for a
        file path; a binary file object, such as ``io.BytesIO``, is written into). ``load(path)``
        reads it back into a module of the same structure."""
        serialization.save(self.state_dict(), path)

    def load(self, path: str | os.PathLike[str] | IO[bytes], strict: bool = True) -> LoadResult:
        """Load a ``.tt`` file's state dict via ``load_state_dict``, onto this module's device and dtype.

        ``path`` is a file path or a binary file object open for reading (``io.BytesIO``, say), as
        ``tt.load`` takes.

        The file is read on the CPU, so a GPU checkpoint loads anywhere; a pytinytensor 1.x file is
        converted to this version's layout first (``nn.convert_1x_state``).
        """
        state, is_1x = serialization.read_state_dict(path, "Module.load")
        if not is_1x:
            return self.load_state_dict(state, strict=strict)
        try:
            return self.load_state_dict(legacy_state.convert_state(state, self), strict=strict)
        except (KeyError, ShapeError) as exc:
            detail = exc.args[0] if exc.args else exc
            raise type(exc)(f"{path} is a pytinytensor 1.x file: {detail}; note: {legacy_state.LIMITS}") from exc

    def _from_1x(self, name: str, array: Array) -> tuple[str, Array]:
        """(name, array) of a pytinytensor 1.x entry of this module in this version's layout; layers
        whose layout changed override it (``nn.legacy_state``)."""
        return name, array

    # ------------------------------------------------------------------ calling
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation of the module, which each subclass defines; call the module
        (``model(x)``), not ``forward``, so that arrays are converted first."""
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # numpy/CuPy arrays given to a module become tensors (no copy), as pytinytensor 1.x accepted
        if args and type(args[0]) is not Tensor and is_array(args[0]):
            args = tuple(wrap(a) if is_array(a) else a for a in args)
        return self.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        """The settings shown between the parentheses of the module's repr (``in_features=4,
        ...``); subclasses override it, the base shows nothing."""
        return ""

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, module in self._modules.items():
            child = repr(module).replace("\n", "\n  ")
            lines.append(f"  ({name}): {child}")
        if len(lines) == 1:
            return lines[0] + ")"
        return "\n".join(lines) + "\n)"


def check_name(owner: str, kind: str, name: object) -> None:
    """A child's or parameter's name as PyTorch accepts it: a non-empty string without a dot (the
    state dict's separator)."""
    if not isinstance(name, str):
        raise TypeError(f"{owner}: {kind} name must be a string, got {type(name).__name__}")
    if not name:
        raise KeyError(f'{owner}: {kind} name cannot be an empty string ""')
    if "." in name:
        raise KeyError(f'{owner}: {kind} name cannot contain ".", got {name}')


def _state_value(name: str, value: object) -> Array:
    """A state dict entry as an array: a Tensor, an array, or numbers; anything else names the key."""
    if isinstance(value, Tensor):
        return value._data
    if value is None or isinstance(value, (str, bytes, dict)):
        raise TypeError(f"load_state_dict(): {name!r} must be a tensor or an array, got {type(value).__name__}")
    return as_array(value, None, f"load_state_dict(): {name!r}")


def _placed(name: str, source: Array, target: Array) -> Array:
    """``source`` as a new array of ``target``'s dtype on ``target``'s device, never sharing memory
    with ``source`` (changing the state dict afterwards leaves the module alone)."""
    host = np.array(backend_of(source).to_numpy(source))
    host = dtypes.checked_cast(host, _numpy_dtype(target), NUMPY, f"load_state_dict(): {name!r}")
    return transfer(host, device_of(target))


def _numpy_dtype(data: Array) -> np.dtype[Any]:
    """The numpy dtype of an array's dtype (array_api_strict's dtypes wrap one)."""
    dtype: np.dtype[Any] = getattr(data.dtype, "_np_dtype", data.dtype)
    return dtype


class ModuleList(Module):
    """A list of modules, registered as the children ``"0"``, ``"1"``, ... (so their parameters
    are ``"0.weight"``, ... in the state dict). Indexing with a slice gives a new ModuleList of
    the same modules."""

    def __init__(self, modules: Iterable[Module] = ()) -> None:
        super().__init__()
        for module in modules:
            self.append(module)

    def append(self, module: Module) -> Self:
        """Add ``module`` at the end; returns this list."""
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList holds Modules, got {type(module).__name__}")
        self._modules[str(len(self._modules))] = module
        return self

    @overload
    def __getitem__(self, index: int) -> Module: ...
    @overload
    def __getitem__(self, index: slice) -> ModuleList: ...
    def __getitem__(self, index: int | slice) -> Module | ModuleList:
        items = list(self._modules.values())
        if isinstance(index, slice):
            return type(self)(items[index])
        return items[index]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())
