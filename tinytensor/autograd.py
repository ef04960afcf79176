"""Reverse-mode autograd: the graph walk, gradient accumulation and grad mode.

A result tensor's ``_ctx`` is ``(backward, parents, *saved)``: ``backward(g, *saved)`` returns
one gradient (or None) per parent. The hottest ops put what they need in ``saved`` because
creating a closure over several arrays costs more than the op's own numpy call on small tensors
(for generated ops, ``saved[0]`` is the op's gradient rule). Leaves have ``_ctx is None``. After
a backward pass without ``retain_graph`` every visited node's ``_ctx`` becomes ``FREED`` so its
saved arrays can be collected, and a second pass through it raises instead of silently dropping
gradients.

In-place safety (PyTorch's version counters, in a cheaper form): ``CLOCK`` counts in-place
changes in this process. Every graph node records the clock when it is made (``_stamp``); an
in-place change stamps the changed storage's cell (``_version``, shared by a tensor and its
views) with the new clock. At backward, a parent or output stamped after its node was changed
after the forward pass: the arrays that node saved are stale, and backward raises naming the op
instead of returning a wrong gradient. Making a node costs one store; only in-place ops and
views touch the cells.
"""

from __future__ import annotations

import functools
import weakref

from .devices import backend_of

# A list, not a bool, so hot paths read it with one index and no global rebinding.
GRAD_ENABLED = [True]

FREED = ("freed",)

CLOCK = [0]

# Non-leaf tensors whose .grad backward keeps (retain_grad()): id -> weak reference, so they still
# die. (A WeakSet would compare tensors with ==, which is elementwise.)
RETAINED: dict[int, weakref.ref] = {}


def retain(t) -> None:
    key = id(t)
    RETAINED[key] = weakref.ref(t, lambda _ref: RETAINED.pop(key, None))


def is_retained(t) -> bool:
    ref = RETAINED.get(id(t))
    return ref is not None and ref() is t


# Backward functions (or, for generated binary ops, their per-op gradient rules) that read no
# saved array: a change to their inputs after the forward pass cannot make them wrong.
NO_SAVED_DATA: set = set()


def saves_nothing(fn):
    """Mark a backward function (or binary gradient rule) that uses only shapes, never saved data."""
    NO_SAVED_DATA.add(fn)
    return fn


def mark_modified(t) -> None:
    """Record that ``t``'s storage was changed in place (optimizer steps, ``add_``, ``x[i] = v``)."""
    CLOCK[0] += 1
    cell = getattr(t, "_version", None)
    if cell is None:
        t._version = [CLOCK[0]]
    else:
        cell[0] = CLOCK[0]


def share_version(base, view) -> None:
    """``view`` shares ``base``'s storage: a change through either is seen by both."""
    cell = getattr(base, "_version", None)
    if cell is None:
        cell = base._version = [0]
    view._version = cell


def _modified_after(t, stamp) -> bool:
    cell = getattr(t, "_version", None)
    return cell is not None and cell[0] > stamp


def _reads_saved_data(ctx) -> bool:
    if ctx[0] in NO_SAVED_DATA:
        return False
    rule = ctx[2] if len(ctx) > 2 else None  # a generated op's gradient rule, if any
    return not (callable(rule) and rule in NO_SAVED_DATA)


def op_name(ctx) -> str:
    """A readable name of the op behind a node, for error messages."""
    fn = ctx[2] if len(ctx) > 2 and callable(ctx[2]) else ctx[0]
    name = getattr(fn, "__qualname__", repr(fn)).split(".<locals>")[0].strip("_")
    for suffix in ("_backward", "_bwd"):
        name = name.removesuffix(suffix)
    return name


def _check_not_modified(node, ctx) -> None:
    stamp = node._stamp
    stale = [t for t in (node, *ctx[1]) if _modified_after(t, stamp)]
    if stale and _reads_saved_data(ctx):
        raise RuntimeError(
            f"backward(): the gradient of {op_name(ctx)} needs a tensor of shape {stale[0].shape} that was "
            "modified in place after the forward pass (by an optimizer step, add_(), x[...] = ..., or "
            "similar); run the forward pass again after the change, or clone() the tensor before changing it"
        )


class no_grad:
    """Context manager and decorator: ops inside record no graph."""

    def __enter__(self):
        self._prev = GRAD_ENABLED[0]
        GRAD_ENABLED[0] = False
        return self

    def __exit__(self, *exc):
        GRAD_ENABLED[0] = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)

        return wrapper


class enable_grad(no_grad):
    """Turns recording back on inside a ``no_grad`` block."""

    def __enter__(self):
        self._prev = GRAD_ENABLED[0]
        GRAD_ENABLED[0] = True
        return self


def is_grad_enabled() -> bool:
    return GRAD_ENABLED[0]


def _topological_order(root):
    """Non-leaf nodes reachable from root, parents before children (iterative post-order DFS).

    Tensors are keys of sets and dicts here: their hash is their identity, and distinct live
    objects never share one, so the elementwise ``__eq__`` is never asked.
    """
    order = []
    visited: set = set()
    # A node is pushed as itself to be expanded and, once expanded, as a 1-tuple to be emitted.
    stack: list = [root]
    push, pop, seen = stack.append, stack.pop, visited.add
    while stack:
        node = pop()
        if type(node) is tuple:
            order.append(node[0])
            continue
        if node in visited:
            continue
        seen(node)
        push((node,))
        for parent in node._ctx[1]:
            ctx = parent._ctx
            if ctx is None or not parent.requires_grad or parent in visited:
                continue
            if ctx is FREED:
                raise RuntimeError(
                    "backward through a part of the graph that an earlier backward() already freed; "
                    "pass retain_graph=True to the first backward() to keep it"
                )
            push(parent)
    return order


def run_backward(root, seed, retain_graph: bool = False) -> None:
    """Propagate ``seed`` (d out / d root) to every leaf that requires grad."""
    if root._ctx is FREED:
        raise RuntimeError("backward() called a second time on a freed graph; pass retain_graph=True the first time")
    if root._ctx is None:  # a leaf: its gradient is the seed itself
        _accumulate_leaf(root, seed, set())
        return
    order = _topological_order(root)
    retained = RETAINED
    clock = CLOCK[0]
    pending = {root: seed}  # node -> the gradient summed so far
    handed_out: set[int] = set()  # ids of arrays already stored as some leaf's .grad (never alias two leaves)
    previous = GRAD_ENABLED[0]
    GRAD_ENABLED[0] = False
    try:
        for node in reversed(order):
            grad = pending.pop(node, None)
            ctx = node._ctx
            if not retain_graph:
                node._ctx = FREED
            if grad is None:
                continue
            if clock > node._stamp:  # something changed in place since this node was made
                _check_not_modified(node, ctx)
            if retained and is_retained(node):  # its own copy: the same array may also become a leaf's .grad
                _add_to_grad(node, backend_of(grad).copy(grad), handed_out)
            parent_grads = ctx[0](grad, *ctx[2:])
            for parent, pgrad in zip(ctx[1], parent_grads):
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
    finally:
        GRAD_ENABLED[0] = previous


def _accumulate_leaf(leaf, grad, handed_out) -> None:
    data = leaf._data
    if grad.dtype is not data.dtype and grad.dtype != data.dtype:  # `is`: the cheap common case
        grad = backend_of(data).xp.astype(grad, data.dtype)  # data's: grad may be a numpy scalar
    _add_to_grad(leaf, grad, handed_out)


def _add_to_grad(t, grad, handed_out) -> None:
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
        current._data = current._data + grad
        mark_modified(current)
    else:
        t._grad = current + grad
