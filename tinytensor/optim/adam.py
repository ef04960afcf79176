"""Adam (L2 penalty in the gradient) and AdamW (decoupled weight decay), as in PyTorch."""

from __future__ import annotations

import math

import numpy as np

from ..devices import backend_of
from . import flat
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


def adam_flat(layout, grads, lr, beta1, beta2, eps, wd, decoupled, step) -> None:
    """``adam_update`` for every parameter of a flat layout (``optim.flat``) at once, all at
    ``step``: the same arithmetic, operation for operation, over the flat arrays."""
    if wd and decoupled:
        flat.scale_params(layout, 1 - lr * wd)
    flat.gather(layout, grads, 0 if decoupled else wd)
    g, scratch = layout.grad, layout.scratch
    m = layout.state["exp_avg"][0]
    v = layout.state["exp_avg_sq"][0]
    m *= beta1
    np.multiply(g, 1 - beta1, out=scratch)
    m += scratch
    v *= beta2
    np.multiply(g, g, out=scratch)
    scratch *= 1 - beta2
    v += scratch
    np.sqrt(v, out=scratch)
    scratch /= math.sqrt(1 - beta2**step)
    scratch += eps
    np.divide(m, scratch, out=scratch)
    scratch *= lr / (1 - beta1**step)
    flat.apply(layout)


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

    _KEYS = ("exp_avg", "exp_avg_sq")

    def _step_group(self, group):
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        rest = None  # the parameters left for the per-parameter path (None: all)
        ready = flat.prepare(self._flat_layouts, group, self.state, self._KEYS, (lr, beta1, beta2, eps, wd))
        step = None if ready is None else self._common_step(ready[0])
        if ready is not None and step is not None:
            layout, grads, rest = ready
            adam_flat(layout, grads, lr, beta1, beta2, eps, wd, self.decoupled, step)
            flat.adopt_fresh(layout, self.state, self._KEYS)
            for p in layout.params:
                self.state[id(p)]["step"] = step
            self._marked(layout.params)
            if not rest:
                return
        update = self._update
        for p, grad, state in self._with_grads(group, rest):
            update(p, grad, state, group)

    def _common_step(self, layout):
        """The step count the layout's parameters take now, when they all take the same one."""
        fresh, states = layout.fresh, self.state
        steps = set()
        for i, p in enumerate(layout.params):
            count = 0 if i in fresh else states[id(p)].get("step")
            if type(count) is not int:
                return None
            steps.add(count)
        return steps.pop() + 1 if len(steps) == 1 else None

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
