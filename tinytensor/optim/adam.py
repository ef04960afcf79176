"""Adam (L2 penalty in the gradient) and AdamW (decoupled weight decay), as in PyTorch."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..array_types import Array
from ..backend import Backend
from ..devices import backend_of
from ..tensor import Tensor
from . import flat
from .optimizer import KERNEL_FLOATS, Optimizer, ParamGroup, Params, State, check_nonnegative

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


def adam_update(
    backend: Backend,
    param: Array,
    grad: Array,
    m: Array,
    v: Array,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    wd: float,
    decoupled: bool,
    step: int,
) -> None:
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


def adam_flat(
    layout: flat.FlatLayout,
    grads: list[NDArray[Any]],
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    wd: float,
    decoupled: bool,
    step: int,
) -> None:
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
    """Adam, with PyTorch's update rule; ``weight_decay`` is an L2 penalty added to the gradient
    (``AdamW`` decouples it).

    For each parameter ``p`` with gradient ``g``, at step ``t`` (1, 2, ...)::

        g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    ``m``, ``v`` and ``t`` are the state ``"exp_avg"``, ``"exp_avg_sq"`` and ``"step"``, as in
    PyTorch's state dict (whose step count, a 0-d tensor there, loads as an int).

    Parameters
    ----------
    params : iterable
        The tensors to optimize, ``(name, tensor)`` pairs, or parameter groups (dicts), as
        ``Optimizer`` takes them.
    lr : float, default 1e-3
        The learning rate, >= 0.
    betas : tuple of two floats, default (0.9, 0.999)
        The decay rates of the running averages ``m`` and ``v``, each in [0, 1) (a list is
        converted to a tuple).
    eps : float, default 1e-8
        Added to the denominator, >= 0.
    weight_decay : float, default 0
        The L2 penalty, >= 0.

    PyTorch's ``amsgrad``, ``decoupled_weight_decay`` and its keyword-only ``foreach``,
    ``maximize``, ``capturable``, ``differentiable`` and ``fused`` do not exist here; a PyTorch
    state dict loads with any of ``foreach``, ``capturable``, ``differentiable`` and ``fused``,
    and with the others False (a ValueError names one set otherwise).

    Examples
    --------
    >>> import tinytensor as tt
    >>> model = tt.nn.Linear(3, 1)
    >>> opt = tt.optim.Adam(model.parameters(), lr=1e-2)
    >>> opt.zero_grad()
    >>> (model(tt.ones(4, 3)) ** 2).mean().backward()
    >>> opt.step()
    >>> sorted(opt.state_dict()["state"][0])
    ['exp_avg', 'exp_avg_sq', 'step']
    """

    decoupled: ClassVar[bool] = False
    _param_shaped_state = ("exp_avg", "exp_avg_sq")
    _torch_options: ClassVar[dict[str, object]] = {"amsgrad": False, "maximize": False, "decoupled_weight_decay": False}
    _torch_option_hints: ClassVar[dict[str, str]] = {
        "decoupled_weight_decay": "PyTorch's Adam with decoupled weight decay is AdamW: load it into optim.AdamW"
    }

    def __init__(
        self,
        params: Params,
        lr: float = 1e-3,
        betas: tuple[float, float] | list[float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        pair = tuple(betas) if isinstance(betas, list) else betas
        super().__init__(params, dict(lr=lr, betas=pair, eps=eps, weight_decay=weight_decay))

    def _check_hyperparameters(self, hp: ParamGroup) -> str | None:
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

    @property
    def t(self) -> int:
        """The number of steps taken (1.x's ``optimizer.t``): the largest ``"step"`` in the state, 0
        before the first. PyTorch has no such attribute; its state holds the count per parameter."""
        return max((int(state.get("step", 0)) for state in self.state.values()), default=0)

    def _step_group(self, group: ParamGroup) -> None:
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

    def _common_step(self, layout: flat.FlatLayout) -> int | None:
        """The step count the layout's parameters take now, when they all take the same one."""
        fresh, states = layout.fresh, self.state
        steps: set[int] = set()
        for i, p in enumerate(layout.params):
            count = 0 if i in fresh else states[id(p)].get("step")
            if type(count) is not int:
                return None
            steps.add(count)
        return steps.pop() + 1 if len(steps) == 1 else None

    def _update(self, p: Tensor, grad: Array, state: State, group: ParamGroup) -> None:
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
    """Adam with decoupled weight decay (Loshchilov and Hutter), with PyTorch's update rule: each
    step first shrinks the parameter, ``p = p * (1 - lr * weight_decay)``, then takes Adam's step
    without the penalty in the gradient.

    Parameters
    ----------
    params : iterable
        The tensors to optimize, ``(name, tensor)`` pairs, or parameter groups (dicts).
    lr : float, default 1e-3
        The learning rate, >= 0.
    betas : tuple of two floats, default (0.9, 0.999)
        The decay rates of the running averages, each in [0, 1).
    eps : float, default 1e-8
        Added to the denominator, >= 0.
    weight_decay : float, default 0.01
        The decoupled weight decay, >= 0 (PyTorch's default too).

    PyTorch's ``amsgrad`` and its keyword-only ``maximize``, ``foreach``, ``capturable``,
    ``differentiable`` and ``fused`` do not exist here; a PyTorch state dict loads with any of
    ``foreach``, ``capturable``, ``differentiable`` and ``fused``, and with ``amsgrad`` and
    ``maximize`` False (a ValueError names one set otherwise).
    """

    decoupled = True
    # PyTorch's AdamW saves decoupled_weight_decay=True; False would be Adam's L2 penalty
    _torch_options = {**Adam._torch_options, "decoupled_weight_decay": True}
    _torch_option_hints = {
        "decoupled_weight_decay": "PyTorch's AdamW without decoupled weight decay is Adam: load it into optim.Adam"
    }

    def __init__(
        self,
        params: Params,
        lr: float = 1e-3,
        betas: tuple[float, float] | list[float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.01,
    ) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
