"""Functional forms of layers, activations and losses (PyTorch's ``nn.functional``): the ops that
``ops/surface.py`` declares for this namespace (signatures: ``functional.pyi`` and
``_activations.pyi``, generated from it).

Their first argument may also be an array (wrapped without a copy) or Python data.
"""

from ..ops import surface

_FUNCTIONS = surface.functions("functional")
globals().update(_FUNCTIONS)

__all__ = list(_FUNCTIONS)
