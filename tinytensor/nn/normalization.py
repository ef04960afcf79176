"""Batch normalization layers: ``BatchNorm1d`` (``LayerNorm`` is in ``layers.py``)."""

from __future__ import annotations

import numpy as np

from .. import creation
from ..argcheck import is_real
from ..array_types import DType
from ..autograd import no_grad
from ..ops import normalization
from ..parameter import Parameter
from ..tensor import Tensor
from .base import Module
from .layers import size_arg


class BatchNorm1d(Module):
    """Batch normalization over the channels of (N, C) or (N, C, L) input, as PyTorch's.

    In training mode it normalizes each channel with the batch's mean and (biased) variance and
    updates ``running_mean`` and ``running_var`` (with the unbiased variance, as PyTorch),
    counting batches in ``num_batches_tracked``; in eval mode it normalizes with the running
    statistics. The running statistics and the count are buffers: saved in the state dict and
    moved by ``to()``.

    Parameters
    ----------
    num_features : int
        C, the number of channels.
    eps : float
        Added to the variance, > 0 (default 1e-5).
    momentum : float or None
        The weight of each new batch in the running statistics (default 0.1); None: their
        cumulative average over the batches so far.
    affine : bool
        True (default): a learned ``weight`` (ones) and ``bias`` (zeros) of shape (C,).
    track_running_stats : bool
        False: no running statistics (the buffers are None); the batch's statistics are used in
        both modes.
    device, dtype
        Where and in which floating dtype the parameters and running statistics are made.
    bias : bool
        False: no ``bias`` even with ``affine`` (keyword-only).
    """

    # annotations only (Module.__setattr__ registers the values): running statistics are None
    # without track_running_stats, weight and bias without affine
    num_features: int
    eps: float
    momentum: float | None
    affine: bool
    track_running_stats: bool
    weight: Parameter | None
    bias: Parameter | None
    running_mean: Tensor | None
    running_var: Tensor | None
    num_batches_tracked: Tensor | None

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: str | None = None,
        dtype: DType | str | None = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        num_features = size_arg("BatchNorm1d", "num_features", num_features)
        if not is_real(eps) or not eps > 0:
            raise ValueError(f"BatchNorm1d(): eps must be a positive number, got {eps!r}")
        if momentum is not None and not is_real(momentum):
            raise TypeError(f"BatchNorm1d(): momentum must be a number or None, got {type(momentum).__name__}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(creation.ones(num_features, dtype=dtype, device=device)) if affine else None
        self.bias = Parameter(creation.zeros(num_features, dtype=dtype, device=device)) if affine and bias else None
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", creation.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", creation.zeros((), dtype=np.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches tracked."""
        for stat, value in ((self.running_mean, 0), (self.running_var, 1), (self.num_batches_tracked, 0)):
            if stat is not None:
                stat.fill_(value)

    def reset_parameters(self) -> None:
        """``reset_running_stats()``, then weight 1 and bias 0."""
        self.reset_running_stats()
        with no_grad():
            if self.weight is not None:
                self.weight.fill_(1)
            if self.bias is not None:
                self.bias.zero_()

    def forward(self, x: Tensor) -> Tensor:
        """``x`` normalized per channel (axis 1), scaled and shifted; in training mode, the
        running statistics are updated too."""
        if x.ndim not in (2, 3):
            raise ValueError(f"BatchNorm1d: expected 2D or 3D input (got {x.ndim}D input)")
        factor = 0.0 if self.momentum is None else self.momentum
        tracked = self.num_batches_tracked
        if self.training and self.track_running_stats and tracked is not None:
            tracked.add_(1)
            if self.momentum is None:  # the cumulative average: the n-th batch weighs 1/n
                factor = 1.0 / float(tracked.item())
        # eval mode without running statistics uses the batch's, as PyTorch
        use_batch = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return normalization.batch_norm(
            x,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )

    def extra_repr(self) -> str:
        """The constructor's settings, as PyTorch's repr shows them."""
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


__all__ = ["BatchNorm1d"]
