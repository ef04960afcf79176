"""Preflight diagnostics behind ``python -m tinytensor``: what is installed, what runs, what to fix."""

from .probe import collect
from .report import render

__all__ = ["collect", "render"]
