"""Reverse-mode autograd: the graph walk, gradient accumulation and the graph's nodes as
``Tensor.grad_fn`` shows them (grad mode is ``grad_mode.py``; custom ops, ``autograd.Function``,
are ``custom_function.py``).

A result tensor's ``_ctx`` is ``(backward, parents, *saved)``: ``backward(g, *saved)`` returns
one gradient (or None) per parent. The hottest ops put what they need in ``saved`` because
creating a closure over several arrays costs more than the op's own numpy call on small tensors
(for generated ops, ``saved[0]`` is the op's gradient rule). Leaves have ``_ctx is None``. After
a backward pass without ``retain_graph`` every visited node's ``_ctx`` becomes
``(FREED_TAG, qualname)`` (the qualified name of the function that names its op, kept for
``grad_fn.name()``) so its saved arrays can be collected, and a second pass through it raises
instead of silently dropping gradients.

A node with several outputs (a custom ``Function`` returning a tuple) is a hidden tensor whose
gradient is an ``OutputGrads``; each output is a node ``(output_backward, (hidden,), namer,
index, count)`` that hands its gradient to that slot. ``Tensor.grad_fn`` shows nodes as ``Node``
objects, made on request from ``_ctx`` (see ``grad_fn``).

In-place safety (PyTorch's version counters, in a cheaper form): ``CLOCK`` counts in-place
changes in this process. Every graph node records the clock when it is made (``_stamp``); an
in-place change stamps the changed storage's cell (``_version``, shared by a tensor and its
views) with the new clock. At backward, a parent or output stamped after its node was changed
after the forward pass: the arrays that node saved are stale, and backward raises naming the op
instead of returning a wrong gradient. Making a node costs one store; only in-place ops and
views touch the cells.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import numpy as np

from .array_types import Array
from .devices import backend_of

# Grad mode lives in its own module; ops and optimizers import it from here (tt.autograd.no_grad,
# ... as torch.autograd's).
from .grad_mode import GRAD_ENABLED as GRAD_ENABLED
from .grad_mode import enable_grad as enable_grad
from .grad_mode import inference_mode as inference_mode
from .grad_mode import is_grad_enabled as is_grad_enabled
from .grad_mode import is_inference_mode_enabled as is_inference_mode_enabled
from .grad_mode import no_grad as no_grad
from .grad_mode import set_grad_enabled as set_grad_enabled

if TYPE_CHECKING:  # installed by tinytensor/__init__.py (it makes Tensors, so it lives above tensor)
    from .custom_function import Function as Function
    from .tensor import Tensor

# A node's ``_ctx``: ``(backward, parents, *saved)`` while live, ``(FREED_TAG, qualname)`` once freed
# (see the module docstring); its items differ by kind of node, so they are not typed one by one.
Ctx: TypeAlias = tuple[Any, ...]
_F = TypeVar("_F", bound=Callable[..., object])

# A freed node's _ctx is (FREED_TAG, qualname): the first item tells it from a live node's backward.
FREED_TAG = "freed"

# Whether the running backward pass keeps the graph (retain_graph=True): a custom Function's ctx
# frees its saved tensors after its backward otherwise, as PyTorch's does.
RETAINING = [False]

CLOCK = [0]

# Non-leaf tensors whose .grad backward keeps (retain_grad()): id -> weak reference, so they still
# die. (A WeakSet would compare tensors with ==, which is elementwise.)
RETAINED: dict[int, weakref.ref[Tensor]] = {}


def retain(t: Tensor) -> None:
    """Keep ``t``'s gradient after backward (``Tensor.retain_grad``), for as long as ``t`` lives."""
    key = id(t)
    RETAINED[key] = weakref.ref(t, lambda _ref: RETAINED.pop(key, None))


def is_retained(t: Tensor) -> bool:
    """Whether ``retain_grad()`` was called on ``t``."""
    ref = RETAINED.get(id(t))
    return ref is not None and ref() is t


# 1.x's hook on a node's backward step: ``x._backward = f`` makes the pass call ``f()`` in place of
# x's step, and ``f`` may call the step it replaced (``original = x._backward`` read earlier).
# id -> (weak reference, f), as RETAINED; the steps of the nodes whose ``f`` is running, by id.
STEP_OVERRIDES: dict[int, tuple[weakref.ref[Tensor], Callable[[], object]]] = {}
_RUNNING_STEPS: dict[int, Callable[[], None]] = {}


