"""Build support for setup.py: variants, CUDA discovery, the extension build, reproducible sdists.

Kept out of the installed package; shipped in the sdist so source builds work the same way.
"""
