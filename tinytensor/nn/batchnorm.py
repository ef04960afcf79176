"""1.x's module path for ``BatchNorm2d``; the class lives in ``tinytensor.nn.normalization``."""

from .normalization import BatchNorm2d

__all__ = ["BatchNorm2d"]
