"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay (PyTorch's rules)."""

from __future__ import annotations

from ..backend import backend_of
from .optimizer import Optimizer, check_nonnegative


class SGD(Optimizer):
    _param_shaped_state = ("momentum_buffer",)

    def __init__(
        self,
        params,
        lr: float,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ):
        super().__init__(
            params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov)
        )

    def _check_hyperparameters(self, hp):
        problem = check_nonnegative(hp, "lr", "momentum", "weight_decay")
        if problem:
            return problem
        dampening = hp["dampening"]
        if isinstance(dampening, bool) or not isinstance(dampening, (int, float)):
            return f"invalid dampening {dampening!r}: must be a number"
        if hp["nesterov"] and (hp["momentum"] <= 0 or dampening != 0):
            return f"Nesterov momentum needs momentum > 0 and dampening == 0, got {hp['momentum']} and {dampening}"
        return None

    def _step_group(self, group):
        # the group's settings read once, not per parameter
        lr, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
        dampening, nesterov = group["dampening"], group["nesterov"]
        for p, grad, state in self._with_grads(group):
            data = p.data
            buf = backend_of(data).sgd_step(
                data, grad, state.get("momentum_buffer"), lr, momentum, dampening, nesterov, wd
            )
            if buf is not None:
                state["momentum_buffer"] = buf
