"""The optimizer base: parameter groups, per-parameter state that follows its parameter's device."""

from __future__ import annotations

from ..autograd import no_grad
from ..backend import backend_of, parse_device, transfer


class Optimizer:
    def __init__(self, params, defaults: dict):
        params = list(params)
        if not params:
            raise ValueError("the optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.param_groups = []
        for group in groups:
            full = dict(defaults)
            full.update(group)
            full["params"] = list(full["params"])
            self.param_groups.append(full)
        self.state: dict[int, dict] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad = None if set_to_none else p.grad * 0

    def _state_for(self, p) -> dict:
        """The parameter's state, moved to its current device if the module was moved since."""
        state = self.state.setdefault(id(p), {})
        data = p.data
        for key, value in state.items():
            if hasattr(value, "shape") and not _same_place(value, data):
                state[key] = transfer(value, parse_device(backend_of(data).device(data)))
        return state

    @no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._update(p, p.grad, self._state_for(p), group)

    def _update(self, p, grad, state, group) -> None:
        raise NotImplementedError


def _same_place(a, b) -> bool:
    if type(a) is not type(b):
        return False
    backend = backend_of(a)
    return backend.kind == "cpu" or backend.device(a) == backend.device(b)
