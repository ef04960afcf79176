"""CPU speed of tinytensor against hand-written numpy and PyTorch, as ratios from one process.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_cpu.py [--json out.json]

Three measurements, each the best of repeated rounds with the contenders interleaved
(single-threaded BLAS on all sides):
  op overhead  `a + b` on 4x4 float32 with gradients on     target: tinytensor <= 0.37 x PyTorch
  small MLP    64-256-256-10, batch 128, one training step    target: tinytensor <= 0.72 x PyTorch
  large MLP    784-1024-1024-10, batch 256, one training step target: tinytensor <= 1.03 x numpy
tinytensor runs with its safety checks on (in-place version checks, label range checks,
optimizer gradient checks): they are what a user runs.
A training step is forward, softmax cross-entropy, backward and an SGD-with-momentum update.

Each case also times a floor: the least that Python over numpy does for it, with no library
around it. For `a + b` that is a slotted class whose `__add__` runs numpy's add and records a
graph node, without dtype promotion, device check or version stamp. For a training step it is
the fastest hand-written numpy step: every array preallocated and written in place, one flat
buffer for the parameters, their gradients and momentum. A target below its floor's ratio asks
for more than any library whose graph and ops run in Python over numpy can give on this machine;
the verdict then says so.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS

import argparse
import json
import sys
import time

import numpy as np

import tinytensor as tt
from tinytensor import nn, optim

LR, MOMENTUM = 0.01, 0.9


def timed(fns: dict, *, round_seconds=0.05, rounds=15) -> dict:
    """Seconds per call of each function: the best of `rounds` rounds, the contenders interleaved
    round by round so that the machine's drift (a shared 2-core VM) hits them all alike."""
    calls = {}
    for name, fn in fns.items():
        fn()
        n = 1
        while True:
            start = time.perf_counter()
            for _ in range(n):
                fn()
            if time.perf_counter() - start > round_seconds:
                break
            n *= 2
        calls[name] = n
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(calls[name]):
                fn()
            best[name] = min(best[name], (time.perf_counter() - start) / calls[name])
    return best


# ------------------------------------------------------------------ the three contenders
def init_params(sizes, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return params


def numpy_step(sizes, x, y):
    """A hand-written MLP training step in numpy: what a careful person writes without a library."""
    params = init_params(sizes)
    bufs = [np.zeros_like(p) for p in params]
    n = len(y)
    rows = np.arange(n)

    def step():
        acts, pres = [x], []
        h = x
        layers = len(params) // 2
        for i in range(layers):
            w, b = params[2 * i], params[2 * i + 1]
            z = h @ w.T
            z += b
            pres.append(z)
            h = np.maximum(z, 0) if i < layers - 1 else z
            acts.append(h)
        m = h.max(axis=1, keepdims=True)
        e = np.exp(h - m)
        probs = e / e.sum(axis=1, keepdims=True)
        g = probs
        g[rows, y] -= 1
        g /= n
        grads = [None] * len(params)
        for i in reversed(range(layers)):
            if i < layers - 1:
                g = g * (pres[i] > 0)
            grads[2 * i] = g.T @ acts[i]
            grads[2 * i + 1] = g.sum(axis=0)
            if i:
                g = g @ params[2 * i]
        for p, buf, gr in zip(params, bufs, grads):
            buf *= MOMENTUM
            buf += gr
            p -= LR * buf

    step.parameters = lambda: params  # for tests: the contenders train alike
    return step


def floor_step(sizes, x, y):
    """The fastest hand-written numpy step: nothing allocated per step, one flat buffer each for
    the parameters, their gradients and momentum, so the update is four calls in all."""
    init = init_params(sizes)
    total = sum(p.size for p in init)
    flat, grad_flat, buf, scratch = (np.zeros(total, np.float32) for _ in range(4))
    params, grads, start = [], [], 0
    for p in init:
        params.append(flat[start : start + p.size].reshape(p.shape))
        params[-1][...] = p
        grads.append(grad_flat[start : start + p.size].reshape(p.shape))
        start += p.size
    n, layers = len(y), len(init) // 2
    rows, ones = np.arange(n), np.ones(n, np.float32)
    outs = [np.empty((n, k), np.float32) for k in sizes[1:]]
    grad_outs = [np.empty((n, k), np.float32) for k in sizes[1:]]
    masks = [np.empty((n, k), bool) for k in sizes[1:]]

    def step():
        h, acts = x, [x]
        for i in range(layers):
            z = outs[i]
            np.matmul(h, params[2 * i].T, out=z)
            z += params[2 * i + 1]
            if i < layers - 1:
                np.maximum(z, 0, out=z)
            acts.append(z)
            h = z
        h -= h.max(axis=1, keepdims=True)  # the logits become the softmax, in place
        np.exp(h, out=h)
        h /= h.sum(axis=1, keepdims=True)
        g = h
        g[rows, y] -= 1
        g *= 1 / n
        for i in reversed(range(layers)):
            np.matmul(g.T, acts[i], out=grads[2 * i])
            np.matmul(ones, g, out=grads[2 * i + 1])
            if i:
                np.matmul(g, params[2 * i], out=grad_outs[i - 1])
                np.greater(acts[i], 0, out=masks[i - 1])
                g = grad_outs[i - 1]
                g *= masks[i - 1]
        np.multiply(buf, MOMENTUM, out=buf)
        np.add(buf, grad_flat, out=buf)
        np.multiply(buf, LR, out=scratch)
        np.subtract(flat, scratch, out=flat)

    step.parameters = lambda: params
    return step


def tinytensor_step(sizes, x, y):
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(fan_in, fan_out))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    model.load_state_dict(
        {
            f"{2 * i}.{k}": p
            for i, pair in enumerate(zip(*[iter(init_params(sizes))] * 2))
            for k, p in zip(("weight", "bias"), pair)
        }
    )
    opt = optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    tx, ty = tt.Tensor(x), tt.Tensor(y)

    def step():
        opt.zero_grad()
        nn.cross_entropy(model(tx), ty).backward()
        opt.step()

    step.parameters = lambda: [p.numpy() for p in model.parameters()]
    return step


