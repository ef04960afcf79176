"""Small real shared libraries for tests: compiled from C with the system's C compiler.

The tests that need a library under a CUDA name (a libcuda.so.1 that is not the driver, an NVRTC
that reports a version) build one here rather than stand in for the loader or the probe.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def compile_library(folder: Path, name: str, body: str, *, soname: str | None = None) -> Path:
    """``folder/name`` built from the C source ``body``; skips the test where there is no C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip(reason=f"no C compiler (cc) to build a {name} with")
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"{name}.c"
    source.write_text(body)
    soname_flag = [f"-Wl,-soname,{soname}"] if soname else []
    subprocess.run([cc, "-shared", "-fPIC", *soname_flag, "-o", name, source.name], check=True, cwd=folder)
    return folder / name
