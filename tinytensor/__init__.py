"""tinytensor: a small tensor library with reverse-mode autograd on numpy (CPU) and CuPy (GPU).

``HAS_CUDA`` is computed on first access (importing tinytensor never imports CuPy);
``cuda_unavailable_reason()`` says why it is False and how to fix it.
"""

from . import data, install_check, nn, ops, optim, utils
from ._version import __version__
from .autograd import enable_grad, is_grad_enabled, no_grad
from .creation import (
    arange,
    backend_name,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    tensor,
    zeros,
    zeros_like,
)
from .cuda_status import cuda_status, cuda_unavailable_reason
from .errors import CudaUnavailableError, DeviceError, ShapeError
from .ops.arith import matmul
from .ops.elementwise import abs, clip, exp, gelu, log, maximum, minimum, relu, sigmoid, sqrt, tanh, where
from .ops.nn_ops import dropout, embedding, layer_norm, log_softmax, softmax
from .ops.reduce import all, amax, amin, any, argmax, argmin, logsumexp, max, mean, min, std, sum, var
from .ops.shape import (
    cat,
    concatenate,
    expand,
    flatten,
    permute,
    reshape,
    squeeze,
    stack,
    t,
    transpose,
    unsqueeze,
)
from .random import Generator, manual_seed
from .serialization import FileFormatError, UnsafePickleError, load, save
from .tensor import Tensor, accepts_arrays

ops.install(Tensor)

# tt.exp(x) and friends also take arrays and Python data as their first argument
(
    abs, clip, exp, gelu, log, relu, sigmoid, sqrt, tanh, dropout, layer_norm, log_softmax, softmax,
    all, amax, amin, any, argmax, argmin, logsumexp, max, mean, min, std, sum, var,
    expand, flatten, permute, reshape, squeeze, t, transpose, unsqueeze,
) = (
    accepts_arrays(fn)
    for fn in (
        abs, clip, exp, gelu, log, relu, sigmoid, sqrt, tanh, dropout, layer_norm, log_softmax, softmax,
        all, amax, amin, any, argmax, argmin, logsumexp, max, mean, min, std, sum, var,
        expand, flatten, permute, reshape, squeeze, t, transpose, unsqueeze,
    )
)  # fmt: skip

# dtype names, as PyTorch spells them (tt.float32, tt.long, ...): strings every dtype argument takes
float16, float32, float64 = "float16", "float32", "float64"
int32, int64 = "int32", "int64"
half, float, double, int, long, bool = "float16", "float32", "float64", "int32", "int64", "bool"
clamp = clip


def __getattr__(name):
    # HAS_CUDA is a module attribute computed on first use (PEP 562), so `import tinytensor`
    # stays fast and does not import CuPy.
    if name == "HAS_CUDA":
        from .cuda_status import has_cuda

        return has_cuda()
    raise AttributeError(f"module 'tinytensor' has no attribute {name!r}")


__all__ = [
    "HAS_CUDA",
    "FileFormatError",
    "Generator",
    "UnsafePickleError",
    "Tensor",
    "__version__",
    "abs",
    "all",
    "amax",
    "amin",
    "any",
    "arange",
    "argmax",
    "argmin",
    "bool",
    "clamp",
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
    "std",
    "t",
    "backend_name",
    "cat",
    "clip",
    "concatenate",
    "cuda_status",
    "cuda_unavailable_reason",
    "data",
    "CudaUnavailableError",
    "DeviceError",
    "dropout",
    "embedding",
    "enable_grad",
    "exp",
    "expand",
    "flatten",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "gelu",
    "is_grad_enabled",
    "layer_norm",
    "load",
    "log",
    "log_softmax",
    "logsumexp",
    "manual_seed",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "nn",
    "no_grad",
    "ones",
    "ones_like",
    "optim",
    "permute",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "relu",
    "reshape",
    "save",
    "ShapeError",
    "sigmoid",
    "softmax",
    "sqrt",
    "squeeze",
    "stack",
    "sum",
    "tanh",
    "tensor",
    "transpose",
    "unsqueeze",
    "utils",
    "var",
    "where",
    "zeros",
    "zeros_like",
]


def _warn_of_a_second_variant() -> None:
    found = install_check.installed_variants()
    if len(found) > 1:  # only then read the build record (cuda_extension imports the extension)
        import warnings

        from .cuda_extension import build_config

        message = install_check.conflict(found, current=build_config().get("distribution"))
        if message:
            warnings.warn(message, install_check.InstallConflictWarning, stacklevel=3)


_warn_of_a_second_variant()
