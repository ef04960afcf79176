"""1.x's module path for ``ResidualBlock``; the class lives in ``tinytensor.nn.blocks``."""

from .blocks import ResidualBlock

__all__ = ["ResidualBlock"]
