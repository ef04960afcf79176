"""The optimizer base: parameter groups, their validation, per-parameter state and its state dict.

State is kept per parameter (keyed by ``id(p)``) and follows the parameter's device: a module
moved with ``.to()`` after some steps keeps training. ``state_dict()`` uses PyTorch's layout, in
which parameters are named by their position across all groups.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, TypeAlias, TypeVar

import numpy as np

from ..argcheck import is_real
from ..array_types import Array
from ..autograd import GRAD_ENABLED, enable_grad
from ..devices import backend_of, device_of, transfer
from ..errors import DeviceError, ShapeError
from ..tensor import Tensor, clear_grad, mark_modified, wrap
from .flat import FlatLayout

_ndarray = np.ndarray
_T = TypeVar("_T")

# A parameter group: "params" (a list of Tensors), the optimizer's hyperparameters, and the extra
# keys below; the values' types differ by key and optimizer, so Any.
ParamGroup: TypeAlias = dict[str, Any]
# One parameter's state: arrays of its shape (momentum buffer, moments) and Adam's step count.
State: TypeAlias = dict[str, Any]
# What an optimizer takes: Tensors, (name, Tensor) pairs (``named_parameters()``), or groups.
Params: TypeAlias = Iterable[Tensor] | Iterable[tuple[str, Tensor]] | Iterable[ParamGroup]

# The dtypes the optimizers' CUDA kernels are compiled for; others take the array-API form.
KERNEL_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

# Group keys that are not hyperparameters of the optimizer but are legitimately present:
# schedulers record "initial_lr"; named parameters give "param_names".
_EXTRA_GROUP_KEYS = ("params", "initial_lr", "param_names")

# PyTorch's group options that steer only how it computes a step (multi-tensor or fused kernels,
# CUDA graph capture, autograd through the step), not its result: a state dict from PyTorch loads
# whatever their values, and they are dropped (tinytensor's groups have no such keys).
_TORCH_COMPUTE_OPTIONS = ("foreach", "fused", "capturable", "differentiable")


class Optimizer:
    """Base class of the optimizers, as PyTorch's ``torch.optim.Optimizer``.

    Parameters
    ----------
    params : iterable
        The tensors to optimize (``model.parameters()``, a list: not a set, whose order would
        change the state dict's numbering), ``(name, tensor)`` pairs (``model.named_parameters()``),
        or parameter groups: dicts with ``"params"`` and hyperparameters that override
        ``defaults`` for that group, as in ``[{"params": body.parameters()}, {"params":
        head.parameters(), "lr": 1e-2}]``.
    defaults : dict
        The hyperparameters of a group that does not set them.

    Attributes
    ----------
    param_groups : list of dict
        Each group's ``"params"`` and hyperparameters; a scheduler, or the user, may change a
        group's ``"lr"`` between steps.
    state : dict
        Each parameter's state (momentum buffer, moments), keyed by ``id(parameter)``; it
        follows the parameter to another device after ``Module.to()``.

    Subclasses implement ``_update(p, grad, state, group)`` (one parameter, in place, under
    no_grad) and may implement ``_check_hyperparameters``.
    """

    # State keys whose arrays have their parameter's shape (load_state_dict checks them).
    _param_shaped_state: ClassVar[tuple[str, ...]] = ()
    # PyTorch's group options that change the result and that this optimizer does not take, each
    # with the one value it computes as: a PyTorch state dict loads with that value, and is refused
    # by name with another. Hints say where another value is supported, by option.
    _torch_options: ClassVar[dict[str, object]] = {}
    _torch_option_hints: ClassVar[dict[str, str]] = {}

    def __init__(self, params: Params, defaults: dict[str, Any]) -> None:
        name = type(self).__name__
        self.defaults = dict(defaults)
        self.state: dict[int, State] = {}
        self.param_groups: list[ParamGroup] = []
        self._flat_layouts: dict[int, FlatLayout] = {}  # id(group) -> its flat step's layout (optim.flat)
        problem = self._check_hyperparameters(self.defaults)
        if problem:
            raise ValueError(f"{name}: {problem}")
        if isinstance(params, Tensor):
            raise TypeError(f"{name}: params must be an iterable of Tensors or dicts, got {type(params).__name__}")
        if isinstance(params, dict):
            raise TypeError(f"{name}: params is one dict; pass a list of param-group dicts: [{{'params': ...}}]")
        if isinstance(params, (str, bytes, set, frozenset)):
            raise TypeError(
                f"{name}: params must be an ordered iterable (list) of Tensors or dicts, got {type(params).__name__}"
            )
        try:
            items: list[Any] = list(params)  # a user's objects, checked below and per group
        except TypeError:
            raise TypeError(
                f"{name}: params must be an iterable of Tensors or dicts, got {type(params).__name__}"
            ) from None
        if not items:
            raise ValueError(f"{name}: got an empty parameter list")
        dicts = [isinstance(item, dict) for item in items]
        if any(dicts) and not all(dicts):
            raise TypeError(f"{name}: params mixes parameter-group dicts with other items; give all groups as dicts")
        for group in items if dicts[0] else [{"params": items}]:
            self.add_param_group(group)

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: ParamGroup) -> None:
        """Add a group of parameters with its own hyperparameters (the rest from ``defaults``),
        as when fine-tuning unfreezes a layer: ``opt.add_param_group({"params": layer.parameters(),
        "lr": 1e-4})``. A parameter may belong to one group only; an unknown hyperparameter is a
        ValueError."""
        name, index = type(self).__name__, len(self.param_groups)
        where = f"{name}: param group {index}"
        if not isinstance(param_group, dict):
            raise TypeError(f"{where} must be a dict, got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError(f"{where} has no 'params' key")
        unknown = [k for k in param_group if k not in self.defaults and k not in _EXTRA_GROUP_KEYS]
        if unknown:
            raise ValueError(
                f"{where} has unknown hyperparameter(s) {', '.join(map(repr, unknown))}; "
                f"{name} takes {', '.join(self.defaults)}"
            )
        params, names = _group_params(param_group["params"], where)
        seen: dict[int, int] = {}
        for k, p in enumerate(params):
            first = seen.setdefault(id(p), k)
            if first != k:
                raise ValueError(
                    f"{where}: the same parameter is at positions {first} and {k} (it would be stepped twice)"
                )
        for other_index, other in enumerate(self.param_groups):
            for p in other["params"]:
                if id(p) in seen:
                    raise ValueError(
                        f"{where}: its parameter at position {seen[id(p)]} is already in param group "
                        f"{other_index} (a parameter may belong to one group only)"
                    )
        group = dict(self.defaults)
        group.update(param_group)
        group["params"] = params
        if names is not None:
            group["param_names"] = names
        problem = self._check_hyperparameters(group)
        if problem:
            raise ValueError(f"{where}: {problem}")
        self.param_groups.append(group)

    def _check_hyperparameters(self, hp: ParamGroup) -> str | None:
        """The first problem with one group's hyperparameters, as a message, or None."""
        return None

    @property
    def lr(self) -> float:
        """The first group's learning rate; setting it sets every group's (1.x's ``optimizer.lr``;
        PyTorch has no such attribute: ``param_groups[i]["lr"]`` is the portable form)."""
        lr: float = self.param_groups[0]["lr"]
        return lr

    @lr.setter
    def lr(self, value: float) -> None:
        problem = check_nonnegative({"lr": value}, "lr")
        if problem:
            raise ValueError(f"{type(self).__name__}: {problem}")
        for group in self.param_groups:
            group["lr"] = value

    # ------------------------------------------------------------------ stepping
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradient of every parameter of every group: ``.grad`` becomes None, or,
        with ``set_to_none=False``, zeros in place. Call it before each backward pass (gradients
        accumulate)."""
        for group in self.param_groups:
            for p in group["params"]:
                clear_grad(p, set_to_none)

    def step(self, closure: Callable[[], _T] | None = None) -> _T | None:
        """Update every parameter that has a gradient, in place (parameters without one are left
        alone); returns what ``closure`` returned, else None.

        ``closure``, optional, recomputes the loss (with gradients enabled) before the update:
        zero the gradients, compute the loss, call ``backward()``, return the loss.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        # no_grad, without the context manager's cost (this runs every training step)
        previous = GRAD_ENABLED[0]
        GRAD_ENABLED[0] = False
        try:
            for group in self.param_groups:
                self._step_group(group)
        finally:
            GRAD_ENABLED[0] = previous
        return loss

    def _step_group(self, group: ParamGroup) -> None:
        """One group's updates; optimizers may override it to hoist the group's settings."""
        update = self._update
        for p, grad, state in self._with_grads(group):
            update(p, grad, state, group)

    def _with_grads(
        self, group: ParamGroup, params: Iterable[Tensor] | None = None
    ) -> Iterator[tuple[Tensor, Array, State]]:
        """(parameter, gradient array, state) for each parameter of ``group`` (or of ``params``,
        some of them) that has a gradient, checked; each parameter is marked modified once the
        caller has updated it (a graph that saved it before this step must not backpropagate
        through it)."""
        # Locals: this loop runs for every parameter of every training step.
        state_for, ndarray = self._state_for, _ndarray
        for p in group["params"] if params is None else params:
            grad = getattr(p, "_grad", None)  # the array autograd stored, or a Tensor
            if grad is None:
                continue
            data = p._data
            if type(grad) is not ndarray or type(data) is not ndarray:
                grad = self._foreign_grad(p, grad)
            state = state_for(p)
            if grad.shape != data.shape:  # it would broadcast into the update silently
                raise ShapeError(
                    f"{type(self).__name__}.step(): the gradient of parameter {self._position(p)} has shape "
                    f"{tuple(grad.shape)}, the parameter has shape {tuple(data.shape)}"
                )
            yield p, grad, state
            mark_modified(p)

    def _update(self, p: Tensor, grad: Array, state: State, group: ParamGroup) -> None:
        raise NotImplementedError

    @staticmethod
    def _marked(params: Iterable[Tensor]) -> None:
        """Mark parameters that a flat step updated as modified (as ``_with_grads`` does)."""
        for p in params:
            mark_modified(p)

    def _foreign_grad(self, p: Tensor, grad: object) -> Array:
        """A gradient that is not a plain numpy array (a Tensor, a GPU or strict array): its array,
        checked to be on the parameter's backend and device."""
        if isinstance(grad, Tensor):
            grad = grad._data
        elif isinstance(grad, np.generic):
            grad = np.asarray(grad)
        data = p._data
        try:
            grad_backend = backend_of(grad)
        except TypeError:
            raise TypeError(
                f"{type(self).__name__}.step(): the gradient of parameter {self._position(p)} is a "
                f"{type(grad).__name__}, expected a Tensor or an array"
            ) from None
        if not _same_place(grad, data):
            raise DeviceError(
                f"{type(self).__name__}.step(): the gradient of parameter {self._position(p)} is on "
                f"{grad_backend.device(grad)}, the parameter on {backend_of(data).device(data)}"
            )
        return grad

    def _position(self, p: Tensor) -> int:
        """``p``'s index across all groups, as state_dict() numbers it (for error messages)."""
        index = 0
        for group in self.param_groups:
            for q in group["params"]:
                if q is p:
                    return index
                index += 1
        return -1

    def _state_for(self, p: Tensor) -> State:
        """The parameter's state, moved to its current device if the module was moved since."""
        state = self.state.get(id(p))
        if state is None:
            state = self.state[id(p)] = {}
            return state
        data = p._data
        on_host = type(data) is _ndarray
        for key, value in state.items():
            if on_host and type(value) is _ndarray:
                continue  # the common case, kept cheap: both on the CPU
            if hasattr(value, "shape") and not _same_place(value, data):
                state[key] = transfer(value, device_of(data))
        return state

    # ------------------------------------------------------------------ state dict
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``, as in PyTorch.

        Parameters are numbered by their position across all groups; each one's state holds
        Tensors (the buffers, copied: later steps do not change a state dict taken earlier) and,
        for Adam, the step count. Save it with ``tt.save`` next to the model's state dict.
        """
        index_of: dict[int, int] = {}
        groups: list[dict[str, Any]] = []
        for group in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            packed["params"] = [index_of.setdefault(id(p), len(index_of)) for p in group["params"]]
            groups.append(packed)
        state = {
            index_of[key]: {k: _snapshot(v) for k, v in values.items()}
            for key, values in self.state.items()
            if key in index_of and values  # a parameter without state (plain SGD) is left out, as in PyTorch
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a ``state_dict()``: hyperparameters per group, and state placed on each parameter's
        current device and (floating state) dtype. The loaded dict is copied, never aliased.

        All or nothing: the groups must match this optimizer's (their number and sizes, the kind
        of optimizer) and every value is checked and converted before anything changes; else a
        ValueError says what differs. A state dict from PyTorch (its step count a 0-d float tensor,
        its buffers torch tensors) loads too: its options that steer only how PyTorch computes
        (``foreach``, ``fused``, ``capturable``, ``differentiable``) whatever their values, those
        that change the result (``maximize``, Adam's ``amsgrad``, ...) at the value this optimizer
        computes with, else a ValueError names them. Neither kind is kept in ``param_groups``.
        """
        where = f"{type(self).__name__}.load_state_dict"
        expected = f"{where}: expected a dict with 'state' and 'param_groups', as state_dict() returns"
        if not isinstance(state_dict, dict):
            raise ValueError(expected)
        if "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError(expected)
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"{where}: the state dict has {len(saved_groups)} parameter group(s), "
                f"this optimizer has {len(self.param_groups)}"
            )
        by_index: dict[object, Tensor] = {}  # a saved parameter index -> this optimizer's parameter
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups, strict=True)):
            saved_params = saved.get("params", [])
            if len(saved_params) != len(group["params"]):
                raise ValueError(
                    f"{where}: parameter group {i} has {len(saved_params)} parameter(s) in the state dict, "
                    f"{len(group['params'])} in this optimizer"
                )
            self._check_group_keys(saved, f"{where}: parameter group {i}")
            problem = self._check_hyperparameters(saved)
            if problem:
                raise ValueError(f"{where}: parameter group {i}: {problem}")
            by_index.update(zip(saved_params, group["params"], strict=True))
        state: dict[int, State] = {}
        shaped = self._param_shaped_state
        for index, values in state_dict["state"].items():
            p = by_index.get(index)
            if p is None:
                raise ValueError(f"{where}: the state dict has state for parameter {index!r}, which no group lists")
            placed = {
                key: _placed(value, p, key, f"{where}: state {key!r} of parameter {index}", key in shaped)
                for key, value in values.items()
                if value is not None  # PyTorch before 2.1 saved SGD's absent momentum buffer as None
            }
            if placed:
                state[id(p)] = placed
        # copied before any group changes: a value that cannot be copied must leave every group as it was
        hyperparameters = [
            {k: copy.deepcopy(v) for k, v in saved.items() if k != "params" and k not in self._torch_only}
            for saved in saved_groups
        ]
        # Everything was checked and converted: only now change the optimizer.
        for saved, values, group in zip(saved_groups, hyperparameters, self.param_groups, strict=True):
            params, names = group["params"], group.get("param_names")
            group.clear()
            group.update(values)
            group["params"] = params
            if names is not None and "param_names" not in saved:
                group["param_names"] = names
        self.state = state

    @property
    def _torch_only(self) -> tuple[str, ...]:
        """PyTorch's group options that a loaded group may hold and that are not kept here."""
        return _TORCH_COMPUTE_OPTIONS + tuple(self._torch_options)

    def _check_group_keys(self, saved: dict[str, Any], where: str) -> None:
        """Refuse a loaded group that lacks a hyperparameter, has a key that neither this optimizer
        nor PyTorch's of its kind has, or sets one of PyTorch's options to a value this optimizer
        does not compute with; each by name."""
        name, torch_only = type(self).__name__, self._torch_only
        missing = [k for k in self.defaults if k not in saved]
        unknown = [k for k in saved if k not in self.defaults and k not in _EXTRA_GROUP_KEYS and k not in torch_only]
        if missing or unknown:
            problems = []
            if missing:
                problems.append(f"lacks {', '.join(map(repr, missing))}")
            if unknown:
                problems.append(f"has unknown key(s) {', '.join(map(repr, unknown))}")
            raise ValueError(f"{where} {' and '.join(problems)}; {name}'s groups hold {', '.join(self.defaults)}")
        for key, value in self._torch_options.items():
            if key in saved and saved[key] != value:
                hint = self._torch_option_hints.get(key)
                raise ValueError(
                    f"{where}: PyTorch option {key}={saved[key]!r} is not supported by tinytensor's {name}"
                    + (f" ({hint})" if hint else "")
                )

    def __getstate__(self) -> dict[str, Any]:
        # The flat layouts are a cache of views into flat arrays; a copy (pickle, deepcopy) would
        # hold copies of the views detached from its flat arrays, so it rebuilds its own.
        state = dict(self.__dict__)
        state["_flat_layouts"] = {}
        return state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {group[k]}" for k in sorted(group) if k not in ("params", "param_names"))
        return "\n".join(lines) + "\n)"


