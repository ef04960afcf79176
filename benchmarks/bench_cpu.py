"""CPU speed of tinytensor against hand-written numpy and PyTorch, as ratios from one process.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_cpu.py [--json out.json]

Five speed measurements, each the best of repeated rounds with the contenders interleaved
(single-threaded BLAS on all sides), and one of memory:
  op overhead  `a + b` on 4x4 float32 with gradients on     target: tinytensor <= 0.37 x PyTorch
  small MLP    64-256-256-10, batch 128, one training step    target: tinytensor <= 0.72 x PyTorch
  large MLP    784-1024-1024-10, batch 256, one training step target: tinytensor <= 1.03 x numpy
  LeNet-5      batch 64, 1x28x28, one training step (1.x's: conv 1->6 k5 p2, relu, maxpool 2, conv
               6->16 k5, relu, maxpool 2, 400-120-84-10)    targets: <= 1.15 x floor, <= 2.0 x PyTorch
  ResNet block basic block, batch 32, 64 channels, 32x32 (conv3x3-bn-relu-conv3x3-bn, plus the
               input, relu), loss the output's mean        targets: <= 1.15 x floor, <= 2.5 x PyTorch
  memory       one LeNet-5 step's peak RSS over the RSS held between steps, each contender in a
               fresh process (Linux: the peak is reset through /proc/self/clear_refs; glibc's mmap
               threshold fixed so that freed arrays leave the RSS)  target: <= 2.0 x PyTorch
tinytensor runs with its safety checks on (in-place version checks, label range checks,
optimizer gradient checks): they are what a user runs.
A training step is forward, softmax cross-entropy, backward and an SGD-with-momentum update.

Each case also times a floor: the least that Python over numpy does for it, with no library
around it. For `a + b` that is a slotted class whose `__add__` runs numpy's add and records a
graph node, without dtype promotion, device check or version stamp. For a training step it is
the fastest hand-written numpy step: every array preallocated and written in place, one flat
buffer for the parameters, their gradients and momentum. The convolutional floors keep their
activations channel-major (C, N, H, W), so that each convolution is one copy of an `as_strided`
im2col view and one sgemm; the pools are maxima of strided views, with bias and relu after them.
A target below its floor's ratio asks
for more than any library whose graph and ops run in Python over numpy can give on this machine;
the verdict then says so.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS

import argparse
import gc
import json
import subprocess
import sys
import time
import tracemalloc

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
    tx, ty = tt.tensor(x), tt.tensor(y)

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


# ------------------------------------------------------------------ convolutional steps
# LeNet-5 as pytinytensor 1.x had it (batch 64, 1x28x28) and a ResNet basic block (batch 32, 64
# channels, 32x32). The block has no bias in its convolutions, as ResNet; its loss is the mean of
# its output, so the step is forward, backward through both batch norms and the identity, and SGD.
LENET_KEYS = ("0.weight", "0.bias", "3.weight", "3.bias", "7.weight", "7.bias", "9.weight", "9.bias")
LENET_KEYS += ("11.weight", "11.bias")
BLOCK_KEYS = ("conv1.weight", "bn1.weight", "bn1.bias", "conv2.weight", "bn2.weight", "bn2.bias")
BN_EPS, BN_MOMENTUM = 1e-5, 0.1


def lenet_params(seed=0):
    """conv 1->6 k5, conv 6->16 k5, linear 400-120-84-10: PyTorch's default uniform bounds."""
    rng = np.random.default_rng(seed)
    params = []
    for shape in [(6, 1, 5, 5), (16, 6, 5, 5), (120, 400), (84, 120), (10, 84)]:
        bound = 1 / np.sqrt(np.prod(shape[1:]))
        params.append(rng.uniform(-bound, bound, shape).astype(np.float32))
        params.append(rng.uniform(-bound, bound, shape[0]).astype(np.float32))
    return params


def block_params(channels, seed=0):
    rng = np.random.default_rng(seed)
    bound = 1 / np.sqrt(channels * 9)
    conv = lambda: rng.uniform(-bound, bound, (channels, channels, 3, 3)).astype(np.float32)  # noqa: E731
    ones, zeros = np.ones(channels, np.float32), np.zeros(channels, np.float32)
    return [conv(), ones, zeros.copy(), conv(), ones.copy(), zeros.copy()]


