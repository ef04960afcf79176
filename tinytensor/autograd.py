"""Reverse-mode autograd: the graph walk, gradient accumulation and grad mode.

A result tensor's ``_ctx`` is ``(backward, parents)``, where ``backward(g)`` returns one gradient
(or None) per parent, or ``(backward, parents, saved)``, called as ``backward(g, *saved)``: the
hottest ops use the second form because creating a closure over several arrays costs more than
the op's own numpy call on small tensors. Leaves have ``_ctx is None``. After a backward pass without ``retain_graph`` every
visited node's ``_ctx`` becomes ``FREED`` so its saved arrays can be collected, and a second pass
through it raises instead of silently dropping gradients.
"""

from __future__ import annotations

import functools

from .backend import backend_of

# A list, not a bool, so hot paths read it with one index and no global rebinding.
GRAD_ENABLED = [True]

FREED = ("freed",)


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
    """Non-leaf nodes reachable from root, parents before children (iterative post-order DFS)."""
    order = []
    visited = set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        for parent in node._ctx[1]:
            ctx = parent._ctx
            if ctx is None or not parent.requires_grad or id(parent) in visited:
                continue
            if ctx is FREED:
                raise RuntimeError(
                    "backward through a part of the graph that an earlier backward() already freed; "
                    "pass retain_graph=True to the first backward() to keep it"
                )
            stack.append((parent, False))
    return order


def run_backward(root, seed, retain_graph: bool = False) -> None:
    """Propagate ``seed`` (d out / d root) to every leaf that requires grad."""
    if root._ctx is FREED:
        raise RuntimeError("backward() called a second time on a freed graph; pass retain_graph=True the first time")
    if root._ctx is None:  # a leaf: its gradient is the seed itself
        _accumulate_leaf(root, seed, set())
        return
    order = _topological_order(root)
    pending = {id(root): seed}
    handed_out = set()  # ids of arrays already stored as some leaf's .grad (never alias two leaves)
    with no_grad():
        for node in reversed(order):
            grad = pending.pop(id(node), None)
            ctx = node._ctx
            backward, parents = ctx[0], ctx[1]
            if not retain_graph:
                node._ctx = FREED
            if grad is None:
                continue
            if node._retain_grad:
                node.grad = grad if node.grad is None else node.grad + grad
            parent_grads = backward(grad, *ctx[2]) if len(ctx) == 3 else backward(grad)
            for parent, pgrad in zip(parents, parent_grads, strict=False):
                if pgrad is None or not parent.requires_grad:
                    continue
                if parent._ctx is None:
                    _accumulate_leaf(parent, pgrad, handed_out)
                else:
                    key = id(parent)
                    prev = pending.get(key)
                    pending[key] = pgrad if prev is None else prev + pgrad


def _accumulate_leaf(leaf, grad, handed_out) -> None:
    data = leaf.data
    if grad.dtype != data.dtype:
        grad = backend_of(grad).xp.astype(grad, data.dtype)
    if leaf.grad is None:
        if id(grad) in handed_out:
            grad = backend_of(grad).copy(grad)
        handed_out.add(id(grad))
        leaf.grad = grad
    else:
        leaf.grad = leaf.grad + grad
