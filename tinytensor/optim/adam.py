"""Adam (L2 penalty in the gradient) and AdamW (decoupled weight decay), as in PyTorch."""

from __future__ import annotations

import math

from ..backend import backend_of
from .optimizer import Optimizer


class Adam(Optimizer):
    decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0):
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError(f"lr, eps and weight_decay must be >= 0, got {lr}, {eps}, {weight_decay}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"betas must be in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    def _update(self, p, grad, state, group):
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        xp = backend_of(p.data).xp
        if wd:
            if self.decoupled:
                p.data *= 1 - lr * wd
            else:
                grad = grad + wd * p.data
        if "step" not in state:
            state["step"] = 0
            state["exp_avg"] = xp.zeros_like(p.data)
            state["exp_avg_sq"] = xp.zeros_like(p.data)
        state["step"] += 1
        m, v, t = state["exp_avg"], state["exp_avg_sq"], state["step"]
        m *= beta1
        m += (1 - beta1) * grad
        v *= beta2
        v += (1 - beta2) * (grad * grad)
        denom = xp.sqrt(v) / math.sqrt(1 - beta2**t) + eps
        p.data -= (lr / (1 - beta1**t)) * (m / denom)


class AdamW(Adam):
    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.01):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
