"""Adam (L2 penalty in the gradient) and AdamW (decoupled weight decay), as in PyTorch."""

from __future__ import annotations

from ..backend import backend_of
from .optimizer import Optimizer, check_nonnegative


class Adam(Optimizer):
    decoupled = False
    _param_shaped_state = ("exp_avg", "exp_avg_sq")

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0):
        if isinstance(betas, list):
            betas = tuple(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    def _check_hyperparameters(self, hp):
        problem = check_nonnegative(hp, "lr", "eps", "weight_decay")
        if problem:
            return problem
        betas = hp["betas"]
        if (
            not isinstance(betas, (tuple, list))
            or len(betas) != 2
            or not all(check_nonnegative({"b": b}, "b") is None and b < 1 for b in betas)
        ):
            return f"invalid betas {betas!r}: must be two numbers in [0, 1)"
        return None

    def _update(self, p, grad, state, group):
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        data = p.data
        backend = backend_of(data)
        if "step" not in state:
            state["step"] = 0
            # on the parameter's device (CuPy's zeros_like would use the current one)
            state["exp_avg"] = backend.zeros(data.shape, data.dtype, data)
            state["exp_avg_sq"] = backend.zeros(data.shape, data.dtype, data)
        state["step"] += 1
        backend.adam_step(
            data, grad, state["exp_avg"], state["exp_avg_sq"], lr, beta1, beta2, eps, wd, self.decoupled, state["step"]
        )


class AdamW(Adam):
    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.01):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