def override_step(t: Tensor, fn: Callable[[], object]) -> None:
    """``t._backward = fn`` (see ``Tensor._backward``)."""
    if not callable(fn):
        raise TypeError(f"_backward must be set to a function of no arguments, got {type(fn).__name__}")
    if t._ctx is None:
        raise RuntimeError("_backward: a leaf tensor has no backward step to replace")
    key = id(t)
    pop = STEP_OVERRIDES.pop  # bound now: at interpreter exit the module's globals may be gone

    def forget(_ref: weakref.ref[Tensor]) -> None:
        pop(key, None)

    STEP_OVERRIDES[key] = (weakref.ref(t, forget), fn)


def run_step(t: Tensor) -> None:
    """``t._backward()``: run ``t``'s own step of the backward pass in progress."""
    step = _RUNNING_STEPS.get(id(t))
    if step is None:
        raise RuntimeError(
            "_backward() runs a node's step of a backward pass: call it from the function installed with "
            "`x._backward = f`, while backward() runs"
        )
    step()


def _overridden(node: Tensor) -> Callable[[], object] | None:
    entry = STEP_OVERRIDES.get(id(node))
    return entry[1] if entry is not None and entry[0]() is node else None


# Backward functions (or, for generated binary ops, their per-op gradient rules) that read no
# saved array: a change to their inputs after the forward pass cannot make them wrong.
NO_SAVED_DATA: set[Callable[..., object]] = set()


def saves_nothing(fn: _F) -> _F:
    """Mark a backward function (or binary gradient rule) that uses only shapes, never saved data."""
    NO_SAVED_DATA.add(fn)
    return fn


def mark_modified(t: Tensor) -> None:
    """Record that ``t``'s storage was changed in place (optimizer steps, ``add_``, ``x[i] = v``)."""
    CLOCK[0] += 1
    cell = getattr(t, "_version", None)
    if cell is None:
        t._version = [CLOCK[0]]
    else:
        cell[0] = CLOCK[0]


def share_version(base: Tensor, view: Tensor) -> None:
    """``view`` shares ``base``'s storage: a change through either is seen by both."""
    cell = getattr(base, "_version", None)
    if cell is None:
        cell = base._version = [0]
    view._version = cell


def _modified_after(t: Tensor, stamp: int) -> bool:
    cell = getattr(t, "_version", None)
    return cell is not None and cell[0] > stamp


def _reads_saved_data(ctx: Ctx) -> bool:
    if ctx[0] in NO_SAVED_DATA:
        return False
    rule = ctx[2] if len(ctx) > 2 else None  # a generated op's gradient rule, if any
    return not (callable(rule) and rule in NO_SAVED_DATA)


def _name_source(ctx: Ctx) -> object:
    """The function whose name names a live node's op: a generated op's rule, else its backward."""
    return ctx[2] if len(ctx) > 2 and callable(ctx[2]) else ctx[0]


def _qualname(fn: object) -> str:
    qualname: str | None = getattr(fn, "__qualname__", None)
    return qualname or type(fn).__name__


def _short_name(qualname: str) -> str:
    name = qualname.split(".<locals>")[0].strip("_")
    for suffix in ("_backward", "_bwd"):
        name = name.removesuffix(suffix)
    return name


def op_name(ctx: Ctx) -> str:
    """A readable name of the op behind a node, for error messages."""
    return _short_name(_qualname(_name_source(ctx)))


def _check_not_modified(node: Tensor, ctx: Ctx) -> None:
    stamp = node._stamp
    stale = [t for t in (node, *ctx[1]) if _modified_after(t, stamp)]
    if stale and _reads_saved_data(ctx):
        raise RuntimeError(
            f"backward(): the gradient of {op_name(ctx)} needs a tensor of shape {stale[0].shape} that was "
            "modified in place after the forward pass (by an optimizer step, add_(), x[...] = ..., or "
            "similar); run the forward pass again after the change, or clone() the tensor before changing it"
        )