def flat_params(init):
    """Views of one flat buffer each for the parameters and their gradients, and the SGD update
    over all of them in four numpy calls (the floor steps' layout)."""
    total = sum(p.size for p in init)
    flat, grad_flat, buf, scratch = (np.zeros(total, np.float32) for _ in range(4))
    params, grads, start = [], [], 0
    for p in init:
        params.append(flat[start : start + p.size].reshape(p.shape))
        params[-1][...] = p
        grads.append(grad_flat[start : start + p.size].reshape(p.shape))
        start += p.size

    def update():
        np.multiply(buf, MOMENTUM, out=buf)
        np.add(buf, grad_flat, out=buf)
        np.multiply(buf, LR, out=scratch)
        np.subtract(flat, scratch, out=flat)

    return params, grads, update


def windows_of(padded, k, oh, ow):
    """im2col as a strided view: (C, N, H, W) ``padded`` -> (C, K, K, N, OH, OW), no copy."""
    sc, sn, sh, sw = padded.strides
    c, n = padded.shape[:2]
    return np.lib.stride_tricks.as_strided(padded, (c, k, k, n, oh, ow), (sc, sh, sw, sn, sh, sw), writeable=False)


def quadrants(a):
    """The four (C, N, H/2, W/2) views of a 2x2 max pool's windows of (C, N, H, W) ``a``."""
    c, n, h, w = a.shape
    v = a.reshape(c, n, h // 2, 2, w // 2, 2)
    return [v[:, :, :, i, :, j] for i in range(2) for j in range(2)]


def pool_relu(z, bias, quads, pooled, out):
    """``out = relu(maxpool2(z) + bias)``; ``pooled`` keeps the maxima (the max commutes with the
    per-channel bias and the relu, so both run on a quarter of the elements)."""
    np.maximum(quads[0], quads[1], out=pooled)
    np.maximum(pooled, quads[2], out=pooled)
    np.maximum(pooled, quads[3], out=pooled)
    np.add(pooled, bias[:, None, None, None], out=out)
    np.maximum(out, 0, out=out)


def pool_relu_grad(g, out, quads, pooled, gquads, mask):
    """The gradient of ``pool_relu``'s ``z`` into the views ``gquads`` from ``g`` (overwritten with
    the bias's gradient per element): each window's gradient goes where its maximum is (ties of
    positive values, which random data does not have, would each get it; zeros are masked by the relu)."""
    np.greater(out, 0, out=mask)
    np.multiply(g, mask, out=g)
    for q, gq in zip(quads, gquads):
        np.equal(q, pooled, out=mask)
        np.multiply(g, mask, out=gq)


def lenet_floor_step(x, y):
    """The fastest hand-written numpy LeNet step: activations kept channel-major (C, N, H, W) so
    that each convolution is one im2col copy of a strided view and one sgemm, each pool is three
    maxima of strided views, bias and relu run after the pool; every buffer preallocated."""
    params, grads, update = flat_params(lenet_params())
    n, f32 = len(y), np.float32
    rows, ones = np.arange(n), np.ones(n * 784, f32)
    xpad = np.zeros((1, n, 32, 32), f32)
    cols1, z1 = np.empty((25, n * 784), f32), np.empty((6, n * 784), f32)
    win1, cols1_6 = windows_of(xpad, 5, 28, 28), cols1.reshape(1, 5, 5, n, 28, 28)
    pooled1, a1, mask1 = np.empty((6, n, 14, 14), f32), np.empty((6, n, 14, 14), f32), np.empty((6, n, 14, 14), bool)
    cols2, z2 = np.empty((150, n * 100), f32), np.empty((16, n * 100), f32)
    win2, cols2_6 = windows_of(a1, 5, 10, 10), cols2.reshape(6, 5, 5, n, 10, 10)
    pooled2, a2, mask2 = np.empty((16, n, 5, 5), f32), np.empty((16, n, 5, 5), f32), np.empty((16, n, 5, 5), bool)
    quads1, quads2 = quadrants(z1.reshape(6, n, 28, 28)), quadrants(z2.reshape(16, n, 10, 10))
    gz1, gz2 = np.empty_like(z1), np.empty_like(z2)
    gquads1, gquads2 = quadrants(gz1.reshape(6, n, 28, 28)), quadrants(gz2.reshape(16, n, 10, 10))
    gcols2, ga1, ga2 = np.empty_like(cols2), np.empty_like(a1), np.empty_like(a2)
    gcols2_6 = gcols2.reshape(6, 5, 5, n, 10, 10)
    h0 = np.empty((n, 400), f32)
    sizes = [400, 120, 84, 10]
    outs = [np.empty((n, k), f32) for k in sizes[1:]]
    grad_outs = [np.empty((n, k), f32) for k in sizes]
    masks = [np.empty((n, k), bool) for k in sizes[1:]]
    w1, w2 = params[0].reshape(6, 25), params[2].reshape(16, 150)
    gw1, gw2 = grads[0].reshape(6, 25), grads[2].reshape(16, 150)

    def step():
        xpad[0, :, 2:30, 2:30] = x[:, 0]
        np.copyto(cols1_6, win1)
        np.matmul(w1, cols1, out=z1)
        pool_relu(z1.reshape(6, n, 28, 28), params[1], quads1, pooled1, a1)
        np.copyto(cols2_6, win2)
        np.matmul(w2, cols2, out=z2)
        pool_relu(z2.reshape(16, n, 10, 10), params[3], quads2, pooled2, a2)
        np.copyto(h0.reshape(n, 16, 5, 5), a2.transpose(1, 0, 2, 3))  # flatten as (C, H, W)
        h, acts = h0, [h0]
        for i in range(3):
            z = outs[i]
            np.matmul(h, params[4 + 2 * i].T, out=z)
            z += params[5 + 2 * i]
            if i < 2:
                np.maximum(z, 0, out=z)
            acts.append(z)
            h = z
        h -= h.max(axis=1, keepdims=True)
        np.exp(h, out=h)
        h /= h.sum(axis=1, keepdims=True)
        g = h
        g[rows, y] -= 1
        g *= 1 / n
        for i in reversed(range(3)):
            np.matmul(g.T, acts[i], out=grads[4 + 2 * i])
            np.matmul(ones[:n], g, out=grads[5 + 2 * i])
            np.matmul(g, params[4 + 2 * i], out=grad_outs[i])
            if i:
                np.greater(acts[i], 0, out=masks[i - 1])
                g = grad_outs[i]
                g *= masks[i - 1]
        np.copyto(ga2, grad_outs[0].reshape(n, 16, 5, 5).transpose(1, 0, 2, 3))
        pool_relu_grad(ga2, a2, quads2, pooled2, gquads2, mask2)
        np.matmul(ga2.reshape(16, n * 25), ones[: n * 25], out=grads[3])
        np.matmul(gz2, cols2.T, out=gw2)
        np.matmul(w2.T, gz2, out=gcols2)
        ga1.fill(0)  # col2im: 25 strided adds
        for i in range(5):
            for j in range(5):
                ga1[:, :, i : i + 10, j : j + 10] += gcols2_6[:, i, j]
        pool_relu_grad(ga1, a1, quads1, pooled1, gquads1, mask1)
        np.matmul(ga1.reshape(6, n * 196), ones[: n * 196], out=grads[1])
        np.matmul(gz1, cols1.T, out=gw1)
        update()

    step.parameters = lambda: params
    return step


def bn_forward(z, stats, sq, ones):
    """Batch norm of channel-major (C, M) ``z`` in place (it becomes x-hat); returns 1 / std and
    updates the running statistics."""
    m = z.shape[1]
    mean = z @ ones
    mean *= 1 / m
    z -= mean[:, None]
    np.square(z, out=sq)
    var = sq @ ones
    var *= 1 / m
    running_mean, running_var = stats
    running_mean *= 1 - BN_MOMENTUM
    running_mean += BN_MOMENTUM * mean
    running_var *= 1 - BN_MOMENTUM
    running_var += (BN_MOMENTUM * m / (m - 1)) * var
    invstd = 1 / np.sqrt(var + BN_EPS)
    z *= invstd[:, None]
    return invstd


def bn_backward(g, xhat, gamma, invstd, ggamma, gbeta, tmp, ones):
    """The gradient of batch norm's input, written over ``g`` (C, M), and of gamma and beta."""
    m = g.shape[1]
    np.matmul(g, ones, out=gbeta)
    np.multiply(g, xhat, out=tmp)
    np.matmul(tmp, ones, out=ggamma)
    np.multiply(xhat, (ggamma / m)[:, None], out=tmp)
    g -= tmp
    g -= (gbeta / m)[:, None]
    g *= (gamma * invstd)[:, None]


def block_floor_step(x, channels=64):
    """The fastest hand-written numpy ResNet basic block step: channel-major activations, each
    3x3 convolution one im2col copy into a padded buffer's strided view and one sgemm, batch norm
    in place with its sums as matrix-vector products, the input gradient's columns written over the
    second im2col buffer, col2im as nine strided adds."""
    params, grads, update = flat_params(block_params(channels))
    n, c, h, w = x.shape
    m, f32 = n * h * w, np.float32
    ones = np.ones(m, f32)
    stats = [[np.zeros(c, f32), np.ones(c, f32)] for _ in range(2)]
    xpad, hpad, ghpad = (np.zeros((c, n, h + 2, w + 2), f32) for _ in range(3))
    x_in, h_in, gh_in = (a[:, :, 1 : h + 1, 1 : w + 1] for a in (xpad, hpad, ghpad))
    cols_a, cols_b = np.empty((c * 9, m), f32), np.empty((c * 9, m), f32)
    win_a, win_b = windows_of(xpad, 3, h, w), windows_of(hpad, 3, h, w)
    cols_a6, cols_b6 = cols_a.reshape(c, 3, 3, n, h, w), cols_b.reshape(c, 3, 3, n, h, w)
    z1, z2, out, tmp = (np.empty((c, m), f32) for _ in range(4))
    mask = np.empty((c, m), bool)
    w1, w2 = params[0].reshape(c, c * 9), params[3].reshape(c, c * 9)
    gw1, gw2 = grads[0].reshape(c, c * 9), grads[3].reshape(c, c * 9)
    four = lambda a: a.reshape(c, n, h, w)  # noqa: E731

    def step():
        np.copyto(x_in, x.transpose(1, 0, 2, 3))
        np.copyto(cols_a6, win_a)
        np.matmul(w1, cols_a, out=z1)
        inv1 = bn_forward(z1, stats[0], tmp, ones)
        np.multiply(four(z1), params[1][:, None, None, None], out=h_in)
        np.add(h_in, params[2][:, None, None, None], out=h_in)
        np.maximum(h_in, 0, out=h_in)
        np.copyto(cols_b6, win_b)
        np.matmul(w2, cols_b, out=z2)
        inv2 = bn_forward(z2, stats[1], tmp, ones)
        np.multiply(z2, params[4][:, None], out=out)
        np.add(out, params[5][:, None], out=out)
        np.add(four(out), x_in, out=four(out))
        np.maximum(out, 0, out=out)
        # the loss is out.mean(): its gradient is 1/numel where the relu passed
        np.greater(out, 0, out=mask)
        g = out
        np.multiply(mask, 1 / out.size, out=g)
        bn_backward(g, z2, params[4], inv2, grads[4], grads[5], tmp, ones)
        np.matmul(g, cols_b.T, out=gw2)
        np.matmul(w2.T, g, out=cols_b)  # the input gradient's columns
        ghpad.fill(0)
        for i in range(3):
            for j in range(3):
                ghpad[:, :, i : i + h, j : j + w] += cols_b6[:, i, j]
        g = tmp
        np.greater(h_in, 0, out=four(mask))
        np.multiply(gh_in, four(mask), out=four(g))
        bn_backward(g, z1, params[1], inv1, grads[1], grads[2], z2, ones)
        np.matmul(g, cols_a.T, out=gw1)
        update()

    step.parameters = lambda: params
    return step


class BasicBlock(nn.Module):
    """ResNet's basic block: conv3x3-bn-relu-conv3x3-bn, plus the input, relu."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        h = nn.functional.relu(self.bn1(self.conv1(x)))
        return nn.functional.relu(self.bn2(self.conv2(h)) + x)


def lenet_layers(mod):
    """LeNet-5 from a module namespace (tinytensor's ``nn`` or ``torch.nn``)."""
    return mod.Sequential(
        mod.Conv2d(1, 6, 5, padding=2),
        mod.ReLU(),
        mod.MaxPool2d(2),
        mod.Conv2d(6, 16, 5),
        mod.ReLU(),
        mod.MaxPool2d(2),
        mod.Flatten(),
        mod.Linear(400, 120),
        mod.ReLU(),
        mod.Linear(120, 84),
        mod.ReLU(),
        mod.Linear(84, 10),
    )


def tinytensor_conv_step(kind, x, y):
    if kind == "lenet":
        model, state = lenet_layers(nn), dict(zip(LENET_KEYS, lenet_params()))
    else:
        model, state = BasicBlock(x.shape[1]), dict(zip(BLOCK_KEYS, block_params(x.shape[1])))
    model.load_state_dict(state, strict=False)
    opt = optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    tx, ty = tt.tensor(x), tt.tensor(y if y is not None else [])
    loss = (lambda: nn.cross_entropy(model(tx), ty)) if kind == "lenet" else (lambda: model(tx).mean())

    def step():
        opt.zero_grad()
        loss().backward()
        opt.step()

    step.parameters = lambda: [p.numpy() for p in model.parameters()]
    return step


def torch_conv_step(torch, kind, x, y):
    if kind == "lenet":
        model, state = lenet_layers(torch.nn), dict(zip(LENET_KEYS, lenet_params()))
    else:
        model, state = _torch_block(torch, x.shape[1]), dict(zip(BLOCK_KEYS, block_params(x.shape[1])))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=False)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y if y is not None else np.zeros(0, np.int64))
    loss_fn = torch.nn.functional.cross_entropy
    loss = (lambda: loss_fn(model(tx), ty)) if kind == "lenet" else (lambda: model(tx).mean())

    def step():
        opt.zero_grad()
        loss().backward()
        opt.step()

    step.parameters = lambda: [p.detach().numpy() for p in model.parameters()]
    return step


