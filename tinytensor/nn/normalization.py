"""Normalization layers: ``BatchNorm1d`` and ``BatchNorm2d`` (one base, ``_BatchNorm``), ``GroupNorm``
(``LayerNorm`` is in ``layers.py``).

pytinytensor 1.x's ``BatchNorm2d`` named its parameters ``gamma`` and ``beta``, of shape (1, C, 1, 1),
and kept its running statistics out of its state dict: a 1.x checkpoint loads its gamma and beta as
``weight`` and ``bias`` (C,), and the layer keeps the running statistics it has (those of a new layer:
mean 0, variance 1, until it trains), as 1.x's own ``load`` did (``nn.legacy_state``).
"""

from __future__ import annotations

import numpy as np

from .. import creation
from ..argcheck import is_real
from ..array_types import Array, DType
from ..autograd import no_grad
from ..ops import normalization
from ..parameter import Parameter
from ..tensor import Tensor
from .base import Module
from .layers import size_arg


class _BatchNorm(Module):
    """What ``BatchNorm1d`` and ``BatchNorm2d`` share (their docstrings say what they do); each
    says which inputs it takes (``_check_input_dim``)."""

    # state that pytinytensor 1.x did not save: a 1.x checkpoint without it keeps the layer's own
    # (nn.legacy_state reads this)
    _1X_UNSAVED = ("running_mean", "running_var", "num_batches_tracked")

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
        name = type(self).__name__
        num_features = size_arg(name, "num_features", num_features)
        if not is_real(eps) or not eps > 0:
            raise ValueError(f"{name}(): eps must be a positive number, got {eps!r}")
        if momentum is not None and not is_real(momentum):
            raise TypeError(f"{name}(): momentum must be a number or None, got {type(momentum).__name__}")
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
        self._check_input_dim(x)
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

    def _check_input_dim(self, x: Tensor) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not say which inputs it takes")

    def _from_1x(self, name: str, array: Array) -> tuple[str, Array]:
        # 1.x's BatchNorm2d: gamma and beta of shape (1, C, 1, 1)
        if name in ("gamma", "beta"):
            return {"gamma": "weight", "beta": "bias"}[name], array.reshape(-1)
        return name, array

    def extra_repr(self) -> str:
        """The constructor's settings, as PyTorch's repr shows them."""
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
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

    def _check_input_dim(self, x: Tensor) -> None:
        if x.ndim not in (2, 3):
            raise ValueError(f"BatchNorm1d: expected 2D or 3D input (got {x.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over the channels of (N, C, H, W) input, as PyTorch's.

    The arguments, the running statistics and the modes are ``BatchNorm1d``'s; each channel's
    statistics are taken over the batch and every position.

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
        False: no running statistics; the batch's statistics are used in both modes.
    device, dtype
        Where and in which floating dtype the parameters and running statistics are made.
    bias : bool
        False: no ``bias`` even with ``affine`` (keyword-only).

    Notes
    -----
    A pytinytensor 1.x checkpoint holds ``gamma`` and ``beta`` (1, C, 1, 1) and no running
    statistics: it loads as ``weight`` and ``bias``, and the layer keeps its own running
    statistics, as 1.x did.

    Examples
    --------
    >>> import tinytensor as tt
    >>> bn = tt.nn.BatchNorm2d(3)
    >>> bn(tt.randn(2, 3, 4, 4)).shape
    (2, 3, 4, 4)
    >>> bn.running_mean.shape, int(bn.num_batches_tracked.item())
    ((3,), 1)
    """

    def _check_input_dim(self, x: Tensor) -> None:
        if x.ndim != 4:
            raise ValueError(f"BatchNorm2d: expected 4D input (got {x.ndim}D input)")


class GroupNorm(Module):
    """Group normalization, as PyTorch's: each sample's channels are split into ``num_groups``
    groups of consecutive channels, each normalized with its own mean and variance (over its
    channels and every position), then scaled and shifted per channel. The same in training and
    eval mode (no running statistics).

    Parameters
    ----------
    num_groups : int
        The number of groups; ``num_channels`` must be divisible by it.
    num_channels : int
        C, the number of channels of the (N, C, ...) input.
    eps : float
        Added to the variance, > 0 (default 1e-5).
    affine : bool
        True (default): a learned ``weight`` (ones) and ``bias`` (zeros) of shape (C,).
    device, dtype
        Where and in which floating dtype the parameters are made.
    bias : bool
        False: no ``bias`` even with ``affine`` (keyword-only).

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.nn.GroupNorm(2, 4)(tt.randn(3, 4, 5, 5)).shape
    (3, 4, 5, 5)
    """

    weight: Parameter | None
    bias: Parameter | None

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: str | None = None,
        dtype: DType | str | None = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        num_groups = size_arg("GroupNorm", "num_groups", num_groups)
        num_channels = size_arg("GroupNorm", "num_channels", num_channels)
        if num_groups == 0 or num_channels % num_groups:
            raise ValueError(
                f"GroupNorm(): num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        if not is_real(eps) or not eps > 0:
            raise ValueError(f"GroupNorm(): eps must be a positive number, got {eps!r}")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.weight = Parameter(creation.ones(num_channels, dtype=dtype, device=device)) if affine else None
        self.bias = Parameter(creation.zeros(num_channels, dtype=dtype, device=device)) if affine and bias else None

    def forward(self, x: Tensor) -> Tensor:
        """``x`` normalized per sample and group, scaled and shifted per channel."""
        return normalization.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """``num_groups, num_channels, eps=..., affine=..., bias=...``, as PyTorch's repr."""
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


__all__ = ["BatchNorm1d", "BatchNorm2d", "GroupNorm"]
