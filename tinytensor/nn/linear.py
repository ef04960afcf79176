"""1.x's module path for ``Linear``; the class lives in ``tinytensor.nn.layers``."""

from .layers import Linear

__all__ = ["Linear"]
