"""Loss modules (PyTorch's signatures), also 1.x's ``tinytensor.nn.losses``.

Each is a thin Module over its function in ``tinytensor.ops`` (``loss_functions``,
``pointwise_losses``); ``loss(input, target)``. A class or element ``weight`` is the only positional
option, as PyTorch's first; the rest are keyword-only where PyTorch's next positional arguments are
its deprecated ``size_average`` and ``reduce`` (which do not exist here), so a positional call fails
instead of being misread. A ``weight`` is a buffer: saved in the state dict and moved by ``to()``.
"""

from __future__ import annotations

from ..ops import loss_functions as loss_ops
from ..ops import pointwise_losses
from ..tensor import Tensor
from .base import Module


class _Loss(Module):
    """A loss with a ``reduction``; the repr shows the options that differ from the defaults."""

    _defaults: dict = {"reduction": "mean"}

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        loss_ops.check_reduction(reduction, type(self).__name__)
        self.reduction = reduction

    def extra_repr(self) -> str:
        changed = {k: getattr(self, k) for k, v in self._defaults.items() if getattr(self, k) != v}
        return ", ".join(f"{k}={v!r}" for k, v in changed.items())


class _WeightedLoss(_Loss):
    """A loss with an optional ``weight`` tensor, registered as a buffer (as PyTorch's)."""

    weight: Tensor | None  # set by register_buffer

    def __init__(self, weight=None, reduction: str = "mean"):
        super().__init__(reduction)
        if weight is not None and not isinstance(weight, Tensor):
            raise TypeError(f"{type(self).__name__}: weight must be a Tensor or None, got {type(weight).__name__}")
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error: ``(input - target) ** 2``, reduced."""

    def __init__(self, *, reduction: str = "mean"):
        super().__init__(reduction)

    def forward(self, input, target):  # noqa: A002 - PyTorch's argument names
        return pointwise_losses.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error: ``|input - target|``, reduced."""

    def __init__(self, *, reduction: str = "mean"):
        super().__init__(reduction)

    def forward(self, input, target):  # noqa: A002
        return pointwise_losses.l1_loss(input, target, self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Softmax cross-entropy of (N, C) logits against (N,) integer class indices.

    ``weight`` (C,) weighs each class (the mean divides by the sum of the targets' weights);
    targets equal to ``ignore_index`` are left out (of the mean too); ``label_smoothing`` in
    [0, 1] mixes each target with the uniform distribution over the classes.
    """

    _defaults = {"ignore_index": -100, "reduction": "mean", "label_smoothing": 0.0}

    def __init__(self, weight=None, *, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, reduction)
        name = type(self).__name__
        loss_ops.check_ignore_index(ignore_index, name)
        loss_ops.check_label_smoothing(label_smoothing, name)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):  # noqa: A002
        return loss_ops.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of (N, C) log-probabilities at (N,) class indices; ``weight`` and
    ``ignore_index`` as in CrossEntropyLoss."""

    _defaults = {"ignore_index": -100, "reduction": "mean"}

    def __init__(self, weight=None, *, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(weight, reduction)
        loss_ops.check_ignore_index(ignore_index, type(self).__name__)
        self.ignore_index = ignore_index

    def forward(self, input, target):  # noqa: A002
        return loss_ops.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities in [0, 1] (each log clamped to >= -100, as PyTorch);
    ``weight`` broadcasts to the input's shape. On logits, BCEWithLogitsLoss is the stable form."""

    def __init__(self, weight=None, *, reduction: str = "mean"):
        super().__init__(weight, reduction)

    def forward(self, input, target):  # noqa: A002
        return pointwise_losses.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below ``beta`` (halved, divided by beta), absolute error minus ``beta / 2`` above."""

    _defaults = {"reduction": "mean", "beta": 1.0}

    def __init__(self, *, reduction: str = "mean", beta: float = 1.0):
        super().__init__(reduction)
        pointwise_losses.check_positive(type(self).__name__, "beta", beta, allow_zero=True)
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        return pointwise_losses.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below ``delta`` (halved), ``delta`` times (absolute error minus ``delta / 2``) above."""

    _defaults = {"reduction": "mean", "delta": 1.0}

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction)
        pointwise_losses.check_positive(type(self).__name__, "delta", delta, allow_zero=False)
        self.delta = delta

    def forward(self, input, target):  # noqa: A002
        return pointwise_losses.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy on logits (a sigmoid folded in, stable for any magnitude)."""

    def __init__(self, *, reduction: str = "mean"):
        super().__init__(reduction)

    def forward(self, input, target):  # noqa: A002
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
