"""Ops on tensors, each next to its gradient; ``surface`` declares which are Tensor methods,
operators, ``tt.*`` and ``nn.functional.*`` functions."""

from __future__ import annotations
