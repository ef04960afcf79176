"""Preflight diagnostics behind ``python -m tinytensor``: what is installed, what runs, what to fix.

``probe.collect`` turns the one probe (``cuda_status``) into the report's facts; ``report.render``
prints them. Submodules are imported where used: ``cuda_status`` itself uses ``archs`` and
``libraries``.
"""
