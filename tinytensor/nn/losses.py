"""Loss modules (PyTorch's signatures), also 1.x's ``tinytensor.nn.losses``.

Each is a thin Module over its function in ``tinytensor.ops`` (``loss_functions``,
``pointwise_losses``); ``loss(input, target)``. A class or element ``weight`` is the only positional
option, as PyTorch's first; the rest are keyword-only where PyTorch's next positional arguments are
its deprecated ``size_average`` and ``reduce`` (which do not exist here), so a positional call fails
instead of being misread. A ``weight`` is a buffer: saved in the state dict and moved by ``to()``.
"""

from __future__ import annotations

from typing import ClassVar

from ..ops import loss_functions as loss_ops
from ..ops import pointwise_losses
from ..tensor import Tensor
from .base import Module


class _Loss(Module):
    """A loss with a ``reduction``; the repr shows the options that differ from the defaults."""

    _defaults: ClassVar[dict[str, object]] = {"reduction": "mean"}

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        loss_ops.check_reduction(reduction, type(self).__name__)
        self.reduction = reduction

    def extra_repr(self) -> str:
        """The options that differ from their defaults, as ``reduction='sum'``."""
        changed = {k: getattr(self, k) for k, v in self._defaults.items() if getattr(self, k) != v}
        return ", ".join(f"{k}={v!r}" for k, v in changed.items())


