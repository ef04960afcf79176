"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay (PyTorch's rules)."""

from __future__ import annotations

from .optimizer import Optimizer


class SGD(Optimizer):
    def __init__(
        self,
        params,
        lr: float,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"lr, momentum and weight_decay must be >= 0, got {lr}, {momentum}, {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum needs momentum > 0 and dampening == 0")
        super().__init__(
            params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov)
        )

    def _update(self, p, grad, state, group):
        wd, momentum = group["weight_decay"], group["momentum"]
        if wd:
            grad = grad + wd * p.data
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad * 1  # its own copy: updated in place below
            else:
                buf *= momentum
                buf += (1 - group["dampening"]) * grad if group["dampening"] else grad
            grad = grad + momentum * buf if group["nesterov"] else buf
        p.data -= group["lr"] * grad
