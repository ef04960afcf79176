"""ResNet, ResNet-18 and ResNet-34, as pytinytensor 1.x built them from ``ResidualBlock``."""

from __future__ import annotations

from collections.abc import Sequence

from ..nn.activations import ReLU
from ..nn.base import Module
from ..nn.blocks import ResidualBlock
from ..nn.conv import Conv2d
from ..nn.layers import Flatten, Linear, Sequential
from ..nn.normalization import BatchNorm2d
from ..nn.pooling import GlobalAvgPool2d, MaxPool2d
from ..tensor import Tensor

_STAGE_CHANNELS = (64, 128, 256, 512)


class ResNet(Module):
    """A residual network (He et al., 2015), as pytinytensor 1.x's: a stem, four stages of
    ``ResidualBlock`` (64, 128, 256 and 512 channels; each stage after the first halves the
    height and width), global average pooling and a Linear classifier.

    The layers are ``self.net``, a Sequential, in 1.x's order: the stem (``small_input``:
    Conv2d(in_channels, 64, 3, padding=1), BatchNorm2d, ReLU; else Conv2d(in_channels, 64, 7,
    stride=2, padding=3), BatchNorm2d, ReLU, MaxPool2d(3, stride=2, padding=1)), the blocks one
    after another, GlobalAvgPool2d, Flatten, Linear(512, ``num_classes``). The convolutions have
    biases and the shortcuts are 1x1 convolutions without batch normalization, as 1.x's (so the
    counts differ from torchvision's: ResNet18 has 11,176,970 parameters here).

    Parameters
    ----------
    num_classes : int
        The number of logits per image (default 10).
    in_channels : int
        The images' channels (default 3).
    blocks_per_stage : sequence of 4 ints
        The blocks of each stage: (2, 2, 2, 2) is ResNet-18 (default), (3, 4, 6, 3) ResNet-34.
    small_input : bool
        True (default): the 3x3 stem for small images (CIFAR, MNIST); False: the 7x7 stride-2
        stem and max pooling for large ones (ImageNet).

    Examples
    --------
    >>> import tinytensor as tt
    >>> from tinytensor import models
    >>> model = models.ResNet(blocks_per_stage=(1, 1, 1, 1))
    >>> model(tt.randn(2, 3, 8, 8)).shape
    (2, 10)
    """

    def __init__(
        self,
        num_classes: int = 10,
        in_channels: int = 3,
        blocks_per_stage: Sequence[int] = (2, 2, 2, 2),
        small_input: bool = True,
    ) -> None:
        super().__init__()
        if len(blocks_per_stage) != len(_STAGE_CHANNELS):
            raise ValueError(f"ResNet(): blocks_per_stage must have 4 entries, got {tuple(blocks_per_stage)}")
        layers: list[Module]
        if small_input:
            layers = [Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1), BatchNorm2d(64), ReLU()]
        else:
            layers = [
                Conv2d(in_channels, 64, kernel_size=7, stride=2, padding=3),
                BatchNorm2d(64),
                ReLU(),
                MaxPool2d(kernel_size=3, stride=2, padding=1),
            ]
        channels = 64
        for stage, (out_channels, blocks) in enumerate(zip(_STAGE_CHANNELS, blocks_per_stage, strict=True)):
            layers.append(ResidualBlock(channels, out_channels, stride=1 if stage == 0 else 2))
            layers += [ResidualBlock(out_channels, out_channels, stride=1) for _ in range(blocks - 1)]
            channels = out_channels
        layers += [GlobalAvgPool2d(), Flatten(), Linear(512, num_classes)]
        self.net = Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        """The logits, (N, num_classes), of (N, in_channels, H, W) images."""
        out: Tensor = self.net(x)
        return out


def ResNet18(num_classes: int = 10, in_channels: int = 3, small_input: bool = True) -> ResNet:  # noqa: N802 - 1.x's name
    """ResNet-18 as pytinytensor 1.x built it: ``ResNet`` with two blocks per stage (11,176,970
    parameters with the defaults)."""
    return ResNet(num_classes, in_channels, blocks_per_stage=(2, 2, 2, 2), small_input=small_input)


def ResNet34(num_classes: int = 10, in_channels: int = 3, small_input: bool = True) -> ResNet:  # noqa: N802 - 1.x's name
    """ResNet-34 as pytinytensor 1.x built it: ``ResNet`` with (3, 4, 6, 3) blocks per stage
    (21,288,842 parameters with the defaults)."""
    return ResNet(num_classes, in_channels, blocks_per_stage=(3, 4, 6, 3), small_input=small_input)


__all__ = ["ResNet", "ResNet18", "ResNet34"]
