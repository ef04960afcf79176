"""``tinytensor.autograd.Function``: an op whose forward and backward the user writes, as PyTorch's.

::

    class Exp(tt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

It makes Tensors, so it is defined above ``tensor`` (autograd, below it, never imports Tensor) and
``tinytensor/__init__.py`` installs it as ``tinytensor.autograd.Function``.

``apply`` runs ``forward`` under no_grad. If grad mode is on and a tensor argument requires grad,
each floating-point output becomes a graph node: a single output's ``_ctx`` is
``(_function_backward, tensor_args, node_class, ctx)``; several outputs share a hidden node of
that form and each is an ``autograd.output_backward`` node. ``node_class`` (``ExpBackward``) names
the node and is what ``grad_fn`` returns. Saved tensors record their version cell when saved, so
``saved_tensors`` refuses one changed in place since, as the built-in ops do.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any, NoReturn

import numpy as np

from . import autograd
from .array_types import Array, DType
from .autograd import CLOCK, FREED_MESSAGE, FREED_TAG, GRAD_ENABLED, Node, OutputGrads, output_backward, share_version
from .device_names import ParsedDevice
from .devices import backend_for, backend_of, device_of
from .tensor import Tensor, wrap

__all__ = ["Function", "FunctionCtx"]

# What apply records of each forward argument: None for a non-tensor, else (requires_grad, shape,
# dtype, device); of each output when there are several: None, or (shape, dtype, parsed device).
_InputMeta = tuple[bool, tuple[int, ...], DType, str]
_OutputMeta = tuple[tuple[int, ...], DType, ParsedDevice]


def _version(t: Tensor | None) -> int:
    cell: list[int] | None = getattr(t, "_version", None)
    return 0 if cell is None else cell[0]


def _among(t: object, tensors: Iterable[object]) -> bool:
    return any(t is other for other in tensors)  # identity: == is elementwise


class FunctionCtx:
    """What one call's ``forward`` and ``backward`` share: ``save_for_backward``/``saved_tensors``,
    ``needs_input_grad``, ``mark_non_differentiable``, ``mark_dirty``, ``set_materialize_grads``,
    and any attribute ``forward`` sets on it."""

    def __init__(self, node_name: str) -> None:
        self.needs_input_grad: tuple[bool, ...] = ()
        self.materialize_grads = True
        self._node_name = node_name
        self._saved: list[tuple[Tensor | None, int]] = []  # (tensor or None, its version when saved)
        self._released = False
        self._non_differentiable: list[Tensor] = []
        self._dirty: list[Tensor] = []
        self._inputs: list[_InputMeta | None] = []  # per argument of forward
        self._outputs: list[_OutputMeta | None] | None = None  # per output, when there are several

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep ``tensors`` (Tensors or None) for ``backward``: ``saved_tensors`` gives them back."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward(): argument {i} must be a Tensor or None, got {type(t).__name__}")
        self._saved = [(t, _version(t)) for t in tensors]

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        """The tensors ``save_for_backward`` kept; raises if one was changed in place since, or if a
        backward pass without ``retain_graph=True`` already freed them."""
        if self._released:
            raise RuntimeError(FREED_MESSAGE)
        for i, (t, version) in enumerate(self._saved):
            if t is not None and _version(t) != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: saved tensor {i} of {self._node_name} (shape {t.shape}) was changed in place "
                    "after save_for_backward() (by an optimizer step, add_(), x[...] = ..., or similar); run the "
                    "forward pass again after the change, or clone() the tensor before changing it"
                )
        return tuple(t for t, _ in self._saved)

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Outputs among ``tensors`` do not require grad; backward gets zeros (or None) for them."""
        self._non_differentiable.extend(_tensors("mark_non_differentiable", tensors))

    def mark_dirty(self, *tensors: Tensor) -> None:
        """``forward`` changed these inputs in place and returns them: the output is the input
        itself. Refused for an input that requires grad while grad mode is on (PyTorch rewrites a
        non-leaf's history; here, as for the built-in in-place ops, the change is an error)."""
        self._dirty.extend(_tensors("mark_dirty", tensors))

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` gets None (not zeros) for outputs that received no gradient."""
        if not isinstance(value, bool):
            raise TypeError(f"set_materialize_grads(): value must be a bool, got {type(value).__name__}")
        self.materialize_grads = value

    def _release(self) -> None:
        self._saved = []
        self._released = True


def _tensors(fn: str, tensors: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): argument {i} must be a Tensor, got {type(t).__name__}")
    return tensors


class FunctionNode(Node):
    """``grad_fn`` of a custom Function's outputs (its class is named ``<Function>Backward``): as in
    PyTorch, it is also the call's ctx (``saved_tensors``, ``needs_input_grad``, what forward set)."""

    __slots__ = ()
    _function: type[Function]

    def __getattr__(self, name: str) -> Any:  # what the user's forward set on ctx
        if name == "_tensor" or name.startswith("__"):
            raise AttributeError(name)
        ctx = self._ctx
        if ctx[0] is FREED_TAG:
            raise RuntimeError(f"{name} of {self.name()}: {FREED_MESSAGE}")
        return getattr(ctx[3], name)


def _make_node_class(cls: type[Function]) -> type[FunctionNode]:
    name = f"{cls.__name__}Backward"
    return type(
        name, (FunctionNode,), {"__slots__": (), "__qualname__": name, "__module__": cls.__module__, "_function": cls}
    )


class Function:
    """Base class of user-defined ops with their own gradient, as ``torch.autograd.Function``.

    Subclass it with a static ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` (or
    ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``), and call ``apply(*args)`` on
    the subclass itself (not on an instance).

    ``backward`` gets one Tensor per output of ``forward`` (zeros for outputs that got no
    gradient, None for non-tensor outputs) and returns one Tensor or None per argument of
    ``forward``; a gradient whose shape broadcasts to its input's is summed down, as in PyTorch.
    Keyword arguments of ``apply`` are bound to ``forward``'s parameters by name and count as
    positional inputs.

    Differences from PyTorch: legacy Functions (non-static ``forward``, called on an instance) are
    refused; ``backward`` runs without recording, so there are no double-backward graphs;
    ``mark_dirty`` on an input that requires grad is refused (see ``FunctionCtx.mark_dirty``).

    Examples
    --------
    >>> import tinytensor as tt
    >>> class Exp(tt.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = x.exp()
    ...         ctx.save_for_backward(y)
    ...         return y
    ...
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (y,) = ctx.saved_tensors
    ...         return grad * y
    >>> x = tt.tensor([0.0, 1.0], requires_grad=True)
    >>> Exp.apply(x).sum().backward()
    >>> tt.allclose(x.grad, x.detach().exp())  # d/dx exp(x) = exp(x)
    True
    """

    _legacy = False
    _setup_context = False
    _node_class: type[FunctionNode]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._legacy = not isinstance(inspect.getattr_static(cls, "forward"), staticmethod)
        cls._setup_context = inspect.getattr_static(cls, "setup_context") is not _BASE_SETUP_CONTEXT
        cls._node_class = _make_node_class(cls)

    # Any: a subclass overrides these with its own arguments and results (the user's objects);
    # ``ctx`` is the FunctionCtx, or forward's first input when ``setup_context`` is overridden.
    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        """The op's result from its inputs (runs under no_grad); override it."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        """Override it (and write ``forward(*args)`` without ctx) to fill ctx from the inputs and output."""
        raise NotImplementedError("setup_context is not overridden")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """The gradients of the inputs from those of the outputs; override it."""
        raise NotImplementedError("You must implement the backward function for custom autograd.Function.")

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        name = type(self).__name__
        raise RuntimeError(
            f"{name}(...)(...): legacy autograd functions (instances with a non-static forward) are not "
            f"supported; make forward and backward @staticmethods and call {name}.apply(...)"
        )

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` on ``args`` and record the call so ``backward`` runs in the backward pass;
        returns ``forward``'s result, its tensors requiring grad where an input does."""
        if cls._legacy:
            raise RuntimeError(
                f"{cls.__name__}.forward is not a @staticmethod: legacy autograd functions (non-static forward) "
                "are not supported; write @staticmethod def forward(ctx, *args) and backward(ctx, *grads)"
            )
        if kwargs or cls._setup_context:
            args = _bind(cls, args, kwargs)
        ctx = FunctionCtx(cls._node_class.__name__)
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx.needs_input_grad = needs
        record = GRAD_ENABLED[0] and any(needs)
        previous = GRAD_ENABLED[0]
        GRAD_ENABLED[0] = False
        try:
            if cls._setup_context:
                output = cls.forward(*args)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args)
        finally:
            GRAD_ENABLED[0] = previous
        return _outputs(cls, ctx, args, output, record)


_BASE_SETUP_CONTEXT = inspect.getattr_static(Function, "setup_context")
Function._node_class = _make_node_class(Function)


def _bind(cls: type[Function], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``apply``'s arguments as ``forward``'s positional inputs (with defaults for setup_context
    style, as PyTorch)."""
    signature = inspect.signature(cls.forward)
    try:
        bound = signature.bind(*args, **kwargs) if cls._setup_context else signature.bind(None, *args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{cls.__name__}.apply(): {exc}") from None
    if bound.kwargs:
        raise TypeError(
            f"{cls.__name__}.apply(): forward() takes {', '.join(map(repr, bound.kwargs))} only by keyword; "
            "a Function's inputs must be parameters that can be passed positionally"
        )
    if cls._setup_context:
        bound.apply_defaults()
        return bound.args
    return bound.args[1:]


def _outputs(cls: type[Function], ctx: FunctionCtx, args: tuple[Any, ...], output: Any, record: bool) -> Any:
    """``forward``'s result as ``apply`` returns it, its differentiable tensors made graph nodes."""
    several = isinstance(output, tuple)
    outs = output if several else (output,)
    dirty, non_differentiable = ctx._dirty, ctx._non_differentiable
    ctx._dirty, ctx._non_differentiable = [], []  # only apply needs them: hold no outputs
    inputs = [a for a in args if isinstance(a, Tensor)]
    for t in dirty:
        if not _among(t, outs):
            raise RuntimeError(
                f"{cls.__name__}.forward marked a tensor dirty (changed in place) that it did not return: "
                "the inputs it changes in place must be among its outputs"
            )
        if record and t.requires_grad:
            raise RuntimeError(
                f"{cls.__name__}.apply(): forward changed in place (mark_dirty) an input that requires grad, "
                "which cannot be changed in place while gradients are recorded; pass a clone() of it, or "
                "call apply under tinytensor.no_grad()"
            )
    results = []
    node: tuple[Any, ...] | Tensor | None = None
    for k, o in enumerate(outs):
        if not isinstance(o, Tensor):
            results.append(o)
            continue
        is_dirty = _among(o, dirty)
        if record and not _among(o, non_differentiable) and backend_of(o._data).is_float(o._data):
            if node is None:
                node = _node(cls, ctx, args, inputs, dirty, outs)
            # one output: the node's _ctx itself; several: output k of the hidden tensor they share
            node_ctx = node if isinstance(node, tuple) else (output_backward, (node,), cls._node_class, k, len(outs))
            if is_dirty:  # the input itself becomes the output, now a graph node
                o._ctx, o.requires_grad, o._stamp = node_ctx, True, CLOCK[0]
                results.append(o)
                continue
            out = wrap(o._data, node_ctx)
        elif is_dirty or not _among(o, inputs):
            results.append(o)
            continue
        else:  # an input returned as it is: a new tensor on the same storage, as PyTorch's view
            out = wrap(o._data)
        share_version(o, out)
        results.append(out)
    return tuple(results) if several else results[0]


def _node(
    cls: type[Function],
    ctx: FunctionCtx,
    args: tuple[Any, ...],
    inputs: list[Tensor],
    dirty: list[Tensor],
    outs: tuple[Any, ...],
) -> tuple[Any, ...] | Tensor:
    """The call's graph node: its ``_ctx`` for one output, else the hidden tensor all outputs share."""
    ctx._inputs = [
        (a.requires_grad, tuple(a._data.shape), a._data.dtype, backend_of(a._data).device(a._data))
        if isinstance(a, Tensor)
        else None
        for a in args
    ]
    # A dirty input becomes this node's output; the node's parent is a stand-in for its old self
    # (it requires no grad, or apply refused it).
    parents = tuple(_stand_in(a) if _among(a, dirty) else a for a in inputs)
    node_ctx = (_function_backward, parents, cls._node_class, ctx)
    if len(outs) == 1:
        return node_ctx
    ctx._outputs = [
        (tuple(o._data.shape), o._data.dtype, device_of(o._data)) if isinstance(o, Tensor) else None for o in outs
    ]
    return wrap(None, node_ctx)


def _stand_in(t: Tensor) -> Tensor:
    out = wrap(t._data)
    share_version(t, out)
    return out


def _function_backward(g: Array | OutputGrads, node_class: type[FunctionNode], ctx: FunctionCtx) -> list[Array | None]:
    """The engine's backward of a Function node: the user's ``backward`` on Tensors, its result
    checked and fitted to the inputs."""
    grads = g.grads if type(g) is OutputGrads else [g]
    if ctx._outputs is not None and ctx.materialize_grads:
        for k, meta in enumerate(ctx._outputs):
            if grads[k] is None and meta is not None:
                shape, dtype, device = meta
                grads[k] = backend_for(device).full_on(shape, 0, dtype, device[1])
    try:
        result = node_class._function.backward(ctx, *(None if a is None else wrap(a) for a in grads))
    finally:
        if not autograd.RETAINING[0]:
            ctx._release()
    return _checked_gradients(node_class.__name__, ctx._inputs, result)


# The user's backward reads saved tensors through ctx.saved_tensors, which checks their versions.
autograd.saves_nothing(_function_backward)


def _checked_gradients(name: str, inputs: list[_InputMeta | None], result: object) -> list[Array | None]:
    """One gradient array (or None) per tensor input, from what ``backward`` returned."""
    if not isinstance(result, tuple):
        result = (result,)
    n = len(inputs)
    if len(result) > n and all(r is None for r in result[n:]):  # trailing Nones are allowed, as in PyTorch
        result = result[:n]
    if len(result) != n:
        raise RuntimeError(
            f"function {name} returned an incorrect number of gradients (expected {n}, got {len(result)})"
        )
    grads = []
    for i, (meta, g) in enumerate(zip(inputs, result, strict=True)):
        if meta is None:
            if g is not None:
                raise RuntimeError(
                    f"function {name} returned a gradient different than None at position {i + 1}, but the "
                    "corresponding forward input was not a Tensor"
                )
            continue
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(
                f"function {name} returned a {type(g).__name__} as the gradient at position {i + 1}; "
                "expected a Tensor or None"
            )
        requires_grad, shape, dtype, device = meta
        grads.append(_fitted(name, i, g._data, shape, dtype, device) if g is not None and requires_grad else None)
    return grads


def _fitted(name: str, i: int, array: Array, shape: tuple[int, ...], dtype: DType, device: str) -> Array:
    """``array`` as the gradient of an input of ``shape``, ``dtype`` on ``device``: a broadcast
    shape is summed down and the dtype cast, as PyTorch does; another device or shape is an error."""
    backend = backend_of(array)
    got = backend.device(array)
    if got != device:
        raise RuntimeError(
            f"Function {name} returned an invalid gradient at index {i} - expected device {device} but got {got}"
        )
    if tuple(array.shape) != shape:
        try:
            fits = np.broadcast_shapes(shape, tuple(array.shape)) == tuple(array.shape)
        except ValueError:
            fits = False
        if not fits:
            raise RuntimeError(
                f"Function {name} returned an invalid gradient at index {i} - got {list(array.shape)} but "
                f"expected shape compatible with {list(shape)}"
            )
        xp = backend.xp
        extra = array.ndim - len(shape)
        if extra:
            array = xp.sum(array, axis=tuple(range(extra)))
        axes = tuple(k for k, n in enumerate(shape) if n == 1 and array.shape[k] != 1)
        if axes:
            array = xp.sum(array, axis=axes, keepdims=True)
    if array.dtype != dtype:
        array = backend.astype(array, dtype)
    return array
