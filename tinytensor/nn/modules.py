"""1.x's module path for ``Module`` and ``Sequential`` (now in ``base.py`` and ``layers.py``)."""

from .base import Module
from .layers import Sequential

__all__ = ["Module", "Sequential"]
