"""tinytensor: a small tensor library with reverse-mode autograd on numpy (CPU) and CuPy (GPU).

``HAS_CUDA`` is computed on first access (importing tinytensor never imports CuPy);
``cuda_unavailable_reason()`` says why it is False and how to fix it.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from . import autograd, cuda, data, models, nn, optim, utils
from ._version import __version__
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .creation import (
    arange,
    backend_name,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from .cuda import install as _install
from .cuda.status import cuda_status, cuda_unavailable_reason
from .custom_function import Function as _Function
from .device_names import device
from .errors import CudaUnavailableError, DeviceError, ShapeError
from .ops import surface
from .random import Generator, manual_seed
from .sampling import multinomial, normal
from .serialization import FileFormatError, UnsafePickleError, load, save
from .tensor import Tensor
from .tensor_types import BoolTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor

surface.install(Tensor)
# tt.autograd.Function, as PyTorch's: it makes Tensors, so it is defined above tensor and installed here
autograd.Function = _Function  # type: ignore[misc]  # autograd declares it for type checkers
# tt.exp(x), tt.sum(x, 0), ...: the ops that ops/surface.py declares for this namespace
_FUNCTIONS = surface.functions("tt")
globals().update(_FUNCTIONS)
if TYPE_CHECKING:  # their signatures, generated from that table
    from ._activations import *  # noqa: F403
    from ._surface import *  # noqa: F403

# dtype names, as PyTorch spells them (tt.float32, tt.long, ...): strings every dtype argument takes
float16, float32, float64 = "float16", "float32", "float64"
int32, int64 = "int32", "int64"
half, float, double, int, long, bool = "float16", "float32", "float64", "int32", "int64", "bool"


# pytinytensor 1.x's top-level names: an alias warns and resolves, a removed name says what replaces it.
_1X_ALIASES = {
    "set_seed": ("tinytensor.manual_seed(seed)", manual_seed),
    "cuda_available": ("tinytensor.cuda.is_available()", cuda.is_available),
}
_1X_REMOVED = {
    "set_device": "there is no global device: create tensors with device= and move modules with .to(device)",
    "get_device": "there is no global device: new tensors are on 'cpu' unless made with device=; x.device says "
    "where a tensor is",
    "config": "seed with tinytensor.manual_seed(seed); there is no global device (create tensors with device=)",
}


def __getattr__(name: str) -> builtins.bool:  # HAS_CUDA; tt.bool is a dtype name here
    # HAS_CUDA is a module attribute computed on first use (PEP 562), so `import tinytensor`
    # stays fast and does not import CuPy.
    if name == "HAS_CUDA":
        return cuda_status().has_cuda
    if name in _1X_ALIASES:
        import warnings

        replacement, target = _1X_ALIASES[name]
        warnings.warn(
            f"tinytensor.{name} is a deprecated 1.x name: use {replacement} instead", DeprecationWarning, stacklevel=2
        )
        return target  # type: ignore[return-value]  # checkers see the declarations below instead
    if name in _1X_REMOVED:
        raise AttributeError(f"tinytensor.{name} was removed in 2.0: {_1X_REMOVED[name]}")
    raise AttributeError(f"module 'tinytensor' has no attribute {name!r}")


if TYPE_CHECKING:  # the 1.x aliases __getattr__ resolves, with their signatures

    def set_seed(seed: builtins.int) -> None: ...
    def cuda_available() -> builtins.bool: ...


__all__ = [
    "HAS_CUDA",  # noqa: F405 - computed by __getattr__ below
    "BoolTensor",
    "DoubleTensor",
    "FileFormatError",
    "FloatTensor",
    "Generator",
    "HalfTensor",
    "IntTensor",
    "LongTensor",
    "UnsafePickleError",
    "Tensor",
    "__version__",
    "arange",
    "autograd",
    "bool",
    "double",
    "float",
    "float16",
    "float32",
    "float64",
    "half",
    "int",
    "int32",
    "int64",
    "long",
    "backend_name",
    "cuda",
    "cuda_status",
    "cuda_unavailable_reason",
    "data",
    "device",
    "CudaUnavailableError",
    "DeviceError",
    "enable_grad",
    "eye",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "inference_mode",
    "is_grad_enabled",
    "linspace",
    "is_inference_mode_enabled",
    "load",
    "manual_seed",
    "models",
    "multinomial",
    "nn",
    "no_grad",
    "normal",
    "ones",
    "ones_like",
    "optim",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "randperm",
    "save",
    "set_grad_enabled",
    "ShapeError",
    "tensor",
    "utils",
    "zeros",
    "zeros_like",
    *_FUNCTIONS,
]


def _warn_of_a_second_variant() -> None:
    found = _install.installed_variants()
    if len(found) > 1:
        import warnings

        message = _install.conflict(found, current=_install.build_config().get("distribution"))
        if message:
            warnings.warn(message, _install.InstallConflictWarning, stacklevel=3)


def _warn_of_a_cpu_only_fallback() -> None:
    message = _install.fallback_message()
    if message:
        import warnings

        warnings.warn(message, _install.CpuOnlyBuildWarning, stacklevel=3)


_warn_of_a_second_variant()
_warn_of_a_cpu_only_fallback()
