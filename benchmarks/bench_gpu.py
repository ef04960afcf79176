"""GPU speed as ratios against a peer measured in the same run, each with its target.

    python benchmarks/bench_gpu.py [--json out.json]

  MLP step       784-1024-1024-10 (ReLU), SGD momentum, batch 256, 1024 and 4096: forward,
                 cross-entropy, backward, step. tinytensor with its extension against PyTorch CUDA
                 (target at batch 1024: <= 1.0x PyTorch's time); tinytensor on CuPy alone for reference.
  bias + act     the extension's fused epilogue (one kernel) against CuPy's unfused ops on a
                 1024 x 1024 pre-activation, ReLU and GELU (target: fused >= 1.3x faster).
  linear fwd+bwd the whole fused Linear + activation forward and backward against CuPy's unfused
                 composition (CuPy matmul, bias add, activation, masks, sum; target >= 1.3x).
  softmax xent   the fused softmax cross-entropy forward + backward against CuPy's composition
                 (max, subtract, exp, sum, log, gather, one-hot subtract; target >= 1.3x).
  matmul         4096^2 float32, the extension's cuBLAS call against cupy.matmul (no target).
  conv2d         a 3x3 convolution (batch 64, 32 -> 64 channels, 32x32, padding 1) forward and
                 backward: tinytensor (im2col/col2im kernels and cuBLAS) against PyTorch's cuDNN
                 with TF32 off, and against tinytensor on CuPy alone (no target).

Each mode runs in its own process (the extension is switched off by TINYTENSOR_DISABLE_CUDA_EXTENSION
at import); the fused/unfused pairs share one process. Every timing synchronizes the device before
and after, best of several rounds. Rows that need CuPy's own cuBLAS are skipped, with the reason,
where it does not load (the pytinytensor-cu12 install brings only the extension's). Without a
usable GPU it says why and exits 0: it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

BATCHES = (256, 1024, 4096)
CONV_INPUT, CONV_WEIGHT = (64, 32, 32, 32), (64, 32, 3, 3)  # padding 1: the output is 64 x 64 x 32 x 32
CONV_NAME = "conv2d 3x3 fwd+bwd batch 64"
MLP_TARGET_BATCH = 1024
FUSED_TARGET = 1.3  # fused must be at least this many times faster than unfused
ROUNDS, MIN_ROUND_S = 5, 0.1


def best_seconds(fn, sync) -> float:
    """Seconds per call: enough calls per round to last MIN_ROUND_S, best of ROUNDS rounds."""
    fn()  # compile and allocate before timing
    sync()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        if time.perf_counter() - start > MIN_ROUND_S:
            break
        calls *= 2
    best = float("inf")
    for _ in range(ROUNDS):
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def _host(rng, shape):
    # numpy on the host, then copied: cupy.random would need cuRAND, which a driver-only install lacks
    return rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------- tinytensor children
def mlp_step_tinytensor(batch):
    import tinytensor as tt
    from tinytensor import nn, optim

    tt.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    model.to("cuda")
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = tt.tensor(_host(rng, (batch, 784)), device="cuda")
    y = tt.tensor(rng.integers(0, 10, batch), device="cuda")

    def step():
        opt.zero_grad()
        nn.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def conv_step_tinytensor():
    import tinytensor as tt

    rng = np.random.default_rng(0)
    x = tt.tensor(_host(rng, CONV_INPUT), device="cuda", requires_grad=True)
    w = tt.tensor(_host(rng, CONV_WEIGHT) * 0.05, device="cuda", requires_grad=True)
    b = tt.tensor(_host(rng, CONV_WEIGHT[:1]), device="cuda", requires_grad=True)

    def step():
        x.grad = w.grad = b.grad = None
        tt.nn.functional.conv2d(x, w, b, padding=1).sum().backward()

    return step


def cupy_blas_problem(cupy) -> str | None:
    """None when CuPy's own cuBLAS works here, else why not."""
    try:
        cupy.matmul(cupy.ones((2, 2), np.float32), cupy.ones((2, 2), np.float32))
    except Exception as exc:  # noqa: BLE001 - any failure means the rows that need it are skipped
        return f"{type(exc).__name__}: {exc}"
    return None


