"""pytinytensor 1.x's ready-made models: ``LeNet``, ``VGG``, ``ResNet`` (``ResNet18``, ``ResNet34``)
and ``Ensemble``.

Each is built as 1.x built it: the same constructor arguments, layers (``self.net``, a
``Sequential``, in 1.x's order) and parameter counts, so a 1.x checkpoint of one loads with
``Module.load`` (1.x's ``net.layers.N.`` keys become ``net.N.``). 1.x's
module paths (``tinytensor.models.lenet``, ``.vgg``, ``.resnet``, ``.ensemble``) are kept.
"""

from .ensemble import Ensemble
from .lenet import LeNet
from .resnet import ResNet, ResNet18, ResNet34
from .vgg import VGG

__all__ = ["ResNet", "ResNet18", "ResNet34", "LeNet", "VGG", "Ensemble"]
