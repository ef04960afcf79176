"""1.x's ``tinytensor.core``: ``from tinytensor.core.tensor import Tensor`` keeps working."""

from __future__ import annotations

from .tensor import Tensor

__all__ = ["Tensor"]