def _torch_block(torch, channels):
    tnn = torch.nn

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = tnn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = tnn.BatchNorm2d(channels)
            self.conv2 = tnn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = tnn.BatchNorm2d(channels)

        def forward(self, x):
            h = tnn.functional.relu(self.bn1(self.conv1(x)))
            return tnn.functional.relu(self.bn2(self.conv2(h)) + x)

    return Block()


# ------------------------------------------------------------------ measurements
def bench_op_overhead(torch):
    a = tt.tensor(np.ones((4, 4), np.float32), requires_grad=True)
    b = tt.tensor(np.ones((4, 4), np.float32), requires_grad=True)
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


def conv_data(kind, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "lenet":
        return rng.standard_normal((64, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, 64).astype(np.int64)
    return rng.standard_normal((32, 64, 32, 32)).astype(np.float32), None


def bench_conv(torch, kind):
    x, y = conv_data(kind)
    fns = {
        "tinytensor": tinytensor_conv_step(kind, x, y),
        "floor": lenet_floor_step(x, y) if kind == "lenet" else block_floor_step(x),
    }
    if torch is not None:
        fns["torch"] = torch_conv_step(torch, kind, x, y)
    return timed(fns, round_seconds=0.25, rounds=10 if kind == "lenet" else 5)


# (name, function, its arguments, targets: (peer, the most tinytensor's time may be of the peer's))
CASES = [
    ("op overhead: a + b, 4x4, grad on", bench_op_overhead, (), [("torch", 0.37)]),
    ("MLP 64-256-256-10, batch 128, train step", bench_mlp, ([64, 256, 256, 10], 128), [("torch", 0.72)]),
    ("MLP 784-1024-1024-10, batch 256, train step", bench_mlp, ([784, 1024, 1024, 10], 256), [("numpy", 1.03)]),
    ("LeNet-5, batch 64, 1x28x28, train step", bench_conv, ("lenet",), [("floor", 1.15), ("torch", 2.0)]),
    ("ResNet basic block, 32x64x32x32, train step", bench_conv, ("block",), [("floor", 1.15), ("torch", 2.5)]),
]
MEMORY_TARGET = 2.0  # one LeNet step's peak, tinytensor over PyTorch


def _status_kib(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def memory_child(contender):
    """Run in a fresh process: print one LeNet step's peak RSS over what the process holds between
    steps (for the floor, over what it held before its preallocated buffers were made) and, for
    the numpy contenders, tracemalloc's peak of one step's numpy allocations."""
    x, y = conv_data("lenet")
    before = _status_kib("VmRSS")
    if contender == "torch":
        import torch

        torch.set_num_threads(1)
        step = torch_conv_step(torch, "lenet", x, y)
    else:
        step = tinytensor_conv_step("lenet", x, y) if contender == "tinytensor" else lenet_floor_step(x, y)
    step()  # the first step makes what every later one keeps (gradients, momentum, caches)
    step()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # Linux: the peak RSS (VmHWM) starts again from the current RSS
    # the floor allocates nothing per step: its step's memory is its buffers, made with the step
    base = before if contender == "floor" else _status_kib("VmRSS")
    for _ in range(3):
        step()
    rss = (_status_kib("VmHWM") - base) * 1024
    traced = None
    if contender != "torch":
        tracemalloc.start()
        step()
        traced = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(json.dumps({"rss": rss, "traced": traced}))


def bench_memory(contenders):
    """Each contender's LeNet step in a fresh process, with glibc's mmap threshold fixed (128 KiB)
    so that every large array is mapped and unmapped and the RSS follows what is live."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072", OPENBLAS_NUM_THREADS="1")
    out = {}
    for name in contenders:
        run = subprocess.run(
            [sys.executable, __file__, "--memory-child", name], env=env, capture_output=True, text=True, check=True
        )
        out[name] = json.loads(run.stdout.strip().splitlines()[-1])
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="tinytensor CPU benchmarks (ratios against numpy and PyTorch)")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        memory_child(args.memory_child)
        return 0
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
    nan = float("nan")
    print(
        f"{'benchmark':46s} {'tinytensor':>12s} {'numpy':>12s} {'torch':>12s} {'floor':>12s}"
        f" {'tt/numpy':>9s} {'tt/torch':>9s} {'floor/peer':>10s}  target"
    )
    for name, fn, fargs, targets in CASES:
        r = fn(torch, *fargs)
        ratio_np = r["tinytensor"] / r["numpy"] if "numpy" in r else nan
        ratio_torch = r["tinytensor"] / r["torch"] if "torch" in r else nan
        texts, verdicts, floors = [], [], []
        for peer, target in targets:
            judged = r["tinytensor"] / r[peer] if peer in r else nan
            floor = r["floor"] / r[peer] if peer in r else nan
            if judged != judged:
                verdict = "n/a"
            elif judged <= target:
                verdict = "PASS"
            else:  # a floor above the target: no library over numpy reaches it here
                verdict = "MISS, below the floor" if floor > target else "MISS"
            shown = f" {judged:.2f}" if peer == "floor" else ""  # the other ratios have their columns
            texts.append(f"tt/{peer}{shown} <= {target:.2f}: {verdict}")
            verdicts.append(verdict)
            if peer != "floor":
                floors.append(floor)
        floor = floors[0] if floors else nan
        cell = lambda k: fmt(r[k]) if k in r else f"{'-':>12s}"  # noqa: E731
        print(
            f"{name:46s} {cell('tinytensor')} {cell('numpy')} {cell('torch')} {cell('floor')}"
            f" {ratio_np:9.2f} {ratio_torch:9.2f} {floor:10.2f}  {'; '.join(texts)}"
        )
        rows.append(
            {
                "name": name,
                "seconds": r,
                "ratio_numpy": ratio_np,
                "ratio_torch": ratio_torch,
                "ratio_floor": r["tinytensor"] / r["floor"],
                "floor_ratio": floor,
                "target": "; ".join(f"tt/{peer} <= {target}" for peer, target in targets),
                "verdict": "; ".join(verdicts),
            }
        )
    contenders = ["tinytensor", "floor"] + (["torch"] if torch is not None else [])
    mem = bench_memory(contenders)
    mib = lambda b: f"{b / 2**20:9.1f}MiB"  # noqa: E731
    ratio = mem["tinytensor"]["rss"] / mem["torch"]["rss"] if "torch" in mem else nan
    floor = mem["floor"]["rss"] / mem["torch"]["rss"] if "torch" in mem else nan
    verdict = "n/a" if ratio != ratio else "PASS" if ratio <= MEMORY_TARGET else "MISS"
    if verdict == "MISS" and floor > MEMORY_TARGET:
        verdict = "MISS, below the floor"
    name = "LeNet-5 step, peak RSS over the held RSS"
    print(
        f"{name:46s} {mib(mem['tinytensor']['rss'])} {'-':>12s} {mib(mem['torch']['rss']) if 'torch' in mem else '-':>12s}"
        f" {mib(mem['floor']['rss'])} {'':9s} {ratio:9.2f} {floor:10.2f}  tt/torch <= {MEMORY_TARGET:.2f}: {verdict}"
    )
    print(
        f"{'  (tracemalloc, numpy allocations of one step)':46s} {mib(mem['tinytensor']['traced'])}"
        f" {'-':>12s} {'-':>12s} {mib(mem['floor']['traced'])}"
    )
    rows.append(
        {
            "name": name,
            "bytes": mem,
            "ratio_torch": ratio,
            "floor_ratio": floor,
            "target": f"tt/torch <= {MEMORY_TARGET}",
            "verdict": verdict,
        }
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