class _WeightedLoss(_Loss):
    """A loss with an optional ``weight`` tensor, registered as a buffer (as PyTorch's)."""

    weight: Tensor | None  # set by register_buffer

    def __init__(self, weight: object = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        if weight is not None and not isinstance(weight, Tensor):
            raise TypeError(f"{type(self).__name__}: weight must be a Tensor or None, got {type(weight).__name__}")
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error: ``(input - target) ** 2``, reduced.

    Parameters
    ----------
    reduction : str
        ``"mean"`` (default) or ``"sum"`` over the elements, or ``"none"``: the unreduced
        loss, of the input's shape.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.nn.MSELoss()(tt.tensor([1.0, 2.0]), tt.tensor([1.0, 4.0])).item()
    2.0
    """

    def __init__(self, *, reduction: str = "mean") -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument names
        """The loss of ``input`` against ``target`` (broadcast to each other), reduced."""
        return pointwise_losses.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error: ``|input - target|``, reduced.

    Parameters
    ----------
    reduction : str
        ``"mean"`` (default) or ``"sum"`` over the elements, or ``"none"``: the unreduced
        loss, of the input's shape.
    """

    def __init__(self, *, reduction: str = "mean") -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss of ``input`` against ``target`` (broadcast to each other), reduced."""
        return pointwise_losses.l1_loss(input, target, self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Softmax cross-entropy of (N, C) logits against (N,) integer class indices.

    ``input`` holds unnormalized scores (logits), not probabilities: the log-softmax is taken
    inside. ``target`` holds class indices in ``0..C-1``. PyTorch's class-probability targets
    (a float target of the input's shape) and its extra spatial axes ((N, C, d1, ...)) are not
    supported here.

    Parameters
    ----------
    weight : Tensor or None
        (C,): the weight of each class; the mean then divides by the sum of the targets'
        weights. A buffer: saved in the state dict and moved by ``to()``.
    ignore_index : int
        Targets equal to it are left out, of the mean too (default -100).
    reduction : str
        ``"mean"`` (default), ``"sum"``, or ``"none"``: one loss per sample, shape (N,).
    label_smoothing : float
        In [0, 1]: mixes each target with the uniform distribution over the classes (default 0).

    Examples
    --------
    >>> import tinytensor as tt
    >>> logits = tt.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
    >>> loss = tt.nn.CrossEntropyLoss()(logits, tt.tensor([0, 2]))
    >>> round(loss.item(), 4)
    0.1672
    """

    _defaults = {"ignore_index": -100, "reduction": "mean", "label_smoothing": 0.0}

    def __init__(
        self,
        weight: Tensor | None = None,
        *,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, reduction)
        name = type(self).__name__
        loss_ops.check_ignore_index(ignore_index, name)
        loss_ops.check_label_smoothing(label_smoothing, name)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss of (N, C) logits ``input`` at (N,) class indices ``target``, reduced."""
        return loss_ops.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of (N, C) log-probabilities at (N,) class indices: ``-input[n,
    target[n]]``, weighted and reduced. With LogSoftmax before it, it is CrossEntropyLoss.

    Parameters
    ----------
    weight : Tensor or None
        (C,): the weight of each class, as in CrossEntropyLoss.
    ignore_index : int
        Targets equal to it are left out, of the mean too (default -100).
    reduction : str
        ``"mean"`` (default), ``"sum"``, or ``"none"``: one loss per sample, shape (N,).
    """

    _defaults = {"ignore_index": -100, "reduction": "mean"}

    def __init__(self, weight: Tensor | None = None, *, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__(weight, reduction)
        loss_ops.check_ignore_index(ignore_index, type(self).__name__)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss of (N, C) log-probabilities ``input`` at (N,) class indices ``target``, reduced."""
        return loss_ops.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities: ``-(target * log(input) + (1 - target) * log(1 -
    input))``, each log clamped to >= -100 as in PyTorch, reduced. On logits, BCEWithLogitsLoss
    is the stable form.

    Parameters
    ----------
    weight : Tensor or None
        A weight per element, broadcast to the input's shape (a buffer).
    reduction : str
        ``"mean"`` (default) or ``"sum"`` over the elements, or ``"none"``: the unreduced
        loss, of the input's shape.
    """

    def __init__(self, weight: Tensor | None = None, *, reduction: str = "mean") -> None:
        super().__init__(weight, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss of probabilities ``input`` (in [0, 1]) against ``target`` (of its shape), reduced."""
        return pointwise_losses.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (``d = input -
    target``), reduced; ``beta=0`` gives the L1 loss.

    Parameters
    ----------
    reduction : str
        ``"mean"`` (default) or ``"sum"`` over the elements, or ``"none"``: the unreduced
        loss, of the input's shape.
    beta : float
        Where the loss turns from squared to absolute, >= 0 (default 1.0).
    """

    _defaults = {"reduction": "mean", "beta": 1.0}

    def __init__(self, *, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction)
        pointwise_losses.check_positive(type(self).__name__, "beta", beta, allow_zero=True)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss of ``input`` against ``target`` (broadcast to each other), reduced."""
        return pointwise_losses.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)`` (``d = input -
    target``), reduced: SmoothL1Loss times ``delta``, with ``beta = delta``.

    Parameters
    ----------
    reduction : str
        ``"mean"`` (default) or ``"sum"`` over the elements, or ``"none"``: the unreduced
        loss, of the input's shape.
    delta : float
        Where the loss turns from squared to linear, > 0 (default 1.0).
    """

    _defaults = {"reduction": "mean", "delta": 1.0}

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        pointwise_losses.check_positive(type(self).__name__, "delta", delta, allow_zero=False)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss of ``input`` against ``target`` (broadcast to each other), reduced."""
        return pointwise_losses.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy on logits: BCELoss of ``sigmoid(input)``, computed in one stable
    expression for any magnitude. PyTorch's ``weight`` and ``pos_weight`` do not exist here.

    Parameters
    ----------
    reduction : str
        ``"mean"`` (default) or ``"sum"`` over the elements, or ``"none"``: the unreduced
        loss, of the input's shape.
    """

    def __init__(self, *, reduction: str = "mean") -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """The loss of logits ``input`` against targets in [0, 1] (of its shape), reduced."""
        return pointwise_losses.binary_cross_entropy_with_logits(input, target, self.reduction)


__all__ = [
    "MSELoss",
    "L1Loss",
    "CrossEntropyLoss",
    "NLLLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "SmoothL1Loss",
    "HuberLoss",
]
