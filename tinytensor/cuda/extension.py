"""The Python side of the CUDA extension ``tinytensor.cuda_ops`` (built from csrc/): load the CUDA
libraries it needs, import it, decide when it applies, call it safely.

Each ``try_*`` returns None when the extension does not apply (not built, unsupported dtype,
shape or layout); the caller then uses CuPy. Outputs are allocated here with CuPy (its memory
pool, the input's device) and filled by the extension on CuPy's current stream.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any, TypeAlias

import numpy as np

from ..array_types import Array
from ..windows import Window
from . import install

# A JSON object read from a file (the library distribution's manifest.json, a build record's entry):
# its values are whatever the JSON holds, checked where they are read.
JsonObject: TypeAlias = dict[str, Any]

# To compare against the CuPy-only path (benchmarks) or rule the extension out.
DISABLED = os.environ.get("TINYTENSOR_DISABLE_CUDA_EXTENSION") == "1"


# The library distribution's files are loaded once per process and kept loaded (as the extension is).
_LOADED: list[ctypes.CDLL] = []


def _package_file(package: str, relative: str) -> Path | None:
    """``relative`` inside an installed package, from the first of its folders on sys.path that
    holds it (the library distribution is a plain folder of data, a namespace package to Python);
    None where no folder has it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):  # a parent that does not import, or sys.modules[name] = None
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / relative).is_file():
            return Path(folder) / relative
    return None


def _load_nvrtc(nvrtc: JsonObject) -> tuple[str, str] | None:
    """Load NVRTC by path from its distribution and check its CUDA major; None, or (why not, fix)."""
    requirement = nvrtc["requirement"]  # nvidia-cuda-nvrtc-cu12>=12.0,<13
    path = _package_file(nvrtc["package"], nvrtc["file"])
    if path is None:
        return f"{requirement} (NVRTC, which cuBLAS loads) is not installed", f'pip install "{requirement}"'
    reinstall = f'pip install --force-reinstall "{requirement}"'  # a plain install keeps a broken one
    try:
        lib = ctypes.CDLL(str(path), mode=os.RTLD_LOCAL)
    except OSError as exc:
        return f"{path} ({requirement}) does not load: {exc}", reinstall
    try:
        nvrtc_version = lib.nvrtcVersion
    except AttributeError as exc:  # a damaged or foreign file under NVRTC's name
        return f"{path} ({requirement}) is not NVRTC: it has no nvrtcVersion ({exc})", reinstall
    major, minor = ctypes.c_int(), ctypes.c_int()
    nvrtc_version(ctypes.byref(major), ctypes.byref(minor))
    wanted = nvrtc["file"].rsplit(".so.", 1)[-1]  # lib/libnvrtc.so.12: any NVRTC of CUDA 12
    if str(major.value) != wanted:
        return f"{requirement} is required, but NVRTC {major.value}.{minor.value} is installed ({path})", reinstall
    _LOADED.append(lib)
    return None


