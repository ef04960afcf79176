"""1.x's module path for ``Tensor``; the class lives in ``tinytensor.tensor``."""

from __future__ import annotations

from ..tensor import Tensor

__all__ = ["Tensor"]
