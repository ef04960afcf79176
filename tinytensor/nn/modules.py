"""1.x's module path for ``Module`` and ``Sequential`` (now in ``module.py`` and ``layers.py``)."""

from .layers import Sequential
from .module import Module

__all__ = ["Module", "Sequential"]
