"""The built extension on a machine without a GPU: it imports, describes itself, validates its
arguments, and every call that needs a device raises a clear error (never a crash).

Arrays are passed through __cuda_array_interface__ from a plain object (any CUDA array producer
may do this), so no GPU library is needed to reach the device checks.
"""

import pytest

from tinytensor.cuda import extension, install
from tinytensor.cuda.status import cuda_status

pytestmark = pytest.mark.skipif(
    extension.ops is None,
    reason=f"the CUDA extension is not loaded in this install: {extension.unavailable_reason()}",
)


class CudaArray:
    """A CUDA array interface (v3) description of memory at ``ptr``."""

    def __init__(self, shape, typestr="<f4", ptr=0x7F0000000000, strides=None, readonly=False):
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (ptr, readonly),
            "strides": strides,
            "version": 3,
        }


def test_build_info_describes_the_build():
    info = extension.ops.build_info()
    config = install.build_config()
    assert info["cuda_version"] == config["cuda_version"]
    assert info["cuda_runtime_version"] // 1000 == int(info["cuda_version"].split(".")[0])
    assert [int(a) for a in info["sass_archs"].split(";")] == config["sass_archs"]
    assert info["ptx_archs"] == ";".join(map(str, config["ptx_archs"]))
    assert "-Xfatbin=-compress-all" in info["nvcc_flags"]
    assert info["variant"] == config["distribution"]
    assert extension.ops.runtime_version() // 1000 == info["cuda_runtime_version"] // 1000
    assert extension.ops.cublas_version() // 10000 == int(info["cublas_version"].split(".")[0])


def test_argument_errors_are_named_before_touching_a_device():
    ops = extension.ops
    import numpy as np

    with pytest.raises(TypeError, match="expected a CUDA array.*ndarray"):
        ops.matmul(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((2, 2)), 0)
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(4, 5\) do not match"):
        ops.matmul(CudaArray((2, 3)), CudaArray((4, 5)), CudaArray((2, 5)), 0)
    with pytest.raises(TypeError, match="different dtypes"):
        ops.matmul(CudaArray((2, 3)), CudaArray((3, 5), "<f8"), CudaArray((2, 5)), 0)
    with pytest.raises(TypeError, match="float16|'<f2' is not supported"):
        ops.matmul(CudaArray((2, 3), "<f2"), CudaArray((3, 5), "<f2"), CudaArray((2, 5), "<f2"), 0)
    with pytest.raises(ValueError, match="read-only"):
        ops.matmul(CudaArray((2, 3)), CudaArray((3, 5)), CudaArray((2, 5), readonly=True), 0)
    with pytest.raises(ValueError, match="C- or F-contiguous"):
        ops.matmul(CudaArray((2, 3), strides=(24, 8)), CudaArray((3, 5)), CudaArray((2, 5)), 0)
    with pytest.raises(ValueError, match="unknown activation 'swish': the fused kernels implement 'none', 'relu'"):
        ops.bias_act_forward(CudaArray((2, 3)), None, CudaArray((2, 3)), "swish", 0)
    with pytest.raises(ValueError, match=r"bias: expected shape \(3,\)"):
        ops.bias_act_forward(CudaArray((2, 3)), CudaArray((4,)), CudaArray((2, 3)), "relu", 0)
    with pytest.raises(ValueError, match=r"a has batch 3, out has 2"):
        ops.matmul_batched(CudaArray((3, 3, 4)), CudaArray((2, 4, 6)), CudaArray((2, 3, 6)), 0)
    with pytest.raises(ValueError, match=r"shapes \(2, 3, 4\) and \(2, 5, 6\) do not match"):
        ops.matmul_batched(CudaArray((2, 3, 4)), CudaArray((2, 5, 6)), CudaArray((2, 3, 6)), 0)
    with pytest.raises(TypeError, match="labels: dtype '<f4'"):
        ops.softmax_xent_forward(CudaArray((2, 3)), CudaArray((2,)), CudaArray((2,)), CudaArray((2, 3)), 0)


def test_window_kernels_check_their_window_and_shapes_before_touching_a_device():
    from tinytensor.windows import Window

    ops = extension.ops
    win = Window(3, 3, 1, 1, 1, 1, 1, 1, 4, 4)
    with pytest.raises(TypeError, match=r"window: expected \(kh, kw, sh, sw, ph, pw, dh, dw, oh, ow\)"):
        ops.im2col(CudaArray((1, 2, 4, 4)), CudaArray((1, 2, 3, 3, 4, 4)), (3, 3), 0.0, 0)
    with pytest.raises(ValueError, match="stride and dilation >= 1"):
        ops.im2col(CudaArray((1, 2, 4, 4)), CudaArray((1, 2, 3, 3, 4, 4)), win._replace(sh=0), 0.0, 0)
    with pytest.raises(ValueError, match="cols"):
        ops.im2col(CudaArray((1, 2, 4, 4)), CudaArray((1, 2, 3, 3, 4, 5)), win, 0.0, 0)
    with pytest.raises(ValueError, match="divisor: must not be zero"):
        ops.avg_pool2d_forward(CudaArray((1, 2, 4, 4)), CudaArray((1, 2, 4, 4)), win, True, 0, 0)
    with pytest.raises(ValueError, match="average pooling has no dilation"):
        ops.avg_pool2d_forward(CudaArray((1, 2, 4, 4)), CudaArray((1, 2, 4, 4)), win._replace(dh=2), True, None, 0)


def test_calls_that_need_a_device_raise_with_the_cuda_error_name():
    if cuda_status().device_count:
        pytest.skip(reason="a GPU is present: the no-device errors cannot be produced here")
    ops = extension.ops
    expected = r"CUDA: cudaError\w+ \(\d+\) in "
    with pytest.raises(RuntimeError, match=expected + "cudaGetDeviceCount"):
        ops.device_count()
    with pytest.raises(RuntimeError, match=expected):
        ops.matmul(CudaArray((2, 3)), CudaArray((3, 5)), CudaArray((2, 5)), 0)
    with pytest.raises(RuntimeError, match=expected):
        ops.bias_act_forward(CudaArray((2, 3)), CudaArray((3,)), CudaArray((2, 3)), "gelu", 0)
    with pytest.raises(RuntimeError, match=expected):
        ops.kernel_image(0)
    with pytest.raises(RuntimeError, match=expected):
        ops.im2col(CudaArray((1, 2, 4, 4)), CudaArray((1, 2, 3, 3, 4, 4)), (3, 3, 1, 1, 1, 1, 1, 1, 4, 4), 0.0, 0)
    assert ops.driver_version() == (cuda_status().driver_version or 0)


def test_the_fused_kernels_name_the_activations_they_implement():
    """The CuPy backend fuses an activation into the bias kernels only where the extension says it
    implements it; every other activation in activation_math runs through CuPy."""
    from tinytensor.activation_math import ACTIVATIONS

    ops = extension.ops
    assert ops.supports_activation("none")
    assert [name for name in ACTIVATIONS if ops.supports_activation(name)] == ["relu", "gelu"]
    assert not ops.supports_activation("swish")
    assert extension.fuses_activation("gelu") and not extension.fuses_activation("tanh")