def fused_pairs(cupy, sync) -> dict:
    """(fused seconds, unfused seconds) per kernel benchmark, measured side by side."""
    from tinytensor.activation_math import ACTIVATIONS
    from tinytensor.cuda import extension
    from tinytensor.devices import backend_of

    ops = extension.ops
    rng = np.random.default_rng(0)
    n, k, c = 1024, 1024, 10
    x, w, b = (cupy.asarray(_host(rng, s)) for s in ((n, k), (k, k), (k,)))
    g = cupy.asarray(_host(rng, (n, k)))
    pre0 = cupy.asarray(_host(rng, (n, k)))  # the fused kernel keeps adding b to it: values drift, times do not
    stream = cupy.cuda.get_current_stream().ptr
    gelu = ACTIVATIONS["gelu"]
    unfused_act = {"relu": lambda v: cupy.maximum(v, 0), "gelu": lambda v: gelu.forward(backend_of(v), v, False)}
    unfused_grad = {
        "relu": lambda g, pre: g * (pre > 0),
        "gelu": lambda g, pre: gelu.grad(backend_of(g), g, pre, None),
    }
    pairs, skipped = {}, {}

    for act in ("relu", "gelu"):

        def fused_epilogue(act=act):
            # one kernel: adds the bias into pre in place (as after a fresh matmul) and writes act(pre)
            ops.bias_act_forward(pre0, b, cupy.empty_like(pre0), act, stream)

        def unfused_epilogue(act=act):
            unfused_act[act](pre0 + b)

        pairs[f"bias+{act} epilogue {n}x{k}"] = (
            best_seconds(fused_epilogue, sync),
            best_seconds(unfused_epilogue, sync),
        )

    blas_problem = cupy_blas_problem(cupy)
    for act in ("relu", "gelu"):
        key = f"linear+{act} fwd+bwd {n}x{k}x{k}"
        if blas_problem:
            skipped[key] = f"CuPy's cuBLAS does not load ({blas_problem})"
            continue

        def fused_linear(act=act):
            pre, out = extension.try_linear_forward(x, w, b, act)
            gpre, gb = extension.linear_backward(g, pre, out, True, act)
            extension.try_matmul(gpre, w)
            extension.try_matmul(gpre.T, x)

        def unfused_linear(act=act):
            pre = x @ w.T
            pre += b
            unfused_act[act](pre)
            gpre = unfused_grad[act](g, pre)
            gpre.sum(axis=0)
            gpre @ w
            gpre.T @ x

        pairs[key] = (best_seconds(fused_linear, sync), best_seconds(unfused_linear, sync))

    for rows, classes in ((n, c), (8192, 1000)):
        logits = cupy.asarray(_host(rng, (rows, classes)))
        labels = cupy.asarray(rng.integers(0, classes, rows))
        scale = cupy.asarray(1.0 / rows, np.float32)  # d mean / d row, as the library passes it
        positions = cupy.arange(rows)

        def fused_xent(logits=logits, labels=labels, scale=scale):
            row_losses, probs = extension.try_softmax_xent_forward(logits, labels)
            row_losses.mean()
            extension.softmax_xent_backward(probs, labels, scale)

        def unfused_xent(logits=logits, labels=labels, scale=scale, positions=positions, classes=classes):
            shifted = logits - logits.max(axis=1, keepdims=True)
            exps = cupy.exp(shifted)
            sums = exps.sum(axis=1, keepdims=True)
            (cupy.log(sums)[:, 0] - shifted[positions, labels]).mean()
            onehot = (cupy.arange(classes)[None, :] == labels[:, None]).astype(logits.dtype)
            (exps / sums - onehot) * scale

        pairs[f"softmax xent fwd+bwd {rows}x{classes}"] = (
            best_seconds(fused_xent, sync),
            best_seconds(unfused_xent, sync),
        )
    return {"pairs": pairs, "skipped": skipped}


def measure_tinytensor() -> dict:
    import cupy

    from tinytensor.cuda import extension

    sync = cupy.cuda.Device().synchronize
    result = {"extension": extension.ops is not None, "mlp_step": {}}
    blas_problem = cupy_blas_problem(cupy) if extension.ops is None else None
    if blas_problem:  # without the extension, the library's matmuls are CuPy's
        result["mlp_step_skipped"] = f"CuPy's cuBLAS does not load ({blas_problem})"
        return result
    for batch in BATCHES:
        result["mlp_step"][batch] = best_seconds(mlp_step_tinytensor(batch), sync)
    result["conv2d"] = best_seconds(conv_step_tinytensor(), sync)
    if extension.ops is None:
        return result
    result.update(fused_pairs(cupy, sync))
    rng = np.random.default_rng(1)
    a, b = cupy.asarray(_host(rng, (4096, 4096))), cupy.asarray(_host(rng, (4096, 4096)))
    flops = 2 * 4096**3
    result["matmul_ext_tflops"] = flops / best_seconds(lambda: extension.try_matmul(a, b), sync) / 1e12
    blas_problem = cupy_blas_problem(cupy)
    if blas_problem:
        result["matmul_cupy_skipped"] = f"CuPy's cuBLAS does not load ({blas_problem})"
    else:
        result["matmul_cupy_tflops"] = flops / best_seconds(lambda: cupy.matmul(a, b), sync) / 1e12
    return result


# ---------------------------------------------------------------------------- PyTorch child
def measure_torch() -> dict:
    try:
        import torch
    except ImportError as exc:
        return {"unavailable": f"PyTorch is not installed ({exc})"}
    if not torch.cuda.is_available():
        return {"unavailable": "PyTorch has no CUDA device"}
    result = {"version": torch.__version__, "fp32_matmul": torch.get_float32_matmul_precision(), "mlp_step": {}}
    for batch in BATCHES:
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

        def step(model=model, opt=opt, x=x, y=y):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        result["mlp_step"][batch] = best_seconds(step, torch.cuda.synchronize)
    torch.backends.cudnn.allow_tf32 = False  # float32 convolutions, as tinytensor's
    x = torch.randn(CONV_INPUT, device="cuda", requires_grad=True)
    w = torch.randn(CONV_WEIGHT, device="cuda", requires_grad=True)
    b = torch.randn(CONV_WEIGHT[:1], device="cuda", requires_grad=True)

    def conv_step():
        x.grad = w.grad = b.grad = None
        torch.nn.functional.conv2d(x, w, b, padding=1).sum().backward()

    result["conv2d"] = best_seconds(conv_step, torch.cuda.synchronize)
    return result


