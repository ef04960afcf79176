__version__ = "2.0.0"  # continues pytinytensor 1.x (last: 1.0.4 on PyPI), above it by design
