"""The CUDA runtime libraries of pytinytensor-cuNN (cudart, cuBLAS, cuBLASLt), from NVIDIA's
wheels, renamed so that no other CUDA install can stand in for them.

tinytensor calls ``load()`` before it imports its extension, whose DT_NEEDED entries name these
files' sonames: once loaded, the dynamic loader matches them by soname, whatever LD_LIBRARY_PATH
says. They are loaded with RTLD_DEEPBIND, so each binds its symbols to its own dependencies first
(our cuBLAS to our cuBLASLt) even where another package has put a cuBLAS in the global scope. ``manifest()`` says what is inside (versions, sources, GPU architectures with native kernels).

(This file is buildsys/libs_package_init.py in pytinytensor's repository; ci/release/build_cuda_libs.py
installs it as the package's __init__.py next to manifest.json and lib/.)
"""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent
LIB_DIR = _HERE / "lib"
_MANIFEST = json.loads((_HERE / "manifest.json").read_text())
__version__: str = _MANIFEST["version"]
_loaded: list[ctypes.CDLL] = []


def manifest() -> dict:
    """What this distribution holds: {"distribution", "version", "libraries": [{"file", "soname",
    "upstream_soname", "source", "sha256"}], "cublas_archs": {"sass": [...], "ptx": [...]}}."""
    return json.loads(json.dumps(_MANIFEST))


def library_paths() -> list[str]:
    """Absolute paths of the libraries, in load order (each after the ones it needs)."""
    return [str(LIB_DIR / entry["file"]) for entry in _MANIFEST["libraries"]]


# RTLD_LOCAL adds nothing to the global scope; RTLD_DEEPBIND (glibc) looks symbols up in the
# library's own dependencies before the global scope.
MODE = os.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0)


def load() -> list[ctypes.CDLL]:
    """Load every library once, by absolute path (``MODE``). Raises OSError naming the file that
    does not load."""
    if not _loaded:
        handles = []
        for path in library_paths():
            try:
                handles.append(ctypes.CDLL(path, mode=MODE))
            except OSError as exc:
                raise OSError(f"{_MANIFEST['distribution']} {__version__}: {path} does not load: {exc}") from None
        _loaded.extend(handles)
    return list(_loaded)
