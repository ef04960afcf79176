"""Everything CUDA: whether the GPU can be used and why not (``status``, the one probe), the CuPy
backend (``backend``), the compiled extension and the CUDA libraries it loads (``extension``), what
is installed (``install``) and the preflight report (``preflight``, ``python -m tinytensor``).

Importing tinytensor imports none of CuPy, the extension or the CUDA libraries: they load on the
first use of a GPU or of the probe.
"""

from __future__ import annotations

from .. import random as _random
from .status import cuda_status


def is_available() -> bool:
    """Whether tensors can go to ``"cuda"``: CuPy, a driver, a GPU and NVRTC all work, as the one
    probe found them (``tt.HAS_CUDA`` also needs the compiled extension). Probes on first use."""
    status = cuda_status()
    return status.device_usable and status.device_count > 0


def device_count() -> int:
    """How many GPUs tensors can go to (``"cuda:0"`` ...): 0 when ``is_available()`` is False."""
    return cuda_status().device_count if is_available() else 0


def manual_seed(seed: int) -> None:
    """``tt.manual_seed``: tinytensor has one random stream for every device (draws are made on the
    host), so, unlike PyTorch's, this seeds the CPU's draws too."""
    _random.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """``tt.manual_seed`` (one stream serves every GPU and the CPU)."""
    _random.manual_seed(seed)


__all__ = ["device_count", "is_available", "manual_seed", "manual_seed_all"]
