"""pytinytensor 1.0.4's own tests (the ``tests/`` folder of its sdist, under its MIT license: see
LICENSE here), unchanged (SHA256SUMS; tests/library/test_compat_1x.py checks the files against it),
run against this release. A package, so that its file names may repeat those of tests/library.
"""