def _topological_order(root: Tensor) -> list[Tensor]:
    """Non-leaf nodes reachable from root, parents before children (iterative post-order DFS).

    Tensors are keys of sets and dicts here: their hash is their identity, and distinct live
    objects never share one, so the elementwise ``__eq__`` is never asked.
    """
    order: list[Tensor] = []
    visited: set[Tensor] = set()
    # A node is pushed as itself to be expanded and, once expanded, as a 1-tuple to be emitted.
    stack: list[Tensor | tuple[Tensor]] = [root]
    push, pop, seen = stack.append, stack.pop, visited.add
    while stack:
        node = pop()
        if isinstance(node, tuple):
            order.append(node[0])
            continue
        if node in visited:
            continue
        seen(node)
        push((node,))
        node_ctx = node._ctx
        assert node_ctx is not None  # only nodes are pushed, never leaves
        for parent in node_ctx[1]:
            ctx = parent._ctx
            if ctx is None or not parent.requires_grad or parent in visited:
                continue
            if ctx[0] is FREED_TAG:
                raise RuntimeError(
                    "backward through a part of the graph that an earlier backward() already freed; "
                    "pass retain_graph=True to the first backward() to keep it"
                )
            push(parent)
    return order


def run_backward(root: Tensor, seed: Array, retain_graph: bool = False) -> None:
    """Propagate ``seed`` (d out / d root) to every leaf that requires grad."""
    if root._ctx is not None and root._ctx[0] is FREED_TAG:
        raise RuntimeError("backward() called a second time on a freed graph; pass retain_graph=True the first time")
    if root._ctx is None:  # a leaf: its gradient is the seed itself
        _accumulate_leaf(root, seed, set())
        return
    order = _topological_order(root)
    retained = RETAINED
    overrides = STEP_OVERRIDES
    clock = CLOCK[0]
    pending: dict[Tensor, Array] = {root: seed}  # node -> the gradient summed so far
    handed_out: set[int] = set()  # ids of arrays already stored as some leaf's .grad (never alias two leaves)
    if not is_retained(root):  # the root keeps its seed as .grad, as 1.x's did (retained ones: below)
        _add_to_grad(root, _own_copy(seed), handed_out)
    previous = GRAD_ENABLED[0], RETAINING[0]
    GRAD_ENABLED[0] = False
    RETAINING[0] = retain_graph
    try:
        for node in reversed(order):
            grad = pending.pop(node, None)
            ctx = node._ctx
            assert ctx is not None  # the walk holds only nodes
            if not retain_graph:  # keep only the op's name (for grad_fn), never the function itself
                fn = ctx[2] if len(ctx) > 2 and callable(ctx[2]) else ctx[0]  # _name_source, inline
                node._ctx = (FREED_TAG, getattr(fn, "__qualname__", None))
            if grad is None:
                continue
            if clock > node._stamp:  # something changed in place since this node was made
                _check_not_modified(node, ctx)
            if retained and is_retained(node):  # its own copy: the same array may also become a leaf's .grad
                _add_to_grad(node, _own_copy(grad), handed_out)
            if overrides and (replacement := _overridden(node)) is not None:
                _run_overridden(node, replacement, ctx, grad, pending, handed_out)
                continue
            _pass_on(ctx[1], ctx[0](grad, *ctx[2:]), pending, handed_out)
    finally:
        GRAD_ENABLED[0], RETAINING[0] = previous


def _own_copy(grad: Array) -> Array:
    """A copy for a non-leaf's .grad: the array itself flows on and may become a leaf's .grad."""
    return np.array(grad) if isinstance(grad, np.generic) else backend_of(grad).copy(grad)


def _pass_on(
    parents: tuple[Tensor, ...], parent_grads: Any, pending: dict[Tensor, Array], handed_out: set[int]
) -> None:
    """A node's gradients for its parents: into a leaf's .grad, or pending for a node."""
    for parent, pgrad in zip(parents, parent_grads):
        if pgrad is None or not parent.requires_grad:
            continue
        if parent._ctx is None:  # a leaf: its .grad
            if (
                pgrad.dtype is parent._data.dtype
                and getattr(parent, "_grad", None) is None
                and id(pgrad) not in handed_out
            ):  # _accumulate_leaf's common case, inline: the first gradient, of the leaf's dtype
                handed_out.add(id(pgrad))
                parent._grad = pgrad
            else:
                _accumulate_leaf(parent, pgrad, handed_out)
        else:
            prev = pending.get(parent)
            pending[parent] = pgrad if prev is None else prev + pgrad


