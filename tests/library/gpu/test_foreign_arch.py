"""A build with no code for this GPU's architecture: the probe finds it when it starts (not at the
first fused kernel), HAS_CUDA is false with the reason, and the library runs on CuPy's kernels
while float matmuls still go through the extension's cuBLAS.

The foreign build is real: ``ci/release/gpu_check.py --build-inplace`` compiles a second copy of the tree
for an architecture the GPU cannot run (SASS only, no PTX) and names it in
TINYTENSOR_FOREIGN_ARCH_TREE.
"""

import json
import os
import subprocess
import sys

import pytest

TREE = os.environ.get("TINYTENSOR_FOREIGN_ARCH_TREE")

SCRIPT = r"""
import json, numpy as np, tinytensor as tt
from tinytensor import nn
from tinytensor.devices import _cupy_backend
from tinytensor.nn import functional as F

status = tt.cuda_status()
tt.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
x, y = tt.randn(5, 8), tt.tensor([0, 1, 2, 1, 0])
cpu = F.cross_entropy(model(x), y)
cpu.backward()
cpu_grads = [p.grad.copy() for p in model.parameters()]
model.zero_grad()
model.to("cuda")
gpu = F.cross_entropy(model(x.to("cuda")), y.to("cuda"))
gpu.backward()
backend = _cupy_backend()
print(json.dumps({
    "extension_loaded": status.extension_loaded,
    "has_cuda": tt.HAS_CUDA,
    "reason": tt.cuda_unavailable_reason(),
    "fused": sorted(backend.fused),
    "uses_extension_cublas": backend.ext is not None,
    "sass_archs": status.extension_build_info.get("sass_archs"),
    "loss": [cpu.item(), gpu.item()],
    "grads_match": all(
        np.allclose(p.grad.get(), g, rtol=1e-4, atol=1e-5) for p, g in zip(model.parameters(), cpu_grads)
    ),
}))
"""


def _run(*args):
    env = dict(os.environ, PYTHONPATH=TREE)
    env.pop("TINYTENSOR_DISABLE_CUDA_EXTENSION", None)
    # cwd elsewhere: `python -c` and `-m` put the working directory first on sys.path
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=TREE + "/..")


def test_a_build_without_this_gpus_architecture_is_found_at_start_up(gpu_extension):
    if not TREE:
        pytest.skip(
            reason="TINYTENSOR_FOREIGN_ARCH_TREE is not set (ci/release/gpu_check.py --build-inplace builds one)"
        )
    proc = _run("-c", SCRIPT)
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert facts["extension_loaded"] and facts["uses_extension_cublas"], facts
    assert facts["has_cuda"] is False and facts["fused"] == [], facts
    assert "the extension's kernels cannot run on GPU 0" in facts["reason"], facts["reason"]
    assert "cudaFuncGetAttributes" in facts["reason"] and "TINYTENSOR_CUDA_ARCHS" in facts["reason"]
    assert facts["loss"][1] == pytest.approx(facts["loss"][0], rel=1e-5) and facts["grads_match"], facts

    report = _run("-m", "tinytensor")
    assert report.returncode == 0, report.stderr
    assert "extension kernels: DO NOT LOAD" in report.stdout and "cuda (extension partly)" in report.stdout
