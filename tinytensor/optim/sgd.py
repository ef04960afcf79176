"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay (PyTorch's rules)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..array_types import Array
from ..backend import Backend
from ..devices import backend_of
from . import flat
from .optimizer import KERNEL_FLOATS, Optimizer, ParamGroup, Params, check_nonnegative

# One CUDA kernel per parameter and step (the backend compiles it; see Backend.kernel).
_KERNEL = (
    "ElementwiseKernel",
    "T grad, T lr, T wd",
    "T param",
    "param -= lr * (wd != 0 ? grad + wd * param : grad);",
    "tinytensor_sgd",
)
_MOMENTUM_KERNEL = (
    "ElementwiseKernel",
    "T grad, T lr, T momentum, T dampening, T wd, bool nesterov, bool first",
    "T param, T buf",
    """
    T g = wd != 0 ? grad + wd * param : grad;
    buf = first ? g : momentum * buf + (1 - dampening) * g;
    param -= lr * (nesterov ? g + momentum * buf : buf);
    """,
    "tinytensor_sgd_momentum",
)


def sgd_update(
    backend: Backend,
    param: Array,
    grad: Array,
    buf: Array | None,
    lr: float,
    momentum: float,
    dampening: float,
    nesterov: bool,
    wd: float,
) -> Array | None:
    """PyTorch's SGD update of the array ``param``, in place; returns the momentum buffer (a new one
    when ``buf`` is None). One kernel where the backend compiles them, else the array-API form."""
    kernel = backend.kernel(_MOMENTUM_KERNEL if momentum else _KERNEL)
    if kernel is not None and param.dtype in KERNEL_FLOATS:
        t = param.dtype.type
        grad = grad.astype(param.dtype, copy=False)  # the kernel takes one T; numpy would promote
        with backend.device_scope(param):
            if not momentum:
                kernel(grad, t(lr), t(wd), param)
                return None
            first = buf is None
            if first:
                buf = backend.xp.empty_like(param)  # inside the device scope: on the parameter's
            kernel(grad, t(lr), t(momentum), t(dampening), t(wd), nesterov, first, param, buf)
        return buf
    with backend.device_scope(param):
        if wd:
            grad = grad + wd * param
        if momentum:
            if buf is None:
                # its own array, updated in place from the next step on (numpy gives a scalar for
                # 0-d arithmetic, so build it from the parameter)
                buf = backend.copy(param)
                buf[...] = grad
            else:
                buf *= momentum
                buf += (1 - dampening) * grad if dampening else grad
            grad = grad + momentum * buf if nesterov else buf
        param -= lr * grad
    return buf


def sgd_flat(
    layout: flat.FlatLayout,
    grads: list[NDArray[Any]],
    lr: float,
    momentum: float,
    dampening: float,
    nesterov: bool,
    wd: float,
) -> None:
    """``sgd_update`` for every parameter of a flat layout (``optim.flat``) at once: the same
    arithmetic, operation for operation, over the flat arrays."""
    scratch = layout.scratch
    g = None  # the flat gradient, gathered where it is read more than once or needs the penalty
    if wd or dampening or nesterov:
        flat.gather(layout, grads, wd)
        g = layout.grad
    g_views = grads if g is None else layout.grad_views
    if not momentum:
        if g is None:
            for view, grad in zip(layout.scratch_views, grads):
                np.multiply(grad, lr, out=view)
        else:
            np.multiply(g, lr, out=scratch)
        flat.apply(layout)
        return
    buf, buf_views = layout.state["momentum_buffer"]
    fresh = layout.fresh
    if len(fresh) == len(buf_views):  # the first step: the buffer is the gradient
        for view, grad in zip(buf_views, g_views):
            np.copyto(view, grad)
    else:
        buf *= momentum
        if g is None:
            for view, grad in zip(buf_views, grads):
                view += grad
        elif dampening:
            np.multiply(g, 1 - dampening, out=scratch)
            buf += scratch
        else:
            buf += g
        for i in fresh:
            np.copyto(buf_views[i], g_views[i])
    update = buf
    if nesterov:
        np.multiply(buf, momentum, out=scratch)
        scratch += g
        update = scratch
    np.multiply(update, lr, out=scratch)
    flat.apply(layout)


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum, Nesterov momentum and weight decay,
    with PyTorch's update rule.

    For each parameter ``p`` with gradient ``g``, at each ``step()``::

        g = g + weight_decay * p
        buf = g                                            (first step)
        buf = momentum * buf + (1 - dampening) * g         (later steps)
        g = g + momentum * buf if nesterov else buf        (with momentum)
        p = p - lr * g

    The momentum buffer is the state ``"momentum_buffer"``, as in PyTorch's state dict.

    Parameters
    ----------
    params : iterable
        The tensors to optimize, ``(name, tensor)`` pairs, or parameter groups (dicts), as
        ``Optimizer`` takes them.
    lr : float
        The learning rate, >= 0. Required here: PyTorch's default is 1e-3.
    momentum : float, default 0
        The momentum factor, >= 0.
    dampening : float, default 0
        The dampening of the momentum.
    weight_decay : float, default 0
        The L2 penalty, >= 0 (added to the gradient).
    nesterov : bool, default False
        Nesterov momentum; it needs ``momentum > 0`` and ``dampening == 0``.

    PyTorch's keyword-only ``maximize``, ``foreach``, ``differentiable`` and ``fused`` do not
    exist here (a PyTorch state dict loads with any of the last three, and with ``maximize``
    False); on the CPU, the parameters of a group are updated together over flat arrays where
    they allow it, with the same arithmetic.

    Examples
    --------
    >>> import tinytensor as tt
    >>> model = tt.nn.Linear(3, 1)
    >>> opt = tt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    >>> loss = (model(tt.ones(4, 3)) ** 2).mean()
    >>> opt.zero_grad()
    >>> loss.backward()
    >>> opt.step()
    """

    _param_shaped_state = ("momentum_buffer",)
    _torch_options: ClassVar[dict[str, object]] = {"maximize": False}

    def __init__(
        self,
        params: Params,
        lr: float,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        super().__init__(
            params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov)
        )

    def _check_hyperparameters(self, hp: ParamGroup) -> str | None:
        problem = check_nonnegative(hp, "lr", "momentum", "weight_decay")
        if problem:
            return problem
        dampening = hp["dampening"]
        if isinstance(dampening, bool) or not isinstance(dampening, (int, float)):
            return f"invalid dampening {dampening!r}: must be a number"
        if hp["nesterov"] and (hp["momentum"] <= 0 or dampening != 0):
            return f"Nesterov momentum needs momentum > 0 and dampening == 0, got {hp['momentum']} and {dampening}"
        return None

    def _step_group(self, group: ParamGroup) -> None:
        # the group's settings read once, not per parameter
        lr, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
        dampening, nesterov = group["dampening"], group["nesterov"]
        rest = None  # the parameters left for the per-parameter path (None: all)
        keys = ("momentum_buffer",) if momentum else ()
        ready = flat.prepare(self._flat_layouts, group, self.state, keys, (lr, wd, momentum, dampening))
        if ready is not None:
            layout, grads, rest = ready
            sgd_flat(layout, grads, lr, momentum, dampening, nesterov, wd)
            if layout.fresh:
                flat.adopt_fresh(layout, self.state, keys)
            self._marked(layout.params)
            if not rest:
                return
        for p, grad, state in self._with_grads(group, rest):
            data = p._data
            buf = sgd_update(
                backend_of(data), data, grad, state.get("momentum_buffer"), lr, momentum, dampening, nesterov, wd
            )
            if buf is not None:
                state["momentum_buffer"] = buf
