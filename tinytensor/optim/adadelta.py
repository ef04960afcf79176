"""Adadelta (Zeiler, 2012): per-element step sizes from running averages, as in PyTorch."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..argcheck import is_real
from ..array_types import Array
from ..backend import Backend
from ..devices import backend_of
from ..tensor import Tensor
from . import flat
from .optimizer import KERNEL_FLOATS, Optimizer, ParamGroup, Params, State, check_nonnegative

# One CUDA kernel per parameter and step (the backend compiles it; see Backend.kernel).
_KERNEL = (
    "ElementwiseKernel",
    "T grad, T lr, T rho, T eps, T wd",
    "T param, T square_avg, T acc_delta",
    """
    T g = wd != 0 ? grad + wd * param : grad;
    square_avg = rho * square_avg + (1 - rho) * (g * g);
    T delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g;
    acc_delta = rho * acc_delta + (1 - rho) * (delta * delta);
    param -= lr * delta;
    """,
    "tinytensor_adadelta",
)


def adadelta_update(
    backend: Backend,
    param: Array,
    grad: Array,
    square_avg: Array,
    acc_delta: Array,
    lr: float,
    rho: float,
    eps: float,
    wd: float,
) -> None:
    """PyTorch's Adadelta update of the array ``param`` and its running averages ``square_avg`` and
    ``acc_delta``, in place. One kernel where the backend compiles them, else the array-API form."""
    kernel = backend.kernel(_KERNEL)
    if kernel is not None and param.dtype in KERNEL_FLOATS:
        t = param.dtype.type
        grad = grad.astype(param.dtype, copy=False)  # the kernel takes one T; numpy would promote
        with backend.device_scope(param):
            kernel(grad, t(lr), t(rho), t(eps), t(wd), param, square_avg, acc_delta)
        return
    xp = backend.xp
    with backend.device_scope(param):
        if wd:
            grad = grad + wd * param
        square_avg *= rho
        square_avg += (1 - rho) * (grad * grad)
        delta = xp.sqrt(acc_delta + eps) / xp.sqrt(square_avg + eps) * grad
        acc_delta *= rho
        acc_delta += (1 - rho) * (delta * delta)
        param -= lr * delta


def adadelta_flat(
    layout: flat.FlatLayout,
    grads: list[NDArray[Any]],
    delta: NDArray[Any],
    lr: float,
    rho: float,
    eps: float,
    wd: float,
) -> None:
    """``adadelta_update`` for every parameter of a flat layout (``optim.flat``) at once: the same
    arithmetic, operation for operation, over the flat arrays. ``delta`` is a flat array of the
    layout's size and dtype, overwritten: the update needs one more temporary than the layout has."""
    flat.gather(layout, grads, wd)
    g, scratch = layout.grad, layout.scratch
    square_avg = layout.state["square_avg"][0]
    acc_delta = layout.state["acc_delta"][0]
    square_avg *= rho
    np.multiply(g, g, out=scratch)
    scratch *= 1 - rho
    square_avg += scratch
    np.add(acc_delta, eps, out=delta)
    np.sqrt(delta, out=delta)
    np.add(square_avg, eps, out=scratch)
    np.sqrt(scratch, out=scratch)
    delta /= scratch
    delta *= g
    acc_delta *= rho
    np.multiply(delta, delta, out=scratch)
    scratch *= 1 - rho
    acc_delta += scratch
    np.multiply(delta, lr, out=scratch)
    flat.apply(layout)