# ---------------------------------------------------------------------------- report
def table_rows(results) -> list[dict]:
    """One row per comparison: both times, the ratio, its target and the verdict."""
    rows = []
    ext, torch = results["tinytensor+extension"], results["torch"]
    cupy_only = results["tinytensor CuPy-only"]
    for batch in map(str, BATCHES):  # JSON made the batch keys strings
        ours = ext["mlp_step"][batch]
        target = 1.0 if batch == str(MLP_TARGET_BATCH) else None
        if "mlp_step" in torch:
            peer = torch["mlp_step"][batch]
            rows.append(_row(f"MLP step batch {batch}", "PyTorch", ours, peer, ours / peer, "<=", target))
        if batch in cupy_only["mlp_step"]:
            peer = cupy_only["mlp_step"][batch]
            rows.append(_row(f"MLP step batch {batch}", "tt CuPy-only", ours, peer, ours / peer, "<=", None))
    if "conv2d" in ext:
        ours = ext["conv2d"]
        for peer_name, peer in (("PyTorch", torch), ("tt CuPy-only", cupy_only)):
            if "conv2d" in peer:
                rows.append(_row(CONV_NAME, peer_name, ours, peer["conv2d"], ours / peer["conv2d"], "<=", None))
    for name, (fused, unfused) in ext.get("pairs", {}).items():
        rows.append(_row(name, "CuPy unfused", fused, unfused, unfused / fused, ">=", FUSED_TARGET))
    return rows


def _row(name, peer, ours_s, peer_s, ratio, sense, target):
    met = target is not None and (ratio <= target if sense == "<=" else ratio >= target)
    return {
        "benchmark": name,
        "peer": peer,
        "ours_ms": ours_s * 1e3,
        "peer_ms": peer_s * 1e3,
        "ratio": ratio,
        "target": None if target is None else f"{sense} {target}",
        "verdict": "-" if target is None else ("PASS" if met else "MISS"),
    }


def print_table(rows, results):
    print(f"{'benchmark':34s} {'peer':14s} {'ours ms':>10s} {'peer ms':>10s} {'ratio':>7s} {'target':>8s}  verdict")
    for r in rows:
        target = r["target"] or "-"
        print(
            f"{r['benchmark']:34s} {r['peer']:14s} {r['ours_ms']:10.3f} {r['peer_ms']:10.3f} "
            f"{r['ratio']:7.2f} {target:>8s}  {r['verdict']}"
        )
    print("ratio: MLP and conv2d rows are our time / the peer's (lower is better); the others unfused / fused")
    ext = results["tinytensor+extension"]
    for name, why in ext.get("skipped", {}).items():
        print(f"skipped {name}: {why}")
    if "matmul_ext_tflops" in ext:
        line = f"matmul 4096^2 fp32: extension cuBLAS {ext['matmul_ext_tflops']:.1f} TFLOP/s"
        if "matmul_cupy_tflops" in ext:
            line += f", cupy.matmul {ext['matmul_cupy_tflops']:.1f} TFLOP/s"
        else:
            line += f"; cupy.matmul skipped: {ext['matmul_cupy_skipped']}"
        print(line)
    if not ext["extension"]:
        print("the extension is not loaded (not built, or it does not import): only the MLP rows ran")
    if "mlp_step_skipped" in results["tinytensor CuPy-only"]:
        print(f"tinytensor CuPy-only rows skipped: {results['tinytensor CuPy-only']['mlp_step_skipped']}")
    if "unavailable" in results["torch"]:
        print(f"PyTorch rows skipped: {results['torch']['unavailable']}")


def run_child(mode, env) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", mode], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="tinytensor GPU benchmarks")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--child", choices=["tinytensor", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure_tinytensor() if args.child == "tinytensor" else measure_torch()))
        return 0

    import tinytensor as tt

    status = tt.cuda_status()
    if not status.device_usable:
        reason = f"no usable GPU ({tt.cuda_unavailable_reason()})"
        print(f"GPU benchmarks skipped: {reason}")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"skipped": reason}, fh, indent=1)
        return 0

    results = {}
    try:
        for mode, child, disable in (
            ("tinytensor+extension", "tinytensor", "0"),
            ("tinytensor CuPy-only", "tinytensor", "1"),
            ("torch", "torch", "0"),
        ):
            env = dict(os.environ, TINYTENSOR_DISABLE_CUDA_EXTENSION=disable)
            results[mode] = run_child(child, env)
    except RuntimeError as exc:
        print(exc)
        return 1
    rows = table_rows(results)
    print_table(rows, results)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"results": results, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
