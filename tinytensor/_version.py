"""The package's version; setup.py and the release workflow read it by running this file."""

from __future__ import annotations

__version__ = "2.0.0"  # continues pytinytensor 1.x (last: 1.0.4 on PyPI), above it by design
