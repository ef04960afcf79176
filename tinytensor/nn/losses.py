"""Loss modules (PyTorch's signatures), also 1.x's ``tinytensor.nn.losses``.

Each is a thin Module over the function in ``tinytensor.ops.loss_functions``; ``loss(input, target)``.
Options are keyword-only: PyTorch's first positional arguments (``weight``, ``size_average``)
do not exist here, so a positional call fails instead of being misread.
"""

from __future__ import annotations

from ..ops import loss_functions as loss_ops
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


class MSELoss(_Loss):
    """Mean squared error: ``(input - target) ** 2``, reduced."""

    def __init__(self, *, reduction: str = "mean"):
        super().__init__(reduction)

    def forward(self, input, target):  # noqa: A002 - PyTorch's argument names
        return loss_ops.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error: ``|input - target|``, reduced."""

    def __init__(self, *, reduction: str = "mean"):
        super().__init__(reduction)

    def forward(self, input, target):  # noqa: A002
        return loss_ops.l1_loss(input, target, self.reduction)


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy of (N, C) logits against (N,) integer class indices.

    Targets equal to ``ignore_index`` are left out (of the mean too); ``label_smoothing`` in
    [0, 1] mixes each target with the uniform distribution over the classes.
    """

    _defaults = {"ignore_index": -100, "reduction": "mean", "label_smoothing": 0.0}

    def __init__(self, *, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(reduction)
        name = type(self).__name__
        loss_ops.check_ignore_index(ignore_index, name)
        loss_ops.check_label_smoothing(label_smoothing, name)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):  # noqa: A002
        return loss_ops.cross_entropy(
            input, target, self.reduction, ignore_index=self.ignore_index, label_smoothing=self.label_smoothing
        )


class NLLLoss(_Loss):
    """Negative log-likelihood of (N, C) log-probabilities at (N,) class indices; ``ignore_index`` as above."""

    _defaults = {"ignore_index": -100, "reduction": "mean"}

    def __init__(self, *, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(reduction)
        loss_ops.check_ignore_index(ignore_index, type(self).__name__)
        self.ignore_index = ignore_index

    def forward(self, input, target):  # noqa: A002
        return loss_ops.nll_loss(input, target, self.reduction, ignore_index=self.ignore_index)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy on logits (a sigmoid folded in, stable for any magnitude)."""

    def __init__(self, *, reduction: str = "mean"):
        super().__init__(reduction)

    def forward(self, input, target):  # noqa: A002
        return loss_ops.binary_cross_entropy_with_logits(input, target, self.reduction)


__all__ = ["MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss"]
