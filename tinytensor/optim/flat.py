"""Multi-tensor optimizer steps on the CPU: one update over flat arrays for many parameters.

Updating each parameter on its own costs a few numpy calls per parameter, and on small models
their fixed cost is most of an optimizer step. So the optimizers keep the parameters of a group
that are numpy arrays of one floating dtype, with gradients of their shape and dtype, in a
``FlatLayout``: their state arrays (momentum buffer, Adam's moments) are views into flat arrays
of one layout, and so are the parameters' own arrays; each step adds their gradients in view by
view or, where the update reads them more than once, copies them into a flat gradient of the
same layout, so an update is a handful of numpy calls over all of them. The state dict still
holds one array per parameter, in PyTorch's format.

A parameter's array moves into the flat one only when nothing but the parameter holds it (its
reference count says so): an array that anything else holds (a ``.numpy()``, a state dict, a
graph not yet backpropagated) stays where it is, so no alias goes stale, and the layout then
updates each parameter from its slice of the flat update instead.

A layout is checked at every step and rebuilt (values and state copied in) when the parameters
with gradients, a parameter's array (``p.data = ...``, ``load_state_dict``, ``Module.to``) or a
state array (``Optimizer.load_state_dict``, a user's assignment) changed. Anything else takes
the per-parameter path: other devices, mixed dtypes, gradients that need a check or a cast,
hyperparameters that are not Python numbers (numpy scalars promote differently), and parameters
larger than ``FLAT_MAX_SIZE``, whose numpy calls cost little next to their work while copying
their gradient would not.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..tensor import Tensor, wrap

if TYPE_CHECKING:  # optimizer imports this module
    from .optimizer import ParamGroup, State

_ndarray = np.ndarray
_PLAIN = (float, int)

# Elements of the largest parameter a layout takes (a 256 x 512 weight).
FLAT_MAX_SIZE = 1 << 17


def _holders(t: Tensor) -> int:
    """The reference count of ``t``'s array, as this very expression sees it."""
    return sys.getrefcount(t._data)


# What _holders reads for an array that only its tensor holds (calibrated: Python versions count
# differently). Without reference counts (not CPython) no array is ever moved.
_SOLE = _holders(wrap(np.empty(0))) if hasattr(sys, "getrefcount") else -1


def _views(flat: NDArray[Any], shapes: Sequence[tuple[int, ...]]) -> list[NDArray[Any]]:
    views, start = [], 0
    for shape in shapes:
        size = 1
        for n in shape:
            size *= n
        views.append(flat[start : start + size].reshape(shape))
        start += size
    return views


class FlatLayout:
    """Flat arrays for some of one group's parameters: the parameters (when they moved in), their
    gradients, a scratch array and each state key's values, with a view per parameter into each."""

    __slots__ = (
        "params",
        "shapes",
        "dtype",
        "flat_params",
        "param_views",
        "grad",
        "grad_views",
        "scratch",
        "scratch_views",
        "state",
        "fresh",
    )

    def __init__(self, params: list[Tensor], dtype: np.dtype[Any], keys: Sequence[str]) -> None:
        self.params = params
        self.shapes: list[tuple[int, ...]] = [p._data.shape for p in params]
        self.dtype = dtype
        total = sum(p._data.size for p in params)
        self.flat_params: NDArray[Any] | None = None
        self.param_views: list[NDArray[Any]] = []
        self.grad = np.empty(total, dtype)
        self.scratch = np.empty(total, dtype)
        self.grad_views = _views(self.grad, self.shapes)
        self.scratch_views = _views(self.scratch, self.shapes)
        # zeros, not empty: a parameter without state yet must not feed garbage (overflow
        # warnings, NaN) through the flat update before its state is set
        self.state: dict[str, tuple[NDArray[Any], list[NDArray[Any]]]] = {}
        for key in keys:
            flat = np.zeros(total, dtype)
            self.state[key] = (flat, _views(flat, self.shapes))
        self.fresh: list[int] = []  # positions whose state this step creates

    def match(
        self, group_params: list[Tensor], states: dict[int, State], keys: Sequence[str]
    ) -> tuple[list[NDArray[Any]], list[Tensor]] | None:
        """(gradients, the other parameters with gradients) when this layout still holds exactly
        the group's small parameters with gradients, their arrays and their state; else None."""
        params, shapes, dtype, views = self.params, self.shapes, self.dtype, self.param_views
        key_views = [self.state[key][1] for key in keys]
        n = len(params)
        grads: list[NDArray[Any]] = []
        rest: list[Tensor] = []
        i = 0
        for p in group_params:
            grad = getattr(p, "_grad", None)
            mine = i < n and params[i] is p
            if grad is None:
                if mine:
                    return None
                continue
            if not mine:
                rest.append(p)  # a large one, or a new one: the caller decides
                continue
            if type(grad) is not _ndarray:
                if not isinstance(grad, Tensor) or type(grad._data) is not _ndarray:
                    return None
                grad = grad._data
            data = p._data
            if views:
                if data is not views[i]:
                    return None
            elif type(data) is not _ndarray or data.shape != shapes[i] or data.dtype != dtype:
                return None
            if grad.shape != shapes[i] or grad.dtype != dtype:
                return None
            if key_views:
                st = states.get(id(p))
                if st is None:
                    return None
                for kv, key in zip(key_views, keys):
                    if st.get(key) is not kv[i]:
                        return None
            grads.append(grad)
            i += 1
        if i != n:
            return None
        for p in rest:
            if p._data.size <= FLAT_MAX_SIZE:  # a small one that has a gradient now: rebuild
                return None
        self.fresh = []
        return grads, rest