# ---------------------------------------------------------------------- helpers
def check_nonnegative(hp: ParamGroup, *names: str) -> str | None:
    """A message for the first of ``names`` whose value is not a real number >= 0, else None."""
    for name in names:
        value = hp[name]
        if not is_real(value) or not value >= 0:
            return f"invalid {name} {value!r}: must be a number >= 0"
    return None


def _group_params(params: object, where: str) -> tuple[list[Tensor], list[str] | None]:
    """A group's parameters as a list, and their names when given as (name, tensor) pairs."""
    if isinstance(params, Tensor):
        params = [params]
    elif isinstance(params, (set, frozenset)):
        raise TypeError(f"{where}: params must be ordered (a list), not a set: the state dict numbers them in order")
    elif isinstance(params, (str, bytes, dict)) or not hasattr(params, "__iter__"):
        raise TypeError(f"{where}: params must be an iterable of Tensors, got {type(params).__name__}")
    params = list(params)
    names = None
    pairs = [isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in params]
    if params and all(pairs):  # model.named_parameters(), as PyTorch accepts
        names = [p[0] for p in params]
        params = [p[1] for p in params]
    for k, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{where}: params[{k}] is a {type(p).__name__}, expected a Tensor (a Parameter)")
        if not (p.is_leaf or p.retains_grad):
            raise ValueError(
                f"{where}: params[{k}] is a non-leaf tensor (the result of an op); optimize the leaf "
                "tensors it was computed from, or a .detach()ed copy with requires_grad"
            )
    return params, names