class Adadelta(Optimizer):
    """Adadelta, with PyTorch's update rule: each element's step is scaled by the ratio of the
    running RMS of past updates to that of past gradients, so ``lr`` (1.0 by default) only scales it.

    For each parameter ``p`` with gradient ``g``, at each ``step()``::

        g = g + weight_decay * p
        square_avg = rho * square_avg + (1 - rho) * g**2
        delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta**2
        p = p - lr * delta

    ``square_avg`` and ``acc_delta`` start at zero; they and the step count are the state
    ``"square_avg"``, ``"acc_delta"`` and ``"step"``, as in PyTorch's state dict (whose step count,
    a 0-d tensor there, loads as an int).

    Parameters
    ----------
    params : iterable
        The tensors to optimize, ``(name, tensor)`` pairs, or parameter groups (dicts), as
        ``Optimizer`` takes them.
    lr : float, default 1.0
        The factor applied to each update, >= 0.
    rho : float, default 0.9
        The decay rate of both running averages, in [0, 1].
    eps : float, default 1e-6
        Added inside both square roots, >= 0.
    weight_decay : float, default 0
        The L2 penalty, >= 0 (added to the gradient).

    PyTorch's keyword-only ``foreach``, ``maximize``, ``capturable`` and ``differentiable`` do not
    exist here; a PyTorch state dict loads with any of ``foreach``, ``capturable`` and
    ``differentiable``, and with ``maximize`` False (a ValueError names it otherwise).

    Examples
    --------
    >>> import tinytensor as tt
    >>> model = tt.nn.Linear(3, 1)
    >>> opt = tt.optim.Adadelta(model.parameters())
    >>> opt.zero_grad()
    >>> (model(tt.ones(4, 3)) ** 2).mean().backward()
    >>> opt.step()
    >>> sorted(opt.state_dict()["state"][0])
    ['acc_delta', 'square_avg', 'step']
    """

    _param_shaped_state = ("square_avg", "acc_delta")
    _torch_options: ClassVar[dict[str, object]] = {"maximize": False}
    _KEYS = ("square_avg", "acc_delta")

    def __init__(
        self,
        params: Params,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
    ) -> None:
        # the flat step's extra temporary per group (id(group) -> array), reused while it fits
        self._flat_deltas: dict[int, NDArray[Any]] = {}
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay))

    def _check_hyperparameters(self, hp: ParamGroup) -> str | None:
        problem = check_nonnegative(hp, "lr", "eps", "weight_decay")
        if problem:
            return problem
        rho = hp["rho"]
        if not is_real(rho) or not 0 <= rho <= 1:
            return f"invalid rho {rho!r}: must be a number in [0, 1]"
        return None

    def _step_group(self, group: ParamGroup) -> None:
        lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
        rest = None  # the parameters left for the per-parameter path (None: all)
        ready = flat.prepare(self._flat_layouts, group, self.state, self._KEYS, (lr, rho, eps, wd))
        if ready is not None:
            layout, grads, rest = ready
            delta = self._flat_deltas.get(id(group))
            if delta is None or delta.shape != layout.grad.shape or delta.dtype != layout.dtype:
                delta = self._flat_deltas[id(group)] = np.empty_like(layout.grad)
            # zero state is the first step's: fresh parameters need nothing special
            adadelta_flat(layout, grads, delta, lr, rho, eps, wd)
            flat.adopt_fresh(layout, self.state, self._KEYS)
            for p in layout.params:
                state = self.state[id(p)]
                state["step"] = state.get("step", 0) + 1
            self._marked(layout.params)
            if not rest:
                return
        update = self._update
        for p, grad, state in self._with_grads(group, rest):
            update(p, grad, state, group)

    def _update(self, p: Tensor, grad: Array, state: State, group: ParamGroup) -> None:
        data = p._data
        backend = backend_of(data)
        if "step" not in state:
            state["step"] = 0
            # on the parameter's device (CuPy's zeros_like would use the current one)
            state["square_avg"] = backend.zeros(data.shape, data.dtype, data)
            state["acc_delta"] = backend.zeros(data.shape, data.dtype, data)
        state["step"] += 1
        adadelta_update(
            backend,
            data,
            grad,
            state["square_avg"],
            state["acc_delta"],
            group["lr"],
            group["rho"],
            group["eps"],
            group["weight_decay"],
        )

    def __getstate__(self) -> dict[str, Any]:
        # the temporaries hold nothing between steps: a copy (pickle, deepcopy) makes its own
        state = super().__getstate__()
        state["_flat_deltas"] = {}
        return state
