"""Which CUDA libraries this process has actually loaded, read from the loader's own map."""

from __future__ import annotations

import re

_INTERESTING = re.compile(r"lib(cudart|cublasLt|cublas|nvrtc|nvrtc-builtins|cuda)([-.][^/]*)?\.so")


def loaded_cuda_libraries() -> dict[str, list[str]]:
    """{"cudart": [paths], "cublas": [...], ...} from /proc/self/maps (Linux)."""
    found: dict[str, list[str]] = {}
    try:
        with open("/proc/self/maps") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return found
    for line in lines:
        path = line.split(maxsplit=5)[-1] if len(line.split()) >= 6 else ""
        match = _INTERESTING.search(path.rsplit("/", 1)[-1])
        if path.startswith("/") and match:
            paths = found.setdefault(match.group(1), [])
            if path not in paths:
                paths.append(path)
    return found