def _run_overridden(
    node: Tensor,
    replacement: Callable[[], object],
    ctx: Ctx,
    grad: Array,
    pending: dict[Tensor, Array],
    handed_out: set[int],
) -> None:
    """Call the function installed with ``node._backward = f``; its ``original()`` runs the step."""
    _RUNNING_STEPS[id(node)] = lambda: _pass_on(ctx[1], ctx[0](grad, *ctx[2:]), pending, handed_out)
    try:
        replacement()
    finally:
        del _RUNNING_STEPS[id(node)]


def _accumulate_leaf(leaf: Tensor, grad: Array, handed_out: set[int]) -> None:
    if isinstance(grad, np.generic):  # numpy reduces to a scalar where a 0-d leaf wants an array
        grad = np.array(grad)
    data = leaf._data
    if grad.dtype is not data.dtype and grad.dtype != data.dtype:  # `is`: the cheap common case
        grad = backend_of(data).xp.astype(grad, data.dtype)  # data's: grad may be a numpy scalar
    _add_to_grad(leaf, grad, handed_out)


def _add_to_grad(t: Tensor, grad: Array, handed_out: set[int]) -> None:
    """Add ``grad`` into ``t``'s gradient. The first one is stored as the array itself (never one
    that another tensor's gradient already holds); the ``grad`` property wraps it in a Tensor when
    first read. Later ones replace the array with the sum, inside that Tensor once it exists, so a
    ``.grad`` the user holds stays the tensor's gradient."""
    current = getattr(t, "_grad", None)
    if current is None:
        if id(grad) in handed_out:
            grad = backend_of(grad).copy(grad)
        handed_out.add(id(grad))
        t._grad = grad
    elif hasattr(current, "_ctx"):  # a Tensor (this layer does not import the class)
        current._data = _sum(current._data, grad)
        mark_modified(current)
    else:
        t._grad = _sum(current, grad)


def _sum(a: Array, b: Array) -> Array:
    total = a + b
    return np.asarray(total) if isinstance(total, np.generic) else total  # 0-d numpy sums are scalars


# ---------------------------------------------------------------------------- nodes with several outputs
class OutputGrads:
    """The gradients of a multi-output node, one slot per output (None: none arrived), summed per
    slot as they arrive: the engine adds pending gradients with ``+``."""

    __slots__ = ("grads",)

    def __init__(self, grads: list[Array | None]) -> None:
        self.grads = grads

    def __add__(self, other: OutputGrads) -> OutputGrads:
        mine = self.grads
        for i, g in enumerate(other.grads):
            if g is not None:
                mine[i] = g if mine[i] is None else mine[i] + g
        return self


@saves_nothing
def output_backward(g: Array, namer: object, index: int, count: int) -> tuple[OutputGrads]:
    """The node of output ``index`` of ``count``: its gradient goes to that slot of the shared node.
    ``namer`` (the shared node's name source) names it, so it keeps the name once freed."""
    grads: list[Array | None] = [None] * count
    grads[index] = g
    return (OutputGrads(grads),)


# ---------------------------------------------------------------------------- grad_fn
# Names where PyTorch's differ from the op's own (one PyTorch op for one of ours); every other op
# is shown as its name in CamelCase + "Backward0".
_NODE_NAMES = {"identity": "Clone", "to": "ToCopy", "concat": "Cat", "getitem": "Index", "reshape": "View"}

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call .backward(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to "
    "access saved tensors after calling backward."
)


def node_name(qualname: str | None) -> str:
    """``grad_fn.name()`` from the qualified name of a node's name source: a custom Function's
    node class ("ExpBackward") as it is, a built-in op's as PyTorch-style "ExpBackward0"."""
    if not qualname:
        return "Backward0"
    if qualname.endswith("Backward"):
        return qualname
    name = _short_name(qualname).rsplit(".", 1)[-1]
    name = _NODE_NAMES.get(name) or "".join(part[:1].upper() + part[1:] for part in name.split("_"))
    return name + "Backward0"


