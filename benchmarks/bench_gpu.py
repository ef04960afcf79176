"""GPU speed: tinytensor with its extension, tinytensor on CuPy alone, and PyTorch, in one run.

    python benchmarks/bench_gpu.py [--json out.json]

  matmul       4096 x 4096 float32: the extension's cuBLAS call against cupy.matmul (TFLOP/s)
  MLP step     784-1024-1024-10, batch 256 and 4096: forward, cross-entropy, backward, SGD step
Each timing synchronizes the device; best of several rounds. Without a usable GPU it says so
and exits 0 (it is a benchmark, not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def best_seconds(fn, sync, rounds=7, min_round=0.2) -> float:
    fn()
    sync()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        if time.perf_counter() - start > min_round:
            break
        calls *= 2
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def mlp_step_tinytensor(batch):
    import tinytensor as tt
    from tinytensor import nn, optim

    tt.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    model.to("cuda")
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = tt.Tensor(rng.standard_normal((batch, 784)).astype(np.float32), device="cuda")
    y = tt.Tensor(rng.integers(0, 10, batch), device="cuda")

    def step():
        opt.zero_grad()
        nn.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def measure_tinytensor() -> dict:
    """Run in a subprocess per mode, so TINYTENSOR_DISABLE_CUDA_EXTENSION applies from import."""
    import cupy

    from tinytensor.backends import cuda_ext

    sync = cupy.cuda.Device().synchronize
    result = {"extension": cuda_ext.ops is not None}
    for batch in (256, 4096):
        result[f"mlp_step_batch{batch}"] = best_seconds(mlp_step_tinytensor(batch), sync)
    if cuda_ext.ops is not None:
        a = cupy.random.standard_normal((4096, 4096), dtype=np.float32)
        b = cupy.random.standard_normal((4096, 4096), dtype=np.float32)
        flops = 2 * 4096**3
        result["matmul_ext_tflops"] = flops / best_seconds(lambda: cuda_ext.try_matmul(a, b), sync) / 1e12
        result["matmul_cupy_tflops"] = flops / best_seconds(lambda: cupy.matmul(a, b), sync) / 1e12
    return result


def measure_torch() -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    result = {}
    for batch in (256, 4096):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(784, 1024),
            torch.nn.ReLU(),
            torch.nn.Linear(1024, 1024),
            torch.nn.ReLU(),
            torch.nn.Linear(1024, 10),
        ).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(batch, 784, device="cuda")
        y = torch.randint(0, 10, (batch,), device="cuda")

        def step():
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        result[f"mlp_step_batch{batch}"] = best_seconds(step, torch.cuda.synchronize)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="tinytensor GPU benchmarks")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--child", choices=["tinytensor"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure_tinytensor()))
        return 0

    import tinytensor as tt

    status = tt.cuda_status()
    if not status.device_usable:
        print(f"GPU benchmarks skipped: no usable GPU ({tt.cuda_unavailable_reason()})")
        return 0
    results = {}
    for mode, disable in (("tinytensor+extension", "0"), ("tinytensor CuPy-only", "1")):
        env = dict(os.environ, TINYTENSOR_DISABLE_CUDA_EXTENSION=disable)
        proc = subprocess.run(
            [sys.executable, __file__, "--child", "tinytensor"], capture_output=True, text=True, env=env
        )
        if proc.returncode != 0:
            print(f"{mode} failed:\n{proc.stderr}")
            return 1
        results[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
    torch_result = measure_torch()
    if torch_result:
        results["torch"] = torch_result

    print(f"{'benchmark':32s}" + "".join(f"{m:>24s}" for m in results))
    for key in ("mlp_step_batch256", "mlp_step_batch4096"):
        print(f"{key:32s}" + "".join(f"{r[key] * 1e3:21.3f} ms" for r in results.values()))
    ext = results["tinytensor+extension"]
    if "matmul_ext_tflops" in ext:
        print(
            f"matmul 4096^2 fp32: extension cuBLAS {ext['matmul_ext_tflops']:.1f} TFLOP/s, "
            f"cupy.matmul {ext['matmul_cupy_tflops']:.1f} TFLOP/s"
        )
    base = results["tinytensor CuPy-only"]
    for key in ("mlp_step_batch256", "mlp_step_batch4096"):
        line = f"{key}: extension / CuPy-only = {ext[key] / base[key]:.2f}"
        if "torch" in results:
            line += f", tinytensor+extension / torch = {ext[key] / results['torch'][key]:.2f}"
        print(line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