def prepare(
    cache: dict[int, FlatLayout],
    group: ParamGroup,
    states: dict[int, State],
    keys: Sequence[str],
    hyperparameters: Sequence[object],
) -> tuple[FlatLayout, list[NDArray[Any]], list[Tensor]] | None:
    """``(layout, gradients, rest)`` for this step of ``group``: the layout of the parameters that
    take the flat step (from ``cache``, keyed by the group's id, or rebuilt), their gradient
    arrays, and the parameters with gradients left to the per-parameter path. None when the
    whole group takes the per-parameter path."""
    for value in hyperparameters:
        if type(value) not in _PLAIN:
            return None
    layout = cache.get(id(group))
    if layout is not None:
        found = layout.match(group["params"], states, keys)
        if found is not None:
            return layout, found[0], found[1]
        del cache[id(group)]  # before counting holders: the old layout holds its views
        layout = None
    split = _split(group["params"])
    if split is None:
        return None
    small, grads, rest = split
    layout = _build(small, small[0]._data.dtype, states, keys)
    if layout is None:
        return None
    cache[id(group)] = layout
    return layout, grads, rest


def _split(group_params: list[Tensor]) -> tuple[list[Tensor], list[NDArray[Any]], list[Tensor]] | None:
    """(small, their gradients, large): the parameters with gradients that can share a layout and
    those left to the per-parameter path; None when the whole group takes that path."""
    small: list[Tensor] = []
    grads: list[NDArray[Any]] = []
    rest: list[Tensor] = []
    dtype = None
    for p in group_params:
        grad = getattr(p, "_grad", None)
        if grad is None:
            continue
        if type(grad) is not _ndarray and isinstance(grad, Tensor):
            grad = grad._data
        data = p._data
        if type(data) is not _ndarray or type(grad) is not _ndarray:
            return None
        if grad.shape != data.shape or grad.dtype != data.dtype or data.dtype.kind != "f":
            return None  # the per-parameter path reports or casts as it always has
        if data.size > FLAT_MAX_SIZE:
            rest.append(p)
            continue
        if dtype is None:
            dtype = data.dtype
        elif data.dtype != dtype:
            return None
        small.append(p)
        grads.append(grad)
    return (small, grads, rest) if small else None


def _build(
    params: list[Tensor], dtype: np.dtype[Any], states: dict[int, State], keys: Sequence[str]
) -> FlatLayout | None:
    """A new layout for ``params``, their state copied in (None when a state array has a form
    only the per-parameter path handles) and their arrays moved in where nothing else holds them."""
    layout = FlatLayout(params, dtype, keys)
    fresh = []
    for i, p in enumerate(params):
        st = states.get(id(p))
        values = [None if st is None else st.get(key) for key in keys]
        if all(v is None for v in values):
            fresh.append(i)
            continue
        for key, value in zip(keys, values):
            if type(value) is not _ndarray or value.shape != layout.shapes[i] or value.dtype != dtype:
                return None
            layout.state[key][1][i][...] = value
    for i, p in enumerate(params):
        if i not in fresh:
            st = states[id(p)]
            for key in keys:
                st[key] = layout.state[key][1][i]
    layout.fresh = fresh
    sole = True
    for p in params:
        if _holders(p) != _SOLE:
            sole = False
            break
    if sole:
        layout.flat_params = np.empty(layout.grad.size, dtype)
        layout.param_views = _views(layout.flat_params, layout.shapes)
        for p, view in zip(params, layout.param_views):
            view[...] = p._data
            p._data = view
    return layout


def gather(layout: FlatLayout, grads: list[NDArray[Any]], weight_decay: float) -> None:
    """Copy this step's gradients into the layout's flat gradient, plus ``weight_decay`` times
    the parameter (PyTorch's L2 penalty: ``grad + weight_decay * param``)."""
    for view, grad in zip(layout.grad_views, grads):
        np.copyto(view, grad)
    if weight_decay:
        if layout.flat_params is not None:
            np.multiply(layout.flat_params, weight_decay, out=layout.scratch)
        else:
            for view, p in zip(layout.scratch_views, layout.params):
                np.multiply(p._data, weight_decay, out=view)
        layout.grad += layout.scratch


def scale_params(layout: FlatLayout, factor: float) -> None:
    """``param *= factor`` for each parameter (AdamW's decoupled weight decay)."""
    if layout.flat_params is not None:
        layout.flat_params *= factor
        return
    for p in layout.params:
        data = p._data
        data *= factor


def adopt_fresh(layout: FlatLayout, states: dict[int, State], keys: Sequence[str]) -> None:
    """Point the state of the layout's fresh positions at their views, once the step set them."""
    for i in layout.fresh:
        st = states.setdefault(id(layout.params[i]), {})
        for key in keys:
            st[key] = layout.state[key][1][i]


def apply(layout: FlatLayout) -> None:
    """``param -= update`` for each parameter, the update being the layout's scratch array."""
    if layout.flat_params is not None:
        layout.flat_params -= layout.scratch
        return
    for p, view in zip(layout.params, layout.scratch_views):
        data = p._data
        data -= view
