"""Everything CUDA: whether the GPU can be used and why not (``status``, the one probe), the CuPy
backend (``backend``), the compiled extension and the CUDA libraries it loads (``extension``), what
is installed (``install``) and the preflight report (``preflight``, ``python -m tinytensor``).

Importing tinytensor imports none of CuPy, the extension or the CUDA libraries: they load on the
first use of a GPU or of the probe.
"""
