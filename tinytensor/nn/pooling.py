"""Pooling, resampling and padding layers, as PyTorch's: ``MaxPool1d``, ``MaxPool2d``,
``AvgPool2d``, ``AdaptiveAvgPool2d``, ``AdaptiveMaxPool2d``, ``Upsample``, ``ZeroPad2d``; and
pytinytensor 1.x's ``GlobalAvgPool2d``. Each keeps its arguments as given (as PyTorch does) and
calls its ``nn.functional`` op, which checks them against the input.

This is also pytinytensor 1.x's module path for ``MaxPool2d``, ``AvgPool2d`` and
``GlobalAvgPool2d``. 1.x's ``MaxPool2d(kernel_size=2, stride=2, padding=0)`` and
``AvgPool2d(kernel_size=2, stride=2, padding=0)`` are the same calls here when the stride is
given or equals the kernel size (PyTorch's default stride is the kernel size); 1.x's defaults of
``kernel_size=2`` are kept, so ``MaxPool2d()`` still pools 2x2.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..argcheck import is_integral, is_real
from ..ops import pooling as ops_pooling
from ..ops import resample
from ..tensor import Tensor
from .base import Module

_Size = int | Sequence[int]
_OptionalSize = int | None | Sequence[int | None]


class MaxPool1d(Module):
    """The maximum over each window of (N, C, L) input (or unbatched (C, L)), as PyTorch's.

    Parameters
    ----------
    kernel_size : int
        The window's length.
    stride : int, optional
        The step between two windows (default: ``kernel_size``).
    padding : int
        Implicit -inf added on both sides, at most half the kernel size (default 0).
    dilation : int
        The step between two elements of a window (default 1).
    return_indices : bool
        True: also return the flat index (along L) of each maximum, for ``MaxUnpool1d`` users.
    ceil_mode : bool
        True: a last, partial window counts (the output length rounds up).

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.nn.MaxPool1d(2)(tt.tensor([[[1.0, 3.0, 2.0, 0.0, 5.0]]])).tolist()
    [[[3.0, 2.0]]]
    """

    def __init__(
        self,
        kernel_size: _Size,
        stride: _Size | None = None,
        padding: _Size = 0,
        dilation: _Size = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:  # noqa: A002 - PyTorch's argument name
        """The pooled input; with ``return_indices``, ``(output, indices)``."""
        args = (input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)
        if self.return_indices:  # two calls: the op's return type follows return_indices' literal value
            return ops_pooling.max_pool1d(*args, return_indices=True)
        return ops_pooling.max_pool1d(*args, return_indices=False)

    def extra_repr(self) -> str:
        """``kernel_size=..., stride=..., padding=..., dilation=..., ceil_mode=...``, as PyTorch's."""
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool2d(MaxPool1d):
    """The maximum over each window of (N, C, H, W) input (or unbatched (C, H, W)), as PyTorch's.

    Parameters
    ----------
    kernel_size : int or tuple of 2 ints
        The window's height and width (default 2, pytinytensor 1.x's; PyTorch has no default).
    stride : int or tuple of 2 ints, optional
        The step between two windows (default: ``kernel_size``).
    padding : int or tuple of 2 ints
        Implicit -inf added on both sides of each axis, at most half the kernel size (default 0).
    dilation : int or tuple of 2 ints
        The step between two elements of a window (default 1).
    return_indices : bool
        True: also return the flat index (over H * W) of each maximum.
    ceil_mode : bool
        True: a last, partial window counts (the output size rounds up).

    Examples
    --------
    >>> import tinytensor as tt
    >>> pool = tt.nn.MaxPool2d(2)
    >>> pool(tt.randn(1, 3, 8, 8)).shape
    (1, 3, 4, 4)
    >>> pool
    MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    """

    def __init__(
        self,
        kernel_size: _Size = 2,
        stride: _Size | None = None,
        padding: _Size = 0,
        dilation: _Size = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__(kernel_size, stride, padding, dilation, return_indices, ceil_mode)

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:  # noqa: A002 - PyTorch's argument name
        """The pooled input; with ``return_indices``, ``(output, indices)``."""
        args = (input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)
        if self.return_indices:  # two calls: the op's return type follows return_indices' literal value
            return ops_pooling.max_pool2d(*args, return_indices=True)
        return ops_pooling.max_pool2d(*args, return_indices=False)


class AvgPool2d(Module):
    """The mean over each window of (N, C, H, W) input (or unbatched (C, H, W)), as PyTorch's.

    Parameters
    ----------
    kernel_size : int or tuple of 2 ints
        The window's height and width (default 2, pytinytensor 1.x's; PyTorch has no default).
    stride : int or tuple of 2 ints, optional
        The step between two windows (default: ``kernel_size``).
    padding : int or tuple of 2 ints
        Implicit zeros added on both sides of each axis, at most half the kernel size (default 0).
    ceil_mode : bool
        True: a last, partial window counts (the output size rounds up).
    count_include_pad : bool
        True (default): the padding zeros count in each window's divisor.
    divisor_override : int, optional
        Divide every window's sum by this instead.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.nn.AvgPool2d(2)(tt.ones(1, 1, 4, 4)).tolist()
    [[[[1.0, 1.0], [1.0, 1.0]]]]
    """

    def __init__(
        self,
        kernel_size: _Size = 2,
        stride: _Size | None = None,
        padding: _Size = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument name
        """The pooled input."""
        return ops_pooling.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        """``kernel_size=..., stride=..., padding=...``, as PyTorch's."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """The mean over windows that split (N, C, H, W) input (or unbatched (C, H, W)) into an
    ``output_size`` grid, as PyTorch's.

    Parameters
    ----------
    output_size : int, None or tuple of 2 (int or None)
        The output's (H_out, W_out); an int means a square; None keeps the input's size on that
        axis.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.nn.AdaptiveAvgPool2d((1, 1))(tt.randn(2, 3, 7, 5)).shape
    (2, 3, 1, 1)
    """

    def __init__(self, output_size: _OptionalSize) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument name
        """The pooled input."""
        return ops_pooling.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        """``output_size=...``."""
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    """The maximum over windows that split (N, C, H, W) input (or unbatched (C, H, W)) into an
    ``output_size`` grid, as PyTorch's.

    Parameters
    ----------
    output_size : int, None or tuple of 2 (int or None)
        The output's (H_out, W_out); an int means a square; None keeps the input's size on that
        axis.
    return_indices : bool
        True: also return the flat index (over H * W) of each maximum.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.nn.AdaptiveMaxPool2d(2)(tt.randn(2, 3, 7, 5)).shape
    (2, 3, 2, 2)
    """

    def __init__(self, output_size: _OptionalSize, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:  # noqa: A002 - PyTorch's argument name
        """The pooled input; with ``return_indices``, ``(output, indices)``."""
        if self.return_indices:  # two calls: the op's return type follows return_indices' literal value
            return ops_pooling.adaptive_max_pool2d(input, self.output_size, True)
        return ops_pooling.adaptive_max_pool2d(input, self.output_size, False)

    def extra_repr(self) -> str:
        """``output_size=...``, as PyTorch's."""
        return f"output_size={self.output_size}"


class GlobalAvgPool2d(Module):
    """pytinytensor 1.x's global average pooling: the mean of each channel of (N, C, H, W) input,
    as (N, C, 1, 1), 1.x's shape (``AdaptiveAvgPool2d(1)`` computes the same; follow it with
    ``Flatten()`` for (N, C)).

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.nn.GlobalAvgPool2d()(tt.ones(2, 3, 4, 4)).shape
    (2, 3, 1, 1)
    """

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """Each channel's mean over H and W, keeping them as axes of size 1."""
        if input.ndim != 4:
            raise ValueError(f"GlobalAvgPool2d: expected 4D input (N, C, H, W) (got {input.ndim}D input)")
        return input.mean(dim=(2, 3), keepdim=True)


class Upsample(Module):
    """Resize (N, C, L), (N, C, H, W) input to ``size``, or by ``scale_factor``, as PyTorch's
    (``nn.functional.interpolate`` does the work).

    Parameters
    ----------
    size : int or tuple of ints, optional
        The output's spatial size.
    scale_factor : float or tuple of floats, optional
        The multiplier of each spatial size (give ``size`` or this, not both).
    mode : str
        ``"nearest"`` (default) or ``"bilinear"`` (4-D input).
    align_corners : bool, optional
        For ``"bilinear"``: True aligns the corner pixels' centres of input and output; False (the
        default behaviour) treats pixels as areas, as PyTorch.
    recompute_scale_factor : bool, optional
        Passed to ``interpolate`` when given.

    Examples
    --------
    >>> import tinytensor as tt
    >>> up = tt.nn.Upsample(scale_factor=2)
    >>> up(tt.ones(1, 1, 2, 2)).shape
    (1, 1, 4, 4)
    >>> up
    Upsample(scale_factor=2.0, mode='nearest')
    """

    def __init__(
        self,
        size: _Size | None = None,
        scale_factor: float | Sequence[float] | None = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        # as PyTorch: kept as floats, which the repr shows
        if isinstance(scale_factor, (tuple, list)):
            self.scale_factor: float | tuple[float, ...] | None = tuple(_real("scale_factor", s) for s in scale_factor)
        else:
            self.scale_factor = _real("scale_factor", scale_factor) if scale_factor else None
        self.mode, self.align_corners, self.recompute_scale_factor = mode, align_corners, recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument name
        """The resized input."""
        extra = {} if self.recompute_scale_factor is None else {"recompute_scale_factor": self.recompute_scale_factor}
        return resample.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners, **extra)

    def extra_repr(self) -> str:
        """``scale_factor=...`` or ``size=...``, and ``mode=...``, as PyTorch's."""
        what = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{what}, mode={self.mode!r}"


def _real(name: str, value: object) -> float:
    if not is_real(value):
        raise TypeError(f"Upsample(): {name} must be a number or a tuple of numbers, got {value!r}")
    return float(value)


class ZeroPad2d(Module):
    """Pad the last two axes of (N, C, H, W) or (C, H, W) input with zeros, as PyTorch's.

    Parameters
    ----------
    padding : int or tuple of 4 ints
        (left, right, top, bottom); an int pads every side by it. Negative values crop.

    Examples
    --------
    >>> import tinytensor as tt
    >>> pad = tt.nn.ZeroPad2d((1, 0, 2, 0))
    >>> pad(tt.ones(1, 1, 2, 2)).shape
    (1, 1, 4, 3)
    >>> pad
    ZeroPad2d((1, 0, 2, 0))
    """

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__()
        sides = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * 4
        if len(sides) != 4 or not all(is_integral(p) for p in sides):
            raise TypeError(f"ZeroPad2d(): padding must be an int or a tuple of 4 ints, got {padding!r}")
        self.padding = tuple(int(p) for p in sides)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument name
        """The padded input."""
        return resample.pad(input, self.padding, "constant", 0.0)

    def extra_repr(self) -> str:
        """The padding, as PyTorch's."""
        return f"{self.padding}"


__all__ = [
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool2d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d",
    "GlobalAvgPool2d",
    "Upsample",
    "ZeroPad2d",
]
