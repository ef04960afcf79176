"""A VGG-style network for 32x32 images (CIFAR), as pytinytensor 1.x built it."""

from __future__ import annotations

from ..nn.activations import ReLU
from ..nn.base import Module
from ..nn.conv import Conv2d
from ..nn.layers import Flatten, Linear, Sequential
from ..nn.normalization import BatchNorm2d
from ..nn.pooling import MaxPool2d
from ..tensor import Tensor


def _vgg_block(in_channels: int, out_channels: int, num_convs: int) -> list[Module]:
    """``num_convs`` times (3x3 Conv2d, BatchNorm2d, ReLU), then a 2x2 max pooling that halves the size."""
    layers: list[Module] = []
    for i in range(num_convs):
        layers += [
            Conv2d(in_channels if i == 0 else out_channels, out_channels, kernel_size=3, padding=1),
            BatchNorm2d(out_channels),
            ReLU(),
        ]
    layers.append(MaxPool2d(kernel_size=2, stride=2))
    return layers


class VGG(Module):
    """A VGG-style network (Simonyan and Zisserman, 2014) for 32x32 images, as pytinytensor 1.x's:
    three blocks of 3x3 convolutions with batch normalization (2 of 64 channels, 2 of 128, 3 of 256
    channels), each followed by 2x2 max pooling (32 -> 16 -> 8 -> 4), then Linear(4096, 512), ReLU,
    Linear(512, ``num_classes``). 3,840,586 parameters with the defaults.

    The layers are ``self.net``, a Sequential, in that order (each convolution followed by its
    BatchNorm2d and ReLU).

    Parameters
    ----------
    num_classes : int
        The number of logits per image (default 10).
    in_channels : int
        The images' channels (default 3).
    small_input : bool
        Kept from 1.x, where it changed nothing either: the network is made for 32x32 images.

    Examples
    --------
    >>> import tinytensor as tt
    >>> from tinytensor import models
    >>> model = models.VGG()
    >>> model(tt.randn(1, 3, 32, 32)).shape
    (1, 10)
    """

    def __init__(self, num_classes: int = 10, in_channels: int = 3, small_input: bool = True) -> None:
        super().__init__()
        self.small_input = small_input
        layers = [
            *_vgg_block(in_channels, 64, num_convs=2),  # 32 -> 16
            *_vgg_block(64, 128, num_convs=2),  # 16 -> 8
            *_vgg_block(128, 256, num_convs=3),  # 8 -> 4
            Flatten(),  # 256 * 4 * 4 = 4096
            Linear(256 * 4 * 4, 512),
            ReLU(),
            Linear(512, num_classes),
        ]
        self.net = Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        """The logits, (N, num_classes), of (N, in_channels, 32, 32) images."""
        out: Tensor = self.net(x)
        return out


__all__ = ["VGG"]
