"""The bridge to ``tinytensor.cuda_ops``: import it, decide when it applies, call it safely.

Each ``try_*`` returns None when the extension does not apply (not built, unsupported dtype,
shape or layout); the caller then uses CuPy. Outputs are allocated here with CuPy (its memory
pool, the input's device) and filled by the extension on CuPy's current stream.
"""

from __future__ import annotations

import json
import os
from importlib import resources

import numpy as np

IMPORT_ERROR: str | None = None
if os.environ.get("TINYTENSOR_DISABLE_CUDA_EXTENSION") == "1":  # to compare against the CuPy-only path
    ops = None
    IMPORT_ERROR = "disabled by TINYTENSOR_DISABLE_CUDA_EXTENSION=1"
else:
    try:
        from .. import cuda_ops as ops
    except ImportError as _exc:  # not built, or its CUDA libraries cannot be loaded
        ops = None
        IMPORT_ERROR = str(_exc)

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def build_config() -> dict:
    """What setup.py recorded about this install (distribution, variant, why the extension was skipped)."""
    try:
        text = resources.files("tinytensor").joinpath("_build_config.json").read_text()
    except (FileNotFoundError, OSError):
        return {}
    return json.loads(text)


def unavailable_reason() -> str:
    config = build_config()
    if IMPORT_ERROR and IMPORT_ERROR.startswith("disabled"):
        return IMPORT_ERROR
    if not config:
        return "this is a source tree where the extension was not built"
    if config.get("extension") != "built":
        return f"the build skipped it: {config.get('reason', 'no reason recorded')}"
    return f"it was built but does not import: {IMPORT_ERROR}"


def unavailable_fix() -> str:
    config = build_config()
    if not config:
        return "python setup.py build_ext --inplace with a CUDA toolkit, or pip install pytinytensor-cu12"
    if config.get("extension") != "built":
        return "install pytinytensor-cu12, or reinstall from source where a CUDA toolkit is found (see README)"
    return "reinstall the package; run python -m tinytensor for the libraries it loads"


def _stream():
    import cupy

    return cupy.cuda.get_current_stream().ptr


def _empty(shape, dtype, like):
    import cupy

    with cupy.cuda.Device(like.device.id):
        return cupy.empty(shape, dtype)


def try_matmul(x, y):
    """``x @ y`` through cuBLAS for 2-D float operands of one dtype (either may be transposed)."""
    if ops is None or x.ndim != 2 or y.ndim != 2 or x.dtype != y.dtype or x.dtype not in _FLOATS:
        return None
    m, k = x.shape
    n = y.shape[1]
    if k != y.shape[0]:
        raise ValueError(f"matmul: shapes {x.shape} and {y.shape} do not match")
    if 0 in (m, n, k) or not _blas_layout(x) or not _blas_layout(y):
        return None
    out = _empty((m, n), x.dtype, x)
    ops.matmul(x, y, out, _stream())
    return out


def _blas_layout(a) -> bool:
    flags = a.flags
    return flags.c_contiguous or flags.f_contiguous


def try_linear_forward(x, w, b, activation):
    """(pre-activation, output) of ``act(x @ w.T + b)``, or None when the extension does not apply."""
    if ops is None or x.dtype != w.dtype or x.dtype not in _FLOATS or (b is not None and b.dtype != x.dtype):
        return None
    pre = try_matmul(x, w.T)
    if pre is None:
        return None
    if b is None and activation is None:
        return pre, pre
    import cupy

    bias = cupy.ascontiguousarray(b) if b is not None else None
    out = pre if activation is None else cupy.empty_like(pre)
    ops.bias_act_forward(pre, bias, out, activation or "none", _stream())
    return pre, out


def linear_backward(g, pre, out, has_bias, activation):
    """(gradient of the pre-activation, bias gradient or None) from the fused kernel."""
    import cupy

    g = cupy.ascontiguousarray(g, dtype=pre.dtype)
    if activation is None and not has_bias:
        return g, None
    gpre = g if activation is None else cupy.empty_like(pre)
    gbias = _empty((pre.shape[1],), pre.dtype, pre) if has_bias else None
    ops.bias_act_backward(g, pre, out, gpre, gbias, activation or "none", _stream())
    return gpre, gbias


def try_softmax_xent_forward(logits, labels):
    """(per-row loss, softmax probabilities) from one fused kernel, or None."""
    if ops is None or logits.ndim != 2 or logits.dtype not in _FLOATS or not logits.flags.c_contiguous:
        return None
    if logits.shape[0] == 0 or logits.shape[1] == 0:
        return None
    labels = labels.astype(np.int64, copy=False)
    rows = _empty((logits.shape[0],), logits.dtype, logits)
    probs = _empty(logits.shape, logits.dtype, logits)
    ops.softmax_xent_forward(logits, labels, rows, probs, _stream())
    return rows, probs


def softmax_xent_backward(probs, labels, scale):
    """(probs - onehot(labels)) * scale, with ``scale`` a scalar or one value per row."""
    import cupy

    n = probs.shape[0]
    scale_rows = cupy.ascontiguousarray(
        cupy.broadcast_to(cupy.reshape(scale, (-1, 1)), (n, 1)).reshape(n), dtype=probs.dtype
    )
    out = cupy.empty_like(probs)
    ops.softmax_xent_backward(probs, labels.astype(np.int64, copy=False), scale_rows, out, _stream())
    return out
