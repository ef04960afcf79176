"""1.x's module path for ``Flatten``; the class lives in ``tinytensor.nn.layers``."""

from .layers import Flatten

__all__ = ["Flatten"]
