"""Exceptions that name the problem (devices, shapes, CUDA availability)."""

from __future__ import annotations


class DeviceError(RuntimeError):
    """Tensors on different devices were combined, or a device string is unknown."""


class ShapeError(ValueError):
    """Shapes that cannot be combined; the message carries both shapes."""


class CudaUnavailableError(DeviceError):
    """The 'cuda' device was asked for but cannot be used; the message says why and how to fix it."""
