"""CuPy's own kernels, which it compiles at run time with NVRTC against the CUDA runtime headers: an
elementwise op, a reduction and a RawKernel run and give numpy's results in a process with
CUDA_PATH and CUDA_HOME unset, as on a machine with only a driver, where the headers and NVRTC must
come with the install. On the release's GPU runner this is the installed wheel's environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys

KERNELS = r"""
import json
import cupy as cp, numpy as np
x = cp.arange(1000, dtype=cp.float32)
scaled = cp.ElementwiseKernel("float32 x, float32 a", "float32 y", "y = a * x + 1.0f", "tt_axpb")(x, cp.float32(3))
square_sum = cp.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = a", "0", "tt_sumsq")(x)
raw = cp.RawKernel(r'''
extern "C" __global__ void tt_negate(const float* x, float* y, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) y[i] = -x[i];
}''', "tt_negate")
negated = cp.empty_like(x)
raw((4,), (256,), (x, negated, cp.int32(x.size)))
host = np.arange(1000, dtype=np.float32)
print(json.dumps({
    "elementwise": bool(np.array_equal(scaled.get(), 3 * host + 1)),
    "reduction": float(square_sum.get()) / float((host.astype(np.float64) ** 2).sum()),
    "raw": bool(np.array_equal(negated.get(), -host)),
    "sum": float(x.sum().get()),  # CuPy's own reduction kernel
}))
"""


def test_elementwise_reduction_and_raw_kernels_compile_and_run_without_a_toolkit(gpu):
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_PATH", "CUDA_HOME")}
    proc = subprocess.run([sys.executable, "-c", KERNELS], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["elementwise"] and found["raw"], found
    assert abs(found["reduction"] - 1.0) < 1e-5 and found["sum"] == 999 * 1000 / 2, found
