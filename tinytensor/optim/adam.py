"""Adam (L2 penalty in the gradient) and AdamW (decoupled weight decay), as in PyTorch."""

from __future__ import annotations

import math

from ..devices import backend_of
from .optimizer import KERNEL_FLOATS, Optimizer, check_nonnegative

# One CUDA kernel per parameter and step (the backend compiles it; see Backend.kernel).
_KERNEL = (
    "ElementwiseKernel",
    "T grad, T lr, T beta1, T beta2, T eps, T wd, T bias1, T root_bias2, bool decoupled",
    "T param, T m, T v",
    """
    T g = grad;
    if (wd != 0) {
        if (decoupled) param *= 1 - lr * wd;
        else g += wd * param;
    }
    m = beta1 * m + (1 - beta1) * g;
    v = beta2 * v + (1 - beta2) * g * g;
    param -= (lr / bias1) * (m / (sqrt(v) / root_bias2 + eps));
    """,
    "tinytensor_adam",
)


def adam_update(backend, param, grad, m, v, lr, beta1, beta2, eps, wd, decoupled, step):
    """PyTorch's Adam (``decoupled``: AdamW) update at ``step`` (1, 2, ...) of the array ``param`` and
    its moments ``m`` and ``v``, in place. One kernel where the backend compiles them."""
    kernel = backend.kernel(_KERNEL)
    if kernel is not None and param.dtype in KERNEL_FLOATS:
        t = param.dtype.type
        grad = grad.astype(param.dtype, copy=False)
        bias1, root_bias2 = 1 - beta1**step, math.sqrt(1 - beta2**step)
        with backend.device_scope(param):
            kernel(grad, t(lr), t(beta1), t(beta2), t(eps), t(wd), t(bias1), t(root_bias2), decoupled, param, m, v)
        return
    with backend.device_scope(param):
        if wd:
            if decoupled:
                param *= 1 - lr * wd
            else:
                grad = grad + wd * param
        m *= beta1
        m += (1 - beta1) * grad
        v *= beta2
        v += (1 - beta2) * (grad * grad)
        denom = backend.xp.sqrt(v) / math.sqrt(1 - beta2**step) + eps
        param -= (lr / (1 - beta1**step)) * (m / denom)


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
        data = p._data
        backend = backend_of(data)
        if "step" not in state:
            state["step"] = 0
            # on the parameter's device (CuPy's zeros_like would use the current one)
            state["exp_avg"] = backend.zeros(data.shape, data.dtype, data)
            state["exp_avg_sq"] = backend.zeros(data.shape, data.dtype, data)
        state["step"] += 1
        adam_update(
            backend,
            data,
            grad,
            state["exp_avg"],
            state["exp_avg_sq"],
            lr,
            beta1,
            beta2,
            eps,
            wd,
            self.decoupled,
            state["step"],
        )


class AdamW(Adam):
    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.01):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