def _load_cuda_libs(config: JsonObject) -> tuple[JsonObject | None, str | None, str | None]:
    """(manifest, None, None) once a release wheel's CUDA libraries are loaded; (None, None, None)
    for a build that links its toolkit's; (None, why not, fix) when they are missing, of another
    version, or broken.

    A release wheel's extension needs cudart and cuBLAS from pytinytensor-cuNN-libs (its build
    config names the distribution and the exact version it was built for). That distribution is
    data only: its manifest.json names the libraries (in load order) and where NVRTC, which
    cuBLASLt opens at run time, comes from. Each is loaded by absolute path, RTLD_LOCAL, NVRTC
    first, before the extension, whose renamed DT_NEEDED entries then resolve to them by soname
    whatever LD_LIBRARY_PATH says. No RTLD_DEEPBIND: their symbol versions are renamed instead (see
    ci/release/elf_versions.py), so allocators preloaded with LD_PRELOAD work inside them.
    """
    wanted = config.get("cuda_libs")
    if not wanted or DISABLED:
        return None, None, None
    need = f"{wanted['distribution']}=={wanted['version']}"
    fix = f'pip install "{need}" (or reinstall {config["distribution"]})'
    manifest_file = _package_file(wanted["module"], "manifest.json")
    if manifest_file is None:
        return None, f"{config['distribution']} needs {need} (its cudart and cuBLAS), which is not installed", fix
    try:
        manifest = json.loads(manifest_file.read_text())
        have = manifest["version"]
        # what is read of it, here and in the preflight: a manifest without it is damaged
        [(entry["file"], entry["source"]) for entry in manifest["libraries"]]
        list(manifest["cublas_archs"]["sass"]), list(manifest["cublas_archs"]["ptx"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = f"{need} is installed, but its {manifest_file} does not read ({type(exc).__name__}: {exc})"
        return None, why, f'pip install --force-reinstall "{need}"'  # a plain install keeps it
    if have != wanted["version"]:
        why = f"{config['distribution']} was built for {need}, but {wanted['distribution']} {have} is installed"
        return None, why, fix
    if not _LOADED:
        nvrtc = manifest.get("nvrtc")
        failure = _load_nvrtc(nvrtc) if nvrtc else None
        if failure:
            return None, *failure
        for entry in manifest["libraries"]:
            path = manifest_file.parent / "lib" / entry["file"]
            try:
                _LOADED.append(ctypes.CDLL(str(path), mode=os.RTLD_LOCAL))
            except OSError as exc:
                _LOADED.clear()
                return None, f"{wanted['distribution']} {have}: {path} does not load: {exc}", fix
    return manifest, None, None


def _load_installed_cuda_libs() -> tuple[JsonObject | None, str | None, str | None]:
    """``_load_cuda_libs`` for this install; never raises, since it runs while tinytensor imports:
    whatever a damaged library distribution raises becomes why not, with its fix."""
    config = install.build_config()
    try:
        return _load_cuda_libs(config)
    except Exception as exc:  # noqa: BLE001 - e.g. a manifest.json without the entries it must have
        need = f"{config['cuda_libs']['distribution']}=={config['cuda_libs']['version']}"
        why = f"{need} is installed, but is damaged ({type(exc).__name__}: {exc})"
        return None, why, f'pip install --force-reinstall "{need}"'


CUDA_LIBS, CUDA_LIBS_ERROR, CUDA_LIBS_FIX = _load_installed_cuda_libs()


def _import_extension() -> tuple[ModuleType | None, str | None]:
    """(module, None), or (None, why not): absent is not an error, a broken one is never hidden."""
    if DISABLED or CUDA_LIBS_ERROR or install.build_config_damage():
        return None, None  # a damaged record cannot say which CUDA libraries it needs
    name = "tinytensor.cuda_ops"  # built by setup.py beside the package's modules
    try:
        cuda_ops = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None, None  # not built: unavailable_reason() says why from the build record
        return None, f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - a missing libcudart/libcublas, or its init failing
        return None, f"{type(exc).__name__}: {exc}"
    return cuda_ops, None


ops, IMPORT_ERROR = _import_extension()

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def unavailable_reason() -> str:
    """Why the extension is not used (read from the build record and what loading it raised)."""
    config = install.build_config()
    if DISABLED:
        return "disabled by TINYTENSOR_DISABLE_CUDA_EXTENSION=1"
    damage = install.build_config_damage()
    if damage:
        return damage[0]
    if CUDA_LIBS_ERROR:
        return CUDA_LIBS_ERROR
    if IMPORT_ERROR:
        return f"tinytensor.cuda_ops is present but does not import: {IMPORT_ERROR}"
    if not config:
        return "this is a source tree where the extension was not built"
    if config.get("extension") != "built":
        return f"the build skipped it: {config.get('reason', 'no reason recorded')}"
    return "the build recorded it as built, but the tinytensor.cuda_ops file is missing from the install"


def unavailable_fix() -> str:
    """The fix for ``unavailable_reason()``."""
    config = install.build_config()
    if DISABLED:
        return "unset TINYTENSOR_DISABLE_CUDA_EXTENSION"
    damage = install.build_config_damage()
    if damage:
        return damage[1]
    if CUDA_LIBS_ERROR:
        return CUDA_LIBS_FIX or "reinstall the package"
    if IMPORT_ERROR:
        return "run python -m tinytensor to see which CUDA libraries load; reinstall the package"
    if not config:
        return "python setup.py build_ext --inplace with a CUDA toolkit, or pip install pytinytensor-cu12"
    if config.get("extension") != "built":
        return (
            "install pytinytensor-cu12, or reinstall from source where a CUDA toolkit is found "
            "(the docs: CUDA and installing)"
        )
    return "reinstall the package"


# Every call below runs inside its first array's device (``cupy.cuda.Device``): CuPy allocates on the
# current device and each device has its own current stream, so without it cuda:1 data would get
# cuda:0 memory and a cuda:0 stream. The binding checks that all arrays share one device.


def _cupy() -> ModuleType:
    import cupy

    module: ModuleType = cupy  # untyped to checkers: CuPy ships no type information
    return module


def _stream(cupy: ModuleType) -> int:
    """The current stream of the current device (enter the array's device first)."""
    pointer: int = cupy.cuda.get_current_stream().ptr
    return pointer


def try_matmul(x: Array, y: Array) -> Array | None:
    """``x @ y`` through the extension's cuBLAS for float32/float64 operands of one dtype, any rank
    (1-D operands and broadcast batch axes as numpy), any layout. None: not applicable, use CuPy.

    Every float matmul of the GPU path comes here, so CuPy's own cuBLAS is never loaded: a
    pytinytensor-cu12 install has one (from pytinytensor-cu12-libs), and CuPy's would be a second (or
    missing) one.
    """
    if ops is None or x.dtype != y.dtype or x.dtype not in _FLOATS or x.ndim == 0 or y.ndim == 0:
        return None
    cupy = _cupy()
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    y2 = y.reshape(-1, 1) if y.ndim == 1 else y
    (m, k), (k2, n) = x2.shape[-2:], y2.shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: shapes {x.shape} and {y.shape} do not match")
    batch = tuple(np.broadcast_shapes(x2.shape[:-2], y2.shape[:-2]))  # ValueError if they do not broadcast
    with cupy.cuda.Device(x.device.id):
        if 0 in (m, n, k) or 0 in batch:
            out = cupy.zeros(batch + (m, n), x.dtype)
        elif not batch:
            out = _matmul_2d(cupy, x2, y2)
        elif y2.ndim == 2:  # a stack of rows times one matrix: one GEMM over all the rows
            out = _matmul_2d(cupy, cupy.ascontiguousarray(x2).reshape(-1, k), y2).reshape(batch + (m, n))
        else:
            out = _matmul_batched(cupy, x2, y2, batch)
    if x.ndim == 1:
        out = out.reshape(out.shape[:-2] + (n,))
    if y.ndim == 1:
        out = out.reshape(out.shape[:-1])
    return out


def _blas_layout(a: Array) -> bool:
    """cuBLAS reads C- and F-contiguous matrices in place (the latter as a transpose)."""
    flags = a.flags
    return bool(flags.c_contiguous or flags.f_contiguous)


def _matmul_2d(cupy: ModuleType, x: Array, y: Array) -> Array:
    assert ops is not None  # called only once the extension loaded
    x = x if _blas_layout(x) else cupy.ascontiguousarray(x)
    y = y if _blas_layout(y) else cupy.ascontiguousarray(y)
    out = cupy.empty((x.shape[0], y.shape[1]), x.dtype)
    ops.matmul(x, y, out, _stream(cupy))
    return out


def _matmul_batched(cupy: ModuleType, x: Array, y: Array, batch: tuple[int, ...]) -> Array:
    """Strided batched GEMM; an operand without batch axes is repeated by a zero stride."""
    assert ops is not None  # called only once the extension loaded
    count = int(np.prod(batch))

    def as_3d(a: Array) -> Array:
        if a.ndim == 2:
            return cupy.ascontiguousarray(a).reshape((1,) + a.shape)
        full = cupy.broadcast_to(a, batch + a.shape[-2:])
        return cupy.ascontiguousarray(full).reshape((count,) + a.shape[-2:])

    a, b = as_3d(x), as_3d(y)
    out = cupy.empty((count, a.shape[1], b.shape[2]), x.dtype)
    ops.matmul_batched(a, b, out, _stream(cupy))
    return out.reshape(batch + out.shape[1:])


_FUSED_ACTIVATIONS: dict[str, bool] = {}


def fuses_activation(name: str) -> bool:
    """Whether the extension's bias + activation kernels implement ``name`` (csrc/cuda_gpu.cu)."""
    assert ops is not None  # called only once the extension loaded
    known = _FUSED_ACTIVATIONS.get(name)
    if known is None:
        known = _FUSED_ACTIVATIONS[name] = bool(ops.supports_activation(name))
    return known


def try_linear_forward(x: Array, w: Array, b: Array | None, activation: str | None) -> tuple[Array, Array] | None:
    """(pre-activation, output) of ``act(x @ w.T + b)``, or None when the extension does not apply."""
    if ops is None or x.dtype != w.dtype or x.dtype not in _FLOATS or (b is not None and b.dtype != x.dtype):
        return None
    if activation is not None and not fuses_activation(activation):
        return None
    pre = try_matmul(x, w.T)
    if pre is None or pre.ndim != 2:
        return None
    if b is None and activation is None:
        return pre, pre
    cupy = _cupy()
    with cupy.cuda.Device(pre.device.id):
        bias = cupy.ascontiguousarray(b) if b is not None else None
        out = pre if activation is None else cupy.empty(pre.shape, pre.dtype)
        ops.bias_act_forward(pre, bias, out, activation or "none", _stream(cupy))
    return pre, out


def linear_backward(
    g: Array, pre: Array, out: Array, has_bias: bool, activation: str | None
) -> tuple[Array, Array | None]:
    """(gradient of the pre-activation, bias gradient or None) from the fused kernel."""
    assert ops is not None  # called only once the extension loaded
    cupy = _cupy()
    with cupy.cuda.Device(pre.device.id):
        g = cupy.ascontiguousarray(g, dtype=pre.dtype)
        if activation is None and not has_bias:
            return g, None
        gpre = g if activation is None else cupy.empty(pre.shape, pre.dtype)
        # zeros: with no rows the kernel returns before writing the bias gradient
        gbias = (cupy.zeros if pre.shape[0] == 0 else cupy.empty)((pre.shape[1],), pre.dtype) if has_bias else None
        ops.bias_act_backward(g, pre, out, gpre, gbias, activation or "none", _stream(cupy))
    return gpre, gbias


def try_softmax_xent_forward(logits: Array, labels: Array) -> tuple[Array, Array] | None:
    """(per-row loss, softmax probabilities) from one fused kernel, or None."""
    if ops is None or logits.ndim != 2 or logits.dtype not in _FLOATS or not logits.flags.c_contiguous:
        return None
    if logits.shape[0] == 0 or logits.shape[1] == 0:
        return None
    cupy = _cupy()
    with cupy.cuda.Device(logits.device.id):
        labels = cupy.ascontiguousarray(labels, dtype=np.int64)  # a view such as y[::2] is not
        rows = cupy.empty((logits.shape[0],), logits.dtype)
        probs = cupy.empty(logits.shape, logits.dtype)
        ops.softmax_xent_forward(logits, labels, rows, probs, _stream(cupy))
    return rows, probs


def softmax_xent_backward(probs: Array, labels: Array, scale: Array) -> Array:
    """(probs - onehot(labels)) * scale, with ``scale`` a scalar or one value per row."""
    assert ops is not None  # called only once the extension loaded
    cupy = _cupy()
    n = probs.shape[0]
    with cupy.cuda.Device(probs.device.id):
        scale_rows = cupy.ascontiguousarray(
            cupy.broadcast_to(cupy.reshape(scale, (-1, 1)), (n, 1)).reshape(n), dtype=probs.dtype
        )
        out = cupy.empty(probs.shape, probs.dtype)
        labels = cupy.ascontiguousarray(labels, dtype=np.int64)
        ops.softmax_xent_backward(probs, labels, scale_rows, out, _stream(cupy))
    return out


# Sliding windows (convolution, pooling) and channel statistics. Arrays the kernels read are made
# C-contiguous first (a copy only when they are not); a window is passed as its 10 ints.
_INT32_MAX = 2**31 - 1


def _planes(x: Array) -> bool:
    """Whether ``x`` is an (N, C, H, W) float32/float64 array, the kernels' input."""
    return x.ndim == 4 and x.dtype in _FLOATS


def try_im2col(x: Array, win: Window, fill: float = 0.0) -> Array | None:
    """Every window of (N, C, H, W) ``x`` as a new (N, C, KH, KW, OH, OW) array, padding reading
    ``fill``; None when the extension does not apply."""
    if ops is None or not _planes(x):
        return None
    cupy = _cupy()
    with cupy.cuda.Device(x.device.id):
        x = cupy.ascontiguousarray(x)
        cols = cupy.empty((*x.shape[:2], win.kh, win.kw, win.oh, win.ow), x.dtype)
        ops.im2col(x, cols, tuple(win), float(fill), _stream(cupy))
    return cols


def try_col2im(cols: Array, win: Window, height: int, width: int) -> Array | None:
    """The adjoint of ``try_im2col``: (N, C, height, width), each position the sum of the
    (N, C, KH, KW, OH, OW) ``cols`` entries that read it; None when the extension does not apply."""
    if ops is None or cols.ndim != 6 or cols.dtype not in _FLOATS:
        return None
    cupy = _cupy()
    with cupy.cuda.Device(cols.device.id):
        cols = cupy.ascontiguousarray(cols)
        out = cupy.empty((*cols.shape[:2], height, width), cols.dtype)
        ops.col2im(cols, out, tuple(win), _stream(cupy))
    return out


def try_max_pool2d(x: Array, win: Window) -> tuple[Array, Array] | None:
    """(max, int64 argmax as h * W + w in the unpadded plane), each (N, C, OH, OW), of (N, C, H, W)
    ``x``; None when the extension does not apply."""
    if ops is None or not _planes(x):
        return None
    cupy = _cupy()
    with cupy.cuda.Device(x.device.id):
        x = cupy.ascontiguousarray(x)
        shape = (*x.shape[:2], win.oh, win.ow)
        out, argmax = cupy.empty(shape, x.dtype), cupy.empty(shape, np.int64)
        ops.max_pool2d_forward(x, out, argmax, tuple(win), _stream(cupy))
    return out, argmax


def try_max_pool2d_grad(g: Array, argmax: Array, height: int, width: int) -> Array | None:
    """(N, C, height, width) zeros with ``g`` added at ``argmax`` (``try_max_pool2d``'s); None when
    the extension does not apply."""
    if ops is None or not _planes(g) or argmax.shape != g.shape:
        return None
    cupy = _cupy()
    with cupy.cuda.Device(g.device.id):
        g = cupy.ascontiguousarray(g)
        argmax = cupy.ascontiguousarray(argmax, dtype=np.int64)
        out = cupy.empty((*g.shape[:2], height, width), g.dtype)  # zeroed by the call, on its stream
        ops.max_pool2d_backward(g, argmax, out, _stream(cupy))
    return out


def _avg_applies(win: Window, divisor: int | None) -> bool:
    # average pooling has no dilation; a zero divisor is the op's error to raise, not the kernel's
    return win.dh == 1 and win.dw == 1 and divisor != 0


def try_avg_pool2d(x: Array, win: Window, count_include_pad: bool, divisor: int | None) -> Array | None:
    """Each window's mean of (N, C, H, W) ``x``, by PyTorch's divisor rule, as (N, C, OH, OW); None
    when the extension does not apply."""
    if ops is None or not _planes(x) or not _avg_applies(win, divisor):
        return None
    cupy = _cupy()
    with cupy.cuda.Device(x.device.id):
        x = cupy.ascontiguousarray(x)
        out = cupy.empty((*x.shape[:2], win.oh, win.ow), x.dtype)
        ops.avg_pool2d_forward(x, out, tuple(win), bool(count_include_pad), divisor, _stream(cupy))
    return out


def try_avg_pool2d_grad(
    g: Array, win: Window, height: int, width: int, count_include_pad: bool, divisor: int | None
) -> Array | None:
    """The gradient of ``try_avg_pool2d`` for the (N, C, OH, OW) ``g``: (N, C, height, width); None
    when the extension does not apply."""
    if ops is None or not _planes(g) or not _avg_applies(win, divisor):
        return None
    cupy = _cupy()
    with cupy.cuda.Device(g.device.id):
        g = cupy.ascontiguousarray(g)
        out = cupy.empty((*g.shape[:2], height, width), g.dtype)
        ops.avg_pool2d_backward(g, out, tuple(win), bool(count_include_pad), divisor, _stream(cupy))
    return out


def try_batch_norm_stats(x: Array) -> tuple[Array, Array] | None:
    """(mean, biased variance) of each channel of (N, C, ...) ``x``, each (C,) of x's dtype, summed in
    double; None when the extension does not apply (an empty ``x`` included: CuPy's NaN rules then)."""
    if ops is None or x.ndim < 2 or x.dtype not in _FLOATS or x.size == 0 or x.shape[1] > _INT32_MAX:
        return None
    cupy = _cupy()
    with cupy.cuda.Device(x.device.id):
        x = cupy.ascontiguousarray(x)
        mean, var = cupy.empty((x.shape[1],), x.dtype), cupy.empty((x.shape[1],), x.dtype)
        ops.batch_norm_stats(x, mean, var, _stream(cupy))
    return mean, var


def load_kernels(device: int) -> tuple[tuple[int, ...] | None, str | None]:
    """Load the extension's kernels on ``device``: ((SASS arch, PTX version) the driver picked, None),
    or (None, the CUDA error saying why not: no SASS or PTX for its architecture, or PTX newer than
    the driver can JIT)."""
    assert ops is not None  # called only once the extension loaded
    try:
        return tuple(ops.kernel_image(device)), None
    except RuntimeError as exc:
        return None, str(exc).removeprefix("CUDA: ")
