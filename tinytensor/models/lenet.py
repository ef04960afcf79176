"""LeNet-5 for 28x28 images (MNIST), as pytinytensor 1.x built it."""

from __future__ import annotations

from ..nn.activations import ReLU
from ..nn.base import Module
from ..nn.conv import Conv2d
from ..nn.layers import Flatten, Linear, Sequential
from ..nn.pooling import MaxPool2d
from ..tensor import Tensor


class LeNet(Module):
    """LeNet-5 (LeCun et al., 1998) for 28x28 images, as pytinytensor 1.x's: two 5x5 convolutions
    (6 and 16 channels, ReLU, 2x2 max pooling), then three Linear layers (120, 84,
    ``num_classes``). 61,706 parameters with the defaults.

    The layers are ``self.net``, a Sequential: 0 Conv2d(in_channels, 6, 5, padding=2), 1 ReLU,
    2 MaxPool2d(2), 3 Conv2d(6, 16, 5), 4 ReLU, 5 MaxPool2d(2), 6 Flatten, 7 Linear(400, 120),
    8 ReLU, 9 Linear(120, 84), 10 ReLU, 11 Linear(84, num_classes).

    Parameters
    ----------
    num_classes : int
        The number of logits per image (default 10).
    in_channels : int
        The images' channels: 1 (default) for grey, 3 for colour.

    Examples
    --------
    >>> import tinytensor as tt
    >>> from tinytensor import models
    >>> model = models.LeNet()
    >>> model(tt.randn(2, 1, 28, 28)).shape
    (2, 10)
    >>> sum(p.numel() for p in model.parameters())
    61706
    """

    def __init__(self, num_classes: int = 10, in_channels: int = 1) -> None:
        super().__init__()
        self.net = Sequential(
            Conv2d(in_channels, 6, kernel_size=5, padding=2),  # 28x28 stays 28x28
            ReLU(),
            MaxPool2d(kernel_size=2, stride=2),  # 14x14
            Conv2d(6, 16, kernel_size=5),  # 10x10
            ReLU(),
            MaxPool2d(kernel_size=2, stride=2),  # 5x5
            Flatten(),  # 16 * 5 * 5 = 400
            Linear(16 * 5 * 5, 120),
            ReLU(),
            Linear(120, 84),
            ReLU(),
            Linear(84, num_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        """The logits, (N, num_classes), of (N, in_channels, 28, 28) images."""
        out: Tensor = self.net(x)
        return out


__all__ = ["LeNet"]
