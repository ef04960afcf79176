"""Building blocks of pytinytensor 1.x's models: ``ResidualBlock``, ResNet's basic block."""

from __future__ import annotations

from ..tensor import Tensor
from .activations import ReLU
from .base import Module
from .conv import Conv2d
from .normalization import BatchNorm2d


class ResidualBlock(Module):
    """ResNet's basic block, as pytinytensor 1.x built it: ``relu(bn2(conv2(relu(bn1(conv1(x))))) +
    shortcut(x))``.

    ``conv1`` is a 3x3 convolution with ``stride`` (padding 1), ``conv2`` a 3x3 one with stride 1;
    both have biases, as 1.x's. The shortcut is ``x`` itself, or, when ``stride`` is not 1 or the
    channels change, ``downsample``: a 1x1 convolution with ``stride`` (1.x's, with a bias and no
    batch normalization; None otherwise). The names (``conv1``, ``bn1``, ``conv2``, ``bn2``,
    ``relu``, ``downsample``) are 1.x's, so 1.x checkpoints load.

    Parameters
    ----------
    in_channels, out_channels : int
        The channels of the input and of the output.
    stride : int
        ``conv1``'s (and the shortcut's) stride: 2 halves the height and width (default 1).

    Examples
    --------
    >>> import tinytensor as tt
    >>> block = tt.nn.ResidualBlock(4, 8, stride=2)
    >>> block(tt.randn(2, 4, 8, 8)).shape
    (2, 8, 4, 4)
    >>> block.downsample
    Conv2d(4, 8, kernel_size=(1, 1), stride=(2, 2))
    """

    downsample: Conv2d | None

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1)
        self.bn1 = BatchNorm2d(out_channels)
        self.conv2 = Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.bn2 = BatchNorm2d(out_channels)
        self.relu = ReLU()
        if stride != 1 or in_channels != out_channels:
            self.downsample = Conv2d(in_channels, out_channels, kernel_size=1, stride=stride, padding=0)
        else:
            self.downsample = None

    def forward(self, x: Tensor) -> Tensor:
        """The block's output: the residual branch plus the shortcut, through ReLU."""
        out: Tensor = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut: Tensor = x if self.downsample is None else self.downsample(x)
        out = self.relu(out + shortcut)
        return out


__all__ = ["ResidualBlock"]