class Node:
    """A step of the recorded graph, as ``Tensor.grad_fn`` shows it (PyTorch's autograd node).

    Made on request from the tensor's ``_ctx``, so recording costs nothing extra; two Node objects
    for the same step compare equal (``==``), but are not the same object as in PyTorch. Built-in
    ops are named PyTorch-style (``MulBackward0``) after our op, which is sometimes not PyTorch's
    (a matmul is ``MatmulBackward0`` whatever the ranks). After a backward pass that freed the
    graph, ``name()`` still works but ``next_functions`` raises: the links were let go with it.
    """

    __slots__ = ("_tensor",)

    def __init__(self, tensor: Tensor) -> None:
        self._tensor = tensor  # the tensor whose _ctx this is (the hidden one for several outputs)

    @property
    def _ctx(self) -> Ctx:
        """The step's ``_ctx``, live or freed (a Node is made only for a tensor an op made)."""
        ctx = self._tensor._ctx
        assert ctx is not None
        return ctx

    def name(self) -> str:
        """The node's name, e.g. ``"MulBackward0"``, or ``"ExpBackward"`` for a Function ``Exp``."""
        ctx = self._ctx
        if ctx[0] is FREED_TAG:
            return node_name(ctx[1])
        return node_name(_qualname(_name_source(ctx)))

    @property
    def next_functions(self) -> tuple[Edge, ...]:
        """One ``(node, output index)`` pair per input: ``(None, 0)`` for an input that needs no
        gradient, ``AccumulateGrad`` for a leaf that does (ops with a Python number as an operand
        list only their tensor inputs; PyTorch lists the number too)."""
        ctx = self._ctx
        if ctx[0] is FREED_TAG:
            raise RuntimeError(f"next_functions of {self.name()}: {FREED_MESSAGE}")
        return tuple(_edge(parent) for parent in ctx[1])

    def __getattr__(self, name: str) -> Any:  # a custom Function's node shows its ctx's attributes
        # A custom Function's node also shows its ctx (custom_function.FunctionNode); once the graph
        # is freed only its name is left, and asking for the rest is PyTorch's error.
        if not name.startswith("_"):
            ctx = self._ctx
            if ctx[0] is FREED_TAG and (ctx[1] or "").endswith("Backward"):
                raise RuntimeError(f"{name} of {self.name()}: {FREED_MESSAGE}")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and other._tensor is self._tensor

    def __hash__(self) -> int:
        return id(self._tensor)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self._tensor):#x}>"


class AccumulateGrad:
    """``next_functions``' entry for a leaf that requires grad: its gradient is added to
    ``variable.grad``. ``name()`` is ``"AccumulateGrad"`` (PyTorch: "torch::autograd::AccumulateGrad")."""

    __slots__ = ("variable",)
    next_functions: tuple[Edge, ...] = ()

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable

    def name(self) -> str:
        """``"AccumulateGrad"``."""
        return "AccumulateGrad"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AccumulateGrad) and other.variable is self.variable

    def __hash__(self) -> int:
        return id(self.variable)

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self.variable):#x}>"


# One entry of ``next_functions``: (the input's node, or None where it needs no gradient; which output).
Edge: TypeAlias = tuple["Node | AccumulateGrad | None", int]


def _edge(t: Tensor) -> Edge:
    if not t.requires_grad:
        return (None, 0)
    ctx = t._ctx
    if ctx is None:
        return (AccumulateGrad(t), 0)
    if ctx[0] is output_backward:
        return (grad_fn(t), ctx[3])
    return (grad_fn(t), 0)


def grad_fn(t: Tensor) -> Node | None:
    """``t.grad_fn``: None for a leaf, else the Node of the step that made ``t`` (an instance of a
    custom Function's node class where ``_ctx[2]`` is one)."""
    ctx = t._ctx
    if ctx is None:
        return None
    if ctx[0] is output_backward:  # one output of several: the shared node
        t = ctx[1][0]
        ctx = t._ctx
        assert ctx is not None  # the outputs' shared hidden tensor is a node
    kind = ctx[2] if len(ctx) > 2 else None
    if isinstance(kind, type) and issubclass(kind, Node):
        return kind(t)
    return Node(t)