def _same_place(a: Array, b: Array) -> bool:
    if type(a) is not type(b):
        return False
    backend = backend_of(a)
    return backend.kind == "cpu" or backend.device(a) == backend.device(b)


def _snapshot(value: Any) -> Any:
    """A copy of one state value for a state dict: arrays become Tensors of their own copy. Any:
    the step count, an array, or whatever a user stored in ``optimizer.state``."""
    if hasattr(value, "shape") and not isinstance(value, np.generic):
        return wrap(backend_of(value).copy(value))
    return copy.deepcopy(value)


def _placed(value: Any, p: Tensor, key: str, where: str, param_shaped: bool) -> Any:
    """One loaded state value as the optimizer keeps it: arrays copied onto ``p``'s device and
    (floating state) dtype; the step count as a Python int. ``value`` is whatever the loaded
    state dict holds (a Tensor, an array of any library, a number): Any."""
    if isinstance(value, Tensor):
        value = value._data
    if key == "step" and (hasattr(value, "shape") or isinstance(value, float)):
        # PyTorch saves the step count as a 0-d float tensor; an int keeps the flat step (optim.flat)
        try:
            count = float(value)
        except TypeError:  # more than one element
            raise ValueError(f"{where} has shape {tuple(value.shape)}, expected a count") from None
        if not (count.is_integer() and count >= 0):
            raise ValueError(f"{where} is {count!r}, expected a whole number >= 0")
        return int(count)
    if not hasattr(value, "shape"):
        return copy.deepcopy(value)
    try:
        backend_of(value)
    except TypeError:  # another library's array (a torch tensor, ...): through numpy
        value = np.asarray(value)
    data = p._data
    if param_shaped and tuple(value.shape) != tuple(data.shape):
        raise ValueError(f"{where} has shape {tuple(value.shape)}, the parameter has shape {tuple(data.shape)}")
    out = transfer(value, device_of(data))
    backend = backend_of(out)
    if backend.is_float(out) and out.dtype != data.dtype:
        out = backend.astype(out, data.dtype)
    return backend.copy(out) if out is value else out