def torch_step(torch, sizes, x, y):
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(torch.nn.Linear(fan_in, fan_out))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    loss_fn = torch.nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        loss_fn(model(tx), ty).backward()
        opt.step()

    return step


_new = object.__new__


class FloorTensor:
    """The least a Python tensor with autograd can be: its array, its node, its flag."""

    __slots__ = ("data", "node", "requires_grad")

    def __init__(self, data, requires_grad=False):
        self.data, self.node, self.requires_grad = data, None, requires_grad

    def __add__(self, other):
        out = _new(FloorTensor)
        out.data = self.data + other.data
        out.node = (_add_backward, (self, other))
        out.requires_grad = True
        return out


def _add_backward(g):
    return g, g


# ------------------------------------------------------------------ measurements
def bench_op_overhead(torch):
    a = tt.Tensor(np.ones((4, 4), np.float32), requires_grad=True)
    b = tt.Tensor(np.ones((4, 4), np.float32), requires_grad=True)
    na, nb = np.ones((4, 4), np.float32), np.ones((4, 4), np.float32)
    fa, fb = FloorTensor(na.copy(), True), FloorTensor(nb.copy(), True)
    fns = {"tinytensor": lambda: a + b, "numpy": lambda: na + nb, "floor": lambda: fa + fb}
    if torch is not None:
        ta = torch.ones(4, 4, requires_grad=True)
        tb = torch.ones(4, 4, requires_grad=True)
        fns["torch"] = lambda: ta + tb
    return timed(fns)


def bench_mlp(torch, sizes, batch, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], batch).astype(np.int64)
    fns = {
        "tinytensor": tinytensor_step(sizes, x, y),
        "numpy": numpy_step(sizes, x, y),
        "floor": floor_step(sizes, x, y),
    }
    if torch is not None:
        fns["torch"] = torch_step(torch, sizes, x, y)
    return timed(fns, round_seconds=0.25 if sizes[0] > 100 else 0.05, rounds=15)


CASES = [
    ("op overhead: a + b, 4x4, grad on", bench_op_overhead, (), "torch", 0.37),
    ("MLP 64-256-256-10, batch 128, train step", bench_mlp, ([64, 256, 256, 10], 128), "torch", 0.72),
    ("MLP 784-1024-1024-10, batch 256, train step", bench_mlp, ([784, 1024, 1024, 10], 256), "numpy", 1.03),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="tinytensor CPU benchmarks (ratios against numpy and PyTorch)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
        print("PyTorch is not installed: ratios against it are left out")
    print(
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, numpy {np.__version__}"
        + (f", torch {torch.__version__}" if torch else "")
    )
    rows = []
    fmt = lambda s: f"{s * 1e6:10.2f}us" if s < 1e-5 else f"{s * 1e6:10.1f}us" if s < 1e-3 else f"{s * 1e3:10.2f}ms"  # noqa: E731
    print(
        f"{'benchmark':46s} {'tinytensor':>12s} {'numpy':>12s} {'torch':>12s} {'floor':>12s}"
        f" {'tt/numpy':>9s} {'tt/torch':>9s} {'floor/peer':>10s}  target"
    )
    for name, fn, fargs, peer, target in CASES:
        r = fn(torch, *fargs)
        ratio_np = r["tinytensor"] / r["numpy"]
        ratio_torch = r["tinytensor"] / r["torch"] if "torch" in r else float("nan")
        judged = ratio_torch if peer == "torch" else ratio_np
        floor = r["floor"] / r[peer] if peer in r else float("nan")
        if judged != judged:
            verdict = "n/a"
        elif judged <= target:
            verdict = "PASS"
        else:  # a floor above the target: no library over numpy reaches it here
            verdict = "MISS, below the floor" if floor > target else "MISS"
        torch_text = fmt(r["torch"]) if "torch" in r else f"{'-':>12s}"
        print(
            f"{name:46s} {fmt(r['tinytensor'])} {fmt(r['numpy'])} {torch_text} {fmt(r['floor'])}"
            f" {ratio_np:9.2f} {ratio_torch:9.2f} {floor:10.2f}  tt/{peer} <= {target:.2f}: {verdict}"
        )
        rows.append(
            {
                "name": name,
                "seconds": r,
                "ratio_numpy": ratio_np,
                "ratio_torch": ratio_torch,
                "floor_ratio": floor,
                "target": f"tt/{peer} <= {target}",
                "verdict": verdict,
            }
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
