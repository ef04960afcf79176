"""The op table: every op with its gradient, as (tinytensor call, PyTorch call, input shapes).

One helper (``run_case``) feeds the same seeded inputs to tinytensor on any device and to a
reference; the test files decide what the reference is (PyTorch, finite differences, or
tinytensor on the CPU for device-placement checks).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

import tinytensor as tt
from tinytensor.nn import functional as F


@dataclass(frozen=True)
class Spec:
    """One input: a float tensor that requires grad, or a constant (int labels, bool mask)."""

    kind: str  # "float" | "int" | "bool"
    shape: tuple
    domain: str = "any"  # float: "any", "positive", "nonzero"; int: upper bound in `high`
    high: int = 0


def f(*shape, domain="any"):
    return Spec("float", tuple(shape), domain)


def i(*shape, high):
    return Spec("int", tuple(shape), high=high)


def b(*shape):
    return Spec("bool", tuple(shape))


@dataclass(frozen=True)
class OpCase:
    name: str
    ours: object  # (tinytensor module, *inputs) -> Tensor
    torch: object  # (torch module, *inputs) -> torch.Tensor
    inputs: list = field(default_factory=list)  # one list of Specs per variant
    smooth: bool = True  # finite differences apply

    def ids(self):
        return [f"{self.name}-{k}" for k in range(len(self.inputs))]


def make_inputs(specs, seed: int, dtype=np.float64):
    """Host arrays for the specs, reproducible from the seed; floats kept away from kinks."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in specs:
        if spec.kind == "float":
            x = rng.standard_normal(spec.shape)
            if spec.domain == "positive":
                x = np.abs(x) + 0.5
            elif spec.domain == "nonzero":
                x = np.sign(x + 1e-12) * (np.abs(x) + 0.3)
            arrays.append(x.astype(dtype))
        elif spec.kind == "int":
            arrays.append(rng.integers(0, spec.high, spec.shape).astype(np.int64))
        else:
            arrays.append(rng.random(spec.shape) > 0.5)
    return arrays


def _torch_gelu(T, x):
    return T.nn.functional.gelu(x, approximate="tanh")


def _torch_linear(act):
    def fn(T, x, w, bias):
        y = T.nn.functional.linear(x, w, bias)
        if act == "relu":
            return T.relu(y)
        if act == "gelu":
            return _torch_gelu(T, y)
        return y

    return fn


def _dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else axis


def _reduction_cases():
    cases = []
    shapes = [(2, 3, 4)]
    axes = [None, 0, -1, (0, 2)]
    for axis in axes:
        for keep in (False, True):
            tag = f"{axis}-{keep}".replace(" ", "")
            inputs = [[f(*s)] for s in shapes]
            cases += [
                OpCase(
                    f"sum[{tag}]",
                    lambda t, x, a=axis, k=keep: x.sum(axis=a, keepdims=k),
                    lambda T, x, a=axis, k=keep: x.sum(dim=_dims(a, x.ndim), keepdim=k),
                    inputs,
                ),
                OpCase(
                    f"mean[{tag}]",
                    lambda t, x, a=axis, k=keep: x.mean(axis=a, keepdims=k),
                    lambda T, x, a=axis, k=keep: x.mean(dim=_dims(a, x.ndim), keepdim=k),
                    inputs,
                ),
                OpCase(
                    f"max[{tag}]",
                    lambda t, x, a=axis, k=keep: x.max(axis=a, keepdims=k),
                    lambda T, x, a=axis, k=keep: T.amax(x, dim=_dims(a, x.ndim), keepdim=k),
                    inputs,
                ),
                OpCase(
                    f"min[{tag}]",
                    lambda t, x, a=axis, k=keep: t.min(x, axis=a, keepdims=k),
                    lambda T, x, a=axis, k=keep: T.amin(x, dim=_dims(a, x.ndim), keepdim=k),
                    inputs,
                ),
                OpCase(
                    f"var[{tag}]",
                    lambda t, x, a=axis, k=keep: x.var(axis=a, keepdims=k),
                    lambda T, x, a=axis, k=keep: T.var(x, dim=_dims(a, x.ndim), keepdim=k),
                    inputs,
                ),
                OpCase(
                    f"logsumexp[{tag}]",
                    lambda t, x, a=axis, k=keep: x.logsumexp(axis=a, keepdims=k),
                    lambda T, x, a=axis, k=keep: T.logsumexp(x, dim=_dims(a, x.ndim), keepdim=k),
                    inputs,
                ),
            ]
    return cases


BROADCAST_PAIRS = [
    [f(3, 4), f(3, 4)],
    [f(3, 4), f(4)],
    [f(2, 1, 4), f(3, 1)],
    [f(), f(2, 3)],
]

CASES: list[OpCase] = [
    OpCase("add", lambda t, x, y: x + y, lambda T, x, y: x + y, BROADCAST_PAIRS),
    OpCase("sub", lambda t, x, y: x - y, lambda T, x, y: x - y, BROADCAST_PAIRS),
    OpCase("mul", lambda t, x, y: x * y, lambda T, x, y: x * y, BROADCAST_PAIRS),
    OpCase(
        "div",
        lambda t, x, y: x / y,
        lambda T, x, y: x / y,
        [[f(3, 4), f(3, 4, domain="nonzero")], [f(2, 1, 4), f(3, 1, domain="nonzero")]],
    ),
    OpCase(
        "scalar_ops",
        lambda t, x: (2.0 - x) * 3.0 + x / 4.0 - 1.5,
        lambda T, x: (2.0 - x) * 3.0 + x / 4.0 - 1.5,
        [[f(3, 4)]],
    ),
    OpCase("rdiv", lambda t, x: 1.0 / x, lambda T, x: 1.0 / x, [[f(3, 4, domain="nonzero")]]),
    OpCase("neg", lambda t, x: -x, lambda T, x: -x, [[f(3, 4)]]),
    OpCase("pow_scalar", lambda t, x: x**3.0, lambda T, x: x**3.0, [[f(3, 4)]]),
    OpCase("pow_sqrt", lambda t, x: x**0.5, lambda T, x: x**0.5, [[f(3, 4, domain="positive")]]),
    OpCase(
        "pow_tensor",
        lambda t, x, y: x**y,
        lambda T, x, y: x**y,
        [[f(3, 4, domain="positive"), f(3, 4)], [f(3, 4, domain="positive"), f(4)]],
    ),
    OpCase("rpow", lambda t, x: 2.0**x, lambda T, x: 2.0**x, [[f(3, 4)]]),
    OpCase(
        "matmul",
        lambda t, x, y: x @ y,
        lambda T, x, y: x @ y,
        [
            [f(3, 4), f(4, 5)],
            [f(2, 3, 4), f(4, 5)],
            [f(4), f(4, 5)],
            [f(3, 4), f(4)],
            [f(4), f(4)],
            [f(2, 1, 3, 4), f(5, 4, 2)],
        ],
    ),
    OpCase("exp", lambda t, x: x.exp(), lambda T, x: x.exp(), [[f(3, 4)]]),
    OpCase("log", lambda t, x: t.log(x), lambda T, x: x.log(), [[f(3, 4, domain="positive")]]),
    OpCase("sqrt", lambda t, x: x.sqrt(), lambda T, x: x.sqrt(), [[f(3, 4, domain="positive")]]),
    OpCase("abs", lambda t, x: abs(x), lambda T, x: x.abs(), [[f(3, 4, domain="nonzero")]]),
    OpCase("tanh", lambda t, x: x.tanh(), lambda T, x: x.tanh(), [[f(3, 4)]]),
    OpCase("sigmoid", lambda t, x: x.sigmoid(), lambda T, x: x.sigmoid(), [[f(3, 4)]]),
    OpCase("relu", lambda t, x: x.relu(), lambda T, x: x.relu(), [[f(3, 4, domain="nonzero")]]),
    OpCase("gelu", lambda t, x: x.gelu(), _torch_gelu, [[f(3, 4)]]),
    OpCase(
        "maximum",
        lambda t, x, y: t.maximum(x, y),
        lambda T, x, y: T.maximum(x, y),
        [[f(3, 4), f(3, 4)], [f(3, 4), f(4)]],
    ),
    OpCase(
        "minimum",
        lambda t, x, y: t.minimum(x, y),
        lambda T, x, y: T.minimum(x, y),
        [[f(3, 4), f(3, 4)], [f(2, 1, 4), f(3, 1)]],
    ),
    OpCase("maximum_scalar", lambda t, x: t.maximum(x, 0.25), lambda T, x: T.clamp(x, min=0.25), [[f(3, 4)]]),
    OpCase("clip", lambda t, x: x.clip(-0.5, 0.7), lambda T, x: x.clamp(-0.5, 0.7), [[f(4, 5)]]),
    OpCase(
        "where",
        lambda t, c, x, y: t.where(c, x, y),
        lambda T, c, x, y: T.where(c, x, y),
        [[b(3, 4), f(3, 4), f(3, 4)], [b(3, 4), f(4), f(3, 1)]],
    ),
    *_reduction_cases(),
    OpCase("reshape", lambda t, x: x.reshape(4, -1), lambda T, x: x.reshape(4, -1), [[f(2, 3, 4)]]),
    OpCase("flatten", lambda t, x: x.flatten(1), lambda T, x: x.flatten(1), [[f(2, 3, 4)]]),
    OpCase("transpose", lambda t, x: x.transpose(0, 2), lambda T, x: x.transpose(0, 2), [[f(2, 3, 4)]]),
    OpCase("T", lambda t, x: x.T, lambda T, x: x.permute(1, 0), [[f(3, 4)]]),
    OpCase("permute", lambda t, x: x.permute(2, 0, 1), lambda T, x: x.permute(2, 0, 1), [[f(2, 3, 4)]]),
    OpCase("expand", lambda t, x: x.expand(2, 3, 4), lambda T, x: x.expand(2, 3, 4), [[f(3, 1)], [f(1, 4)]]),
    OpCase("squeeze", lambda t, x: x.squeeze(1), lambda T, x: x.squeeze(1), [[f(3, 1, 4)]]),
    OpCase("squeeze_all", lambda t, x: x.squeeze(), lambda T, x: x.squeeze(), [[f(1, 3, 1)]]),
    OpCase("unsqueeze", lambda t, x: x.unsqueeze(-1), lambda T, x: x.unsqueeze(-1), [[f(3, 4)]]),
    OpCase(
        "concatenate",
        lambda t, x, y: t.concatenate([x, y], axis=1),
        lambda T, x, y: T.cat([x, y], dim=1),
        [[f(2, 3), f(2, 5)]],
    ),
    OpCase(
        "stack", lambda t, x, y: t.stack([x, y], axis=1), lambda T, x, y: T.stack([x, y], dim=1), [[f(2, 3), f(2, 3)]]
    ),
    OpCase("slice", lambda t, x: x[1:3, ::2], lambda T, x: x[1:3, ::2], [[f(4, 5)]]),
    OpCase("index_int", lambda t, x: x[None, 0], lambda T, x: x[None, 0], [[f(4, 5)]]),
    OpCase("index_ellipsis", lambda t, x: x[..., 1], lambda T, x: x[..., 1], [[f(2, 3, 4)]]),
    OpCase("gather", lambda t, x, idx: x[idx], lambda T, x, idx: x[idx], [[f(5, 3), i(7, high=5)]]),
    OpCase("gather_2d", lambda t, x, idx: x[idx], lambda T, x, idx: x[idx], [[f(4, 3), i(2, 6, high=4)]]),
    OpCase("softmax", lambda t, x: x.softmax(axis=-1), lambda T, x: x.softmax(dim=-1), [[f(3, 5)], [f(2, 3, 4)]]),
    OpCase("softmax_axis0", lambda t, x: t.softmax(x, axis=0), lambda T, x: x.softmax(dim=0), [[f(3, 5)]]),
    OpCase("log_softmax", lambda t, x: x.log_softmax(axis=-1), lambda T, x: x.log_softmax(dim=-1), [[f(3, 5)]]),
    OpCase(
        "embedding",
        lambda t, idx, w: t.embedding(idx, w),
        lambda T, idx, w: T.nn.functional.embedding(idx, w),
        [[i(9, high=4), f(4, 3)], [i(2, 5, high=6), f(6, 2)]],
    ),
    OpCase(
        "layer_norm",
        lambda t, x, w, bias: t.layer_norm(x, (4,), w, bias),
        lambda T, x, w, bias: T.nn.functional.layer_norm(x, (4,), w, bias),
        [[f(3, 4), f(4), f(4)]],
    ),
    OpCase(
        "layer_norm_2d",
        lambda t, x, w, bias: t.layer_norm(x, (3, 4), w, bias),
        lambda T, x, w, bias: T.nn.functional.layer_norm(x, (3, 4), w, bias),
        [[f(2, 3, 4), f(3, 4), f(3, 4)]],
    ),
    OpCase(
        "linear",
        lambda t, x, w, bias: F.linear(x, w, bias),
        _torch_linear(None),
        [[f(5, 4), f(3, 4), f(3)], [f(2, 5, 4), f(3, 4), f(3)]],
    ),
    OpCase(
        "linear_relu",
        lambda t, x, w, bias: F.linear(x, w, bias, activation="relu"),
        _torch_linear("relu"),
        [[f(6, 4), f(3, 4), f(3)]],
    ),
    OpCase(
        "linear_gelu",
        lambda t, x, w, bias: F.linear(x, w, bias, activation="gelu"),
        _torch_linear("gelu"),
        [[f(6, 4), f(3, 4), f(3)]],
    ),
    *[
        OpCase(
            f"cross_entropy[{red}]",
            lambda t, x, y, r=red: F.cross_entropy(x, y, reduction=r),
            lambda T, x, y, r=red: T.nn.functional.cross_entropy(x, y, reduction=r),
            [[f(6, 5), i(6, high=5)]],
        )
        for red in ("mean", "sum", "none")
    ],
    OpCase(
        "nll_loss",
        lambda t, x, y: F.nll_loss(x.log_softmax(axis=1), y),
        lambda T, x, y: T.nn.functional.nll_loss(x.log_softmax(dim=1), y),
        [[f(6, 5), i(6, high=5)]],
    ),
    OpCase(
        "mse_loss",
        lambda t, x, y: F.mse_loss(x, y),
        lambda T, x, y: T.nn.functional.mse_loss(x, y),
        [[f(4, 3), f(4, 3)]],
    ),
    OpCase(
        "bce_with_logits",
        lambda t, x, y: F.binary_cross_entropy_with_logits(x, y),
        lambda T, x, y: T.nn.functional.binary_cross_entropy_with_logits(x, y),
        [[f(4, 3), f(4, 3, domain="positive")]],
    ),
    OpCase(
        "leaky_relu",
        lambda t, x: F.leaky_relu(x),
        lambda T, x: T.nn.functional.leaky_relu(x),
        [[f(3, 4, domain="nonzero")]],
    ),
    OpCase(
        "leaky_relu[0.2]",
        lambda t, x: F.leaky_relu(x, 0.2),
        lambda T, x: T.nn.functional.leaky_relu(x, 0.2),
        [[f(3, 4, domain="nonzero")]],
    ),
    *[
        OpCase(
            f"l1_loss[{red}]",
            lambda t, x, y, r=red: F.l1_loss(x, y, reduction=r),
            lambda T, x, y, r=red: T.nn.functional.l1_loss(x, y, reduction=r),
            [[f(4, 3), f(4, 3)]],
        )
        for red in ("mean", "sum", "none")
    ],
    # ignore_index: the seeded targets of class 2 become -100 (the default ignore_index, outside the
    # classes: 3 of 8 rows ignored), or class 1 is itself the ignore_index (2 of 8 rows).
    *[
        OpCase(
            f"cross_entropy[ignore-{red}]",
            lambda t, x, y, r=red: F.cross_entropy(
                x, t.tensor(np.where(y.numpy() == 2, -100, y.numpy()), device=y.device), reduction=r
            ),
            lambda T, x, y, r=red: T.nn.functional.cross_entropy(x, T.where(y == 2, -100, y), reduction=r),
            [[f(8, 4), i(8, high=4)]],
        )
        for red in ("mean", "sum", "none")
    ],
    OpCase(
        "cross_entropy[ignore_class]",
        lambda t, x, y: F.cross_entropy(x, y, ignore_index=1),
        lambda T, x, y: T.nn.functional.cross_entropy(x, y, ignore_index=1),
        [[f(8, 4), i(8, high=4)]],
    ),
    *[
        OpCase(
            f"cross_entropy[smoothing-{red}]",
            lambda t, x, y, r=red: F.cross_entropy(x, y, reduction=r, label_smoothing=0.1),
            lambda T, x, y, r=red: T.nn.functional.cross_entropy(x, y, reduction=r, label_smoothing=0.1),
            [[f(6, 5), i(6, high=5)]],
        )
        for red in ("mean", "sum", "none")
    ],
    *[
        OpCase(
            f"cross_entropy[ignore+smoothing-{red}]",
            lambda t, x, y, r=red: F.cross_entropy(
                x,
                t.tensor(np.where(y.numpy() == 2, -100, y.numpy()), device=y.device),
                reduction=r,
                label_smoothing=0.25,
            ),
            lambda T, x, y, r=red: T.nn.functional.cross_entropy(
                x, T.where(y == 2, -100, y), reduction=r, label_smoothing=0.25
            ),
            [[f(8, 4), i(8, high=4)]],
        )
        for red in ("mean", "none")
    ],
    *[
        OpCase(
            f"nll_loss[ignore-{red}]",
            lambda t, x, y, r=red: F.nll_loss(
                x.log_softmax(axis=1), t.tensor(np.where(y.numpy() == 2, -100, y.numpy()), device=y.device), reduction=r
            ),
            lambda T, x, y, r=red: T.nn.functional.nll_loss(
                x.log_softmax(dim=1), T.where(y == 2, -100, y), reduction=r
            ),
            [[f(8, 4), i(8, high=4)]],
        )
        for red in ("mean", "sum", "none")
    ],
    OpCase(
        "nll_loss[ignore_class]",
        lambda t, x, y: F.nll_loss(x.log_softmax(axis=1), y, ignore_index=3),
        lambda T, x, y: T.nn.functional.nll_loss(x.log_softmax(dim=1), y, ignore_index=3),
        [[f(8, 4), i(8, high=4)]],
    ),
]


def _unary_cases():
    """The elementwise math functions: (name, tinytensor call, PyTorch call, domain)."""
    rows = [
        ("sin", lambda t, x: x.sin(), lambda T, x: x.sin(), "any"),
        ("cos", lambda t, x: t.cos(x), lambda T, x: x.cos(), "any"),
        ("tan", lambda t, x: (x * 0.4).tan(), lambda T, x: (x * 0.4).tan(), "any"),  # away from pi/2
        ("log1p", lambda t, x: x.log1p(), lambda T, x: x.log1p(), "positive"),
        ("expm1", lambda t, x: t.expm1(x), lambda T, x: x.expm1(), "any"),
        ("log2", lambda t, x: x.log2(), lambda T, x: x.log2(), "positive"),
        ("log10", lambda t, x: t.log10(x), lambda T, x: x.log10(), "positive"),
        ("exp2", lambda t, x: x.exp2(), lambda T, x: x.exp2(), "any"),
        ("reciprocal", lambda t, x: x.reciprocal(), lambda T, x: x.reciprocal(), "nonzero"),
        ("rsqrt", lambda t, x: t.rsqrt(x), lambda T, x: x.rsqrt(), "positive"),
        ("square", lambda t, x: x.square(), lambda T, x: x.square(), "any"),
        ("neg_fn", lambda t, x: t.neg(x), lambda T, x: T.neg(x), "any"),
        # zero gradients, as PyTorch's (the seeded inputs are far from the steps)
        ("sign", lambda t, x: x.sign(), lambda T, x: x.sign(), "nonzero"),
        ("floor", lambda t, x: x.floor(), lambda T, x: x.floor(), "any"),
        ("ceil", lambda t, x: t.ceil(x), lambda T, x: x.ceil(), "any"),
        ("round", lambda t, x: (x * 3).round(), lambda T, x: (x * 3).round(), "any"),
        ("round_decimals", lambda t, x: t.round(x, decimals=1), lambda T, x: T.round(x, decimals=1), "any"),
    ]
    return [OpCase(name, ours, ref, [[f(3, 4, domain=domain)]]) for name, ours, ref, domain in rows]


def _pieces_sum(pieces):
    """The pieces weighted 1, 2, 3, ... and joined again: each piece's gradient differs."""
    return [piece * (k + 1) for k, piece in enumerate(pieces)]


def _norm_cases():
    cases = []
    for p in (2, "fro", 1, float("inf"), float("-inf"), 3, 0.5):
        for dim, keep in ((None, False), (1, False), ((0, 1), True), (0, True)):
            tag = f"{p}-{dim}-{keep}".replace(" ", "")
            cases.append(
                OpCase(
                    f"norm[{tag}]",
                    lambda t, x, p=p, d=dim, k=keep: x.norm(p=p, dim=d, keepdim=k),
                    lambda T, x, p=p, d=dim, k=keep: T.norm(x, p=p, dim=d, keepdim=k),
                    [[f(3, 4, domain="nonzero")]],
                )
            )
    return cases


CASES += [
    *_unary_cases(),
    OpCase("cumsum", lambda t, x: x.cumsum(1), lambda T, x: x.cumsum(1), [[f(3, 4)], [f(2, 3, 4)]]),
    OpCase("cumsum_dim0", lambda t, x: t.cumsum(x, dim=0), lambda T, x: T.cumsum(x, dim=0), [[f(3, 4)], [f(5)]]),
    OpCase(
        "gather_dim",
        lambda t, x, idx: t.gather(x, 1, idx),
        lambda T, x, idx: T.gather(x, 1, idx),
        [[f(3, 5), i(3, 4, high=5)], [f(2, 3, 4), i(2, 5, 3, high=3)]],
    ),
    OpCase(
        "gather_dim0",
        lambda t, x, idx: x.gather(0, idx),
        lambda T, x, idx: x.gather(0, idx),
        [[f(4, 3), i(2, 2, high=4)], [f(4, 3), i(6, 3, high=4)]],
    ),
    OpCase(
        "masked_fill",
        lambda t, x, m: x.masked_fill(m, -0.5),
        lambda T, x, m: x.masked_fill(m, -0.5),
        [[f(3, 4), b(3, 4)], [f(3, 4), b(4)], [f(4), b(3, 4)]],
    ),
    OpCase(
        "masked_fill_tensor",
        lambda t, x, m, v: t.masked_fill(x, m, v),
        lambda T, x, m, v: T.masked_fill(x, m, v),
        [[f(3, 4), b(3, 4), f()]],
    ),
    OpCase("repeat", lambda t, x: x.repeat(2, 1, 3), lambda T, x: x.repeat(2, 1, 3), [[f(2, 3)], [f(3)]]),
    OpCase("repeat_tuple", lambda t, x: x.repeat((2, 2)), lambda T, x: x.repeat((2, 2)), [[f(2, 3)]]),
    OpCase(
        "chunk",
        lambda t, x: t.cat(_pieces_sum(x.chunk(3, dim=1)), dim=1),
        lambda T, x: T.cat(_pieces_sum(x.chunk(3, dim=1)), dim=1),
        [[f(2, 7)], [f(2, 6)]],
    ),
    OpCase(
        "split",
        lambda t, x: t.cat(_pieces_sum(t.split(x, 2)), dim=0),
        lambda T, x: T.cat(_pieces_sum(T.split(x, 2)), dim=0),
        [[f(5, 3)]],
    ),
    OpCase(
        "split_sizes",
        lambda t, x: t.cat(_pieces_sum(x.split([1, 3, 0, 2], dim=-1)), dim=-1),
        lambda T, x: T.cat(_pieces_sum(x.split([1, 3, 0, 2], dim=-1)), dim=-1),
        [[f(2, 6)]],
    ),
    OpCase("sort", lambda t, x: x.sort().values, lambda T, x: x.sort().values, [[f(3, 5)], [f(6)]]),
    OpCase(
        "sort_descending",
        lambda t, x: t.sort(x, dim=0, descending=True).values,
        lambda T, x: T.sort(x, dim=0, descending=True).values,
        [[f(4, 3)]],
    ),
    OpCase("topk", lambda t, x: x.topk(2).values, lambda T, x: x.topk(2).values, [[f(3, 5)], [f(4)]]),
    OpCase(
        "topk_smallest",
        lambda t, x: t.topk(x, 3, dim=0, largest=False).values,
        lambda T, x: T.topk(x, 3, dim=0, largest=False).values,
        [[f(4, 3)]],
    ),
    *_norm_cases(),
    OpCase("mm", lambda t, x, y: x.mm(y), lambda T, x, y: x.mm(y), [[f(3, 4), f(4, 5)]]),
    OpCase("mm_fn", lambda t, x, y: t.mm(x, y), lambda T, x, y: T.mm(x, y), [[f(1, 4), f(4, 1)]]),
    OpCase(
        "matmul_keywords",
        lambda t, x, y: t.matmul(input=x, other=y),
        lambda T, x, y: T.matmul(input=x, other=y),
        [[f(2, 3, 4), f(4)]],
    ),
]


# Constants that take no gradient (class weights, element weights, running statistics): the same
# values on both sides, in the float input's dtype and on its device.
CLASS_WEIGHT = [0.5, 2.0, 1.0, 0.25, 1.5]
RUNNING_MEAN, RUNNING_VAR = [0.3, -0.2, 0.1], [0.5, 2.0, 1.5]


def _torch_conv(T, fn, *args, **kwargs):
    # PyTorch warns that an odd total "same" padding costs it a padded copy of the input
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Using padding='same'", UserWarning)
        return getattr(T.nn.functional, fn)(*args, **kwargs)


def _conv_case(name, fn, kwargs, inputs):
    """One convolution row: tinytensor's and PyTorch's ``nn.functional.<fn>`` with the same arguments."""
    return OpCase(
        f"{fn}[{name}]",
        lambda t, *a, k=kwargs: getattr(F, fn)(*a, **k),
        lambda T, *a, k=kwargs: _torch_conv(T, fn, *a, **k),
        inputs,
    )


# convolution: stride, padding (numbers and strings), dilation, groups (depthwise too), odd sizes, batch 1
CASES += [
    _conv_case("plain", "conv2d", {}, [[f(2, 2, 5, 4), f(3, 2, 3, 2), f(3)]]),
    _conv_case(
        "stride-pad-dilation",
        "conv2d",
        dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
        [[f(1, 2, 5, 5), f(2, 2, 2, 3), f(2)]],
    ),
    _conv_case("groups", "conv2d", dict(groups=2, padding=1), [[f(2, 4, 3, 3), f(4, 2, 2, 2)]]),
    _conv_case("depthwise", "conv2d", dict(groups=3, stride=2), [[f(1, 3, 5, 5), f(6, 1, 3, 3), f(6)]]),
    _conv_case("same", "conv2d", dict(padding="same", dilation=(2, 1)), [[f(1, 2, 5, 4), f(2, 2, 2, 2)]]),
    _conv_case("valid", "conv2d", dict(padding="valid"), [[f(1, 1, 4, 3), f(2, 1, 3, 3), f(2)]]),
    _conv_case("stride-groups", "conv1d", dict(stride=2, padding=1, groups=2), [[f(2, 4, 7), f(4, 2, 3), f(4)]]),
    _conv_case("same-dilation", "conv1d", dict(padding="same", dilation=2), [[f(1, 2, 6), f(3, 2, 2)]]),
    _conv_case(
        "stride-output-padding",
        "conv_transpose2d",
        dict(stride=2, padding=1, output_padding=1, groups=2),
        [[f(1, 4, 3, 2), f(4, 1, 3, 2), f(2)]],
    ),
    _conv_case("dilation", "conv_transpose2d", dict(stride=(1, 2), dilation=(2, 1)), [[f(2, 2, 2, 3), f(2, 3, 2, 2)]]),
    _conv_case(
        "windows", "unfold", dict(kernel_size=(2, 3), padding=1, stride=(2, 1), dilation=(1, 2)), [[f(1, 2, 4, 5)]]
    ),
    _conv_case(
        "windows", "fold", dict(output_size=(4, 5), kernel_size=(2, 3), padding=1, stride=(2, 1)), [[f(2, 12, 15)]]
    ),
]


def _const(t, like, values):
    return t.tensor(np.array(values), dtype=like.dtype, device=like.device)


def _tconst(T, like, values):
    return T.tensor(np.array(values), dtype=like.dtype)


def _ignored_2(t, y):
    """The seeded targets of class 2 set to -100 (the default ignore_index)."""
    return t.tensor(np.where(y.numpy() == 2, -100, y.numpy()), device=y.device)


CASES += [
    # class weights: each row weighs w[target]; the mean divides by the counted rows' weights
    *[
        OpCase(
            f"cross_entropy[weight-{red}]",
            lambda t, x, y, r=red: F.cross_entropy(x, y, _const(t, x, CLASS_WEIGHT[:4]), reduction=r),
            lambda T, x, y, r=red: T.nn.functional.cross_entropy(x, y, _tconst(T, x, CLASS_WEIGHT[:4]), reduction=r),
            [[f(8, 4), i(8, high=4)]],
        )
        for red in ("mean", "sum", "none")
    ],
    *[
        OpCase(
            f"cross_entropy[weight+ignore+smoothing-{red}]",
            lambda t, x, y, r=red: F.cross_entropy(
                x, _ignored_2(t, y), weight=_const(t, x, CLASS_WEIGHT[:4]), reduction=r, label_smoothing=0.2
            ),
            lambda T, x, y, r=red: T.nn.functional.cross_entropy(
                x, T.where(y == 2, -100, y), weight=_tconst(T, x, CLASS_WEIGHT[:4]), reduction=r, label_smoothing=0.2
            ),
            [[f(8, 4), i(8, high=4)]],
        )
        for red in ("mean", "sum", "none")
    ],
    OpCase(
        "cross_entropy[weight+ignore_class]",
        lambda t, x, y: F.cross_entropy(x, y, _const(t, x, CLASS_WEIGHT), ignore_index=0),
        lambda T, x, y: T.nn.functional.cross_entropy(x, y, _tconst(T, x, CLASS_WEIGHT), ignore_index=0),
        [[f(9, 5), i(9, high=5)]],
    ),
    OpCase(
        "cross_entropy[weight+smoothing]",
        lambda t, x, y: F.cross_entropy(x, y, _const(t, x, CLASS_WEIGHT), label_smoothing=0.3),
        lambda T, x, y: T.nn.functional.cross_entropy(x, y, _tconst(T, x, CLASS_WEIGHT), label_smoothing=0.3),
        [[f(6, 5), i(6, high=5)]],
    ),
    *[
        OpCase(
            f"nll_loss[weight-{red}]",
            lambda t, x, y, r=red: F.nll_loss(
                x.log_softmax(axis=1), _ignored_2(t, y), _const(t, x, CLASS_WEIGHT[:4]), reduction=r
            ),
            lambda T, x, y, r=red: T.nn.functional.nll_loss(
                x.log_softmax(dim=1), T.where(y == 2, -100, y), _tconst(T, x, CLASS_WEIGHT[:4]), reduction=r
            ),
            [[f(8, 4), i(8, high=4)]],
        )
        for red in ("mean", "sum", "none")
    ],
    # binary_cross_entropy on probabilities: sigmoid keeps input and target inside (0, 1)
    *[
        OpCase(
            f"binary_cross_entropy[{red}]",
            lambda t, x, y, r=red: F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction=r),
            lambda T, x, y, r=red: T.nn.functional.binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction=r),
            [[f(4, 3), f(4, 3)]],
        )
        for red in ("mean", "sum", "none")
    ],
    OpCase(
        "binary_cross_entropy[weight]",
        lambda t, x, y: F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), _const(t, x, CLASS_WEIGHT[:3])),
        lambda T, x, y: T.nn.functional.binary_cross_entropy(x.sigmoid(), y.sigmoid(), _tconst(T, x, CLASS_WEIGHT[:3])),
        [[f(4, 3), f(4, 3)]],
    ),
    *[
        OpCase(
            f"smooth_l1_loss[{red}-{beta}]",
            lambda t, x, y, r=red, b=beta: F.smooth_l1_loss(x, y, reduction=r, beta=b),
            lambda T, x, y, r=red, b=beta: T.nn.functional.smooth_l1_loss(x, y, reduction=r, beta=b),
            [[f(5, 4), f(5, 4)]],
        )
        for red, beta in (("mean", 1.0), ("sum", 0.5), ("none", 2.0), ("mean", 0.0))
    ],
    *[
        OpCase(
            f"huber_loss[{red}-{delta}]",
            lambda t, x, y, r=red, d=delta: F.huber_loss(x, y, reduction=r, delta=d),
            lambda T, x, y, r=red, d=delta: T.nn.functional.huber_loss(x, y, reduction=r, delta=d),
            [[f(5, 4), f(5, 4)]],
        )
        for red, delta in (("mean", 1.0), ("sum", 0.5), ("none", 2.0))
    ],
    OpCase(
        "huber_loss[weight]",
        lambda t, x, y: F.huber_loss(x, y, delta=0.8, weight=_const(t, x, [CLASS_WEIGHT[:4]] * 3)),
        lambda T, x, y: T.nn.functional.huber_loss(x, y, delta=0.8, weight=_tconst(T, x, [CLASS_WEIGHT[:4]] * 3)),
        [[f(3, 4), f(3, 4)]],
    ),
    # pooling, padding and resizing (ops/pooling.py, ops/resample.py): each op over its parameters
    # (stride, padding, dilation, ceil_mode both ways, the divisors; uneven adaptive windows; the pad
    # modes, negative pads; the resize modes, align_corners, scale_factor), odd sizes, batch 1, unbatched
    *[
        OpCase(
            f"{fn}[{name}]",
            lambda t, x, fn=fn, k=kwargs: getattr(F, fn)(x, **k),
            lambda T, x, fn=fn, k=kwargs: getattr(T.nn.functional, fn)(x, **k),
            [[f(*shape)] for shape in shapes],
        )
        for fn, name, kwargs, shapes in (
            ("max_pool2d", "k2", dict(kernel_size=2), [(2, 2, 5, 6), (1, 2, 4, 4)]),
            ("max_pool2d", "k3-s2-p1", dict(kernel_size=3, stride=2, padding=1), [(2, 2, 5, 5)]),
            ("max_pool2d", "k2x3-s1x2-d2x1", dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1)), [(1, 2, 5, 7)]),
            ("max_pool2d", "ceil", dict(kernel_size=3, stride=2, ceil_mode=True), [(2, 2, 6, 6)]),
            (
                "max_pool2d",
                "ceil-p1-d2",
                dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True),
                [(1, 2, 6, 7)],
            ),
            ("max_pool2d", "unbatched", dict(kernel_size=2, stride=1), [(2, 4, 5)]),
            ("max_pool1d", "k3-s2-p1", dict(kernel_size=3, stride=2, padding=1), [(2, 3, 7)]),
            ("max_pool1d", "ceil-d2", dict(kernel_size=2, dilation=2, ceil_mode=True), [(2, 2, 8)]),
            ("max_pool1d", "unbatched", dict(kernel_size=2), [(3, 7)]),
            ("avg_pool2d", "k2", dict(kernel_size=2), [(2, 2, 5, 6), (1, 2, 4, 4)]),
            ("avg_pool2d", "k3-s2-p1", dict(kernel_size=3, stride=2, padding=1), [(2, 2, 5, 5)]),
            (
                "avg_pool2d",
                "k3-s2-p1-no-pad-count",
                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                [(2, 2, 5, 5)],
            ),
            ("avg_pool2d", "ceil-p1", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), [(1, 2, 6, 7)]),
            (
                "avg_pool2d",
                "ceil-p1-no-pad-count",
                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                [(1, 2, 6, 7)],
            ),
            (
                "avg_pool2d",
                "divisor",
                dict(kernel_size=(2, 3), stride=1, padding=(1, 0), divisor_override=4),
                [(1, 2, 4, 5)],
            ),
            ("avg_pool2d", "unbatched", dict(kernel_size=(2, 3), stride=(1, 2)), [(2, 5, 5)]),
            (
                "avg_pool1d",
                "ceil-p1-no-pad-count",
                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                [(2, 2, 8)],
            ),
            ("avg_pool1d", "unbatched", dict(kernel_size=2), [(3, 7)]),
            ("adaptive_avg_pool2d", "global", dict(output_size=1), [(2, 3, 4, 4)]),
            ("adaptive_avg_pool2d", "uneven", dict(output_size=(3, 2)), [(1, 2, 5, 7), (2, 5, 7)]),
            ("adaptive_avg_pool2d", "None-entry", dict(output_size=(None, 3)), [(2, 2, 4, 5)]),
            ("adaptive_avg_pool2d", "larger", dict(output_size=(6, 5)), [(1, 2, 4, 3)]),
            ("adaptive_avg_pool1d", "uneven", dict(output_size=3), [(2, 2, 7), (2, 8)]),
            ("adaptive_max_pool2d", "even", dict(output_size=2), [(2, 2, 4, 6)]),
            ("adaptive_max_pool2d", "uneven", dict(output_size=(3, 2)), [(1, 2, 5, 7), (2, 5, 7)]),
            ("adaptive_max_pool2d", "None-entry-larger", dict(output_size=(None, 7)), [(1, 2, 3, 5)]),
            ("adaptive_max_pool1d", "uneven", dict(output_size=3), [(2, 2, 7)]),
            ("pad", "constant", dict(pad=(1, 2), value=0.5), [(2, 3, 4)]),
            ("pad", "constant-negative", dict(pad=(-1, 2, 1, 0)), [(2, 2, 4, 5)]),
            ("pad", "constant-3-axes", dict(pad=(1, 1, 0, 1, 1, 0)), [(2, 3, 3, 4)]),
            ("pad", "reflect", dict(pad=(2, 1), mode="reflect"), [(2, 3, 4), (3, 5)]),
            ("pad", "reflect-2-axes", dict(pad=(1, 2, 2, 1), mode="reflect"), [(1, 2, 4, 5), (2, 3, 4)]),
            ("pad", "reflect-negative", dict(pad=(-1, 3), mode="reflect"), [(1, 2, 5)]),
            ("pad", "replicate", dict(pad=(2, 0, 1, 3), mode="replicate"), [(1, 2, 3, 4)]),
            ("pad", "replicate-unbatched", dict(pad=(3, 1), mode="replicate"), [(2, 5)]),
            ("pad", "circular", dict(pad=(2, 1, 1, 2), mode="circular"), [(1, 2, 3, 4)]),
            ("pad", "circular-negative", dict(pad=(1, -1), mode="circular"), [(2, 2, 5)]),
            ("interpolate", "nearest-size", dict(size=(7, 9)), [(1, 2, 3, 4)]),
            ("interpolate", "nearest-x2", dict(scale_factor=2), [(2, 2, 2, 3)]),
            ("interpolate", "nearest-down", dict(scale_factor=0.6), [(1, 2, 5, 6)]),
            ("interpolate", "nearest-1d", dict(size=7), [(2, 2, 4)]),
            ("interpolate", "nearest-exact", dict(size=(5, 3), mode="nearest-exact"), [(1, 2, 3, 4)]),
            ("interpolate", "bilinear", dict(scale_factor=2, mode="bilinear"), [(1, 2, 3, 4)]),
            ("interpolate", "bilinear-align", dict(size=(5, 7), mode="bilinear", align_corners=True), [(1, 2, 3, 4)]),
            (
                "interpolate",
                "bilinear-recompute",
                dict(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
                [(2, 1, 3, 3)],
            ),
            ("interpolate", "bilinear-scales", dict(scale_factor=(0.6, 1.5), mode="bilinear"), [(1, 2, 5, 4)]),
            ("interpolate", "linear-align", dict(size=8, mode="linear", align_corners=True), [(2, 2, 5)]),
            ("interpolate", "linear-down", dict(scale_factor=0.5, mode="linear"), [(2, 2, 6)]),
            ("interpolate", "trilinear", dict(size=(3, 4, 2), mode="trilinear"), [(1, 1, 2, 3, 3)]),
            ("interpolate", "area", dict(size=(3, 2), mode="area"), [(1, 2, 5, 7)]),
        )
    ],
    # batch_norm: batch statistics (training, (N, C) and (N, C, L)), and running ones (evaluation)
    OpCase(
        "batch_norm[train]",
        lambda t, x, w, bias: F.batch_norm(x, None, None, w, bias, training=True),
        lambda T, x, w, bias: T.nn.functional.batch_norm(x, None, None, w, bias, training=True),
        [[f(6, 3), f(3), f(3)], [f(4, 3, 5), f(3), f(3)]],
    ),
    OpCase(
        "batch_norm[train-no-affine]",
        lambda t, x: F.batch_norm(x, None, None, training=True, eps=1e-3),
        lambda T, x: T.nn.functional.batch_norm(x, None, None, training=True, eps=1e-3),
        [[f(2, 3, 4)]],
    ),
    OpCase(
        "batch_norm[eval]",
        lambda t, x, w, bias: F.batch_norm(x, _const(t, x, RUNNING_MEAN), _const(t, x, RUNNING_VAR), w, bias),
        lambda T, x, w, bias: T.nn.functional.batch_norm(
            x, _tconst(T, x, RUNNING_MEAN), _tconst(T, x, RUNNING_VAR), w, bias
        ),
        [[f(5, 3), f(3), f(3)], [f(2, 3, 4), f(3), f(3)]],
    ),
    # group_norm: groups of 2 channels, (N, C), (N, C, L), (N, C, H, W); one group; one value per group
    OpCase(
        "group_norm[affine]",
        lambda t, x, w, bias: F.group_norm(x, 2, w, bias),
        lambda T, x, w, bias: T.nn.functional.group_norm(x, 2, w, bias),
        [[f(2, 4, 3), f(4), f(4)], [f(3, 4, 2, 3), f(4), f(4)], [f(5, 4), f(4), f(4)]],
    ),
    OpCase(
        "group_norm[plain]",
        lambda t, x: F.group_norm(x, 1, eps=1e-3),
        lambda T, x: T.nn.functional.group_norm(x, 1, eps=1e-3),
        [[f(2, 3, 4)]],
    ),
    OpCase(
        "group_norm[one-per-group]",
        lambda t, x, w, bias: F.group_norm(x, 3, w, bias),
        lambda T, x, w, bias: T.nn.functional.group_norm(x, 3, w, bias),
        [[f(2, 3), f(3), f(3)]],
    ),
]

ALL_VARIANTS = [(case, k) for case in CASES for k in range(len(case.inputs))]
VARIANT_IDS = [f"{case.name}-{k}" for case, k in ALL_VARIANTS]


def run_ours(case: OpCase, variant: int, device: str, dtype=np.float64, seed: int = 0):
    """(output, {input index: grad}) as numpy arrays, computed on ``device``; also checks placement."""
    arrays = make_inputs(case.inputs[variant], seed, dtype)
    specs = case.inputs[variant]
    inputs = []
    for spec, arr in zip(specs, arrays, strict=False):
        t = tt.tensor(arr, device=device)
        if spec.kind == "float":
            t.requires_grad_(True)
        inputs.append(t)
    out = case.ours(tt, *inputs)
    assert out.device == inputs[0].device, f"{case.name}: output on {out.device}, inputs on {device}"
    upstream = np.random.default_rng(seed + 1).standard_normal(out.shape).astype(dtype)
    out.backward(tt.tensor(upstream, device=device))
    grads = {}
    for k, (spec, t) in enumerate(zip(specs, inputs, strict=False)):
        if spec.kind == "float":
            assert t.grad is not None, f"{case.name}: no gradient for input {k}"
            g = t.grad
            assert g.device == t.device, f"{case.name}: grad of input {k} on {g.device}, input on {t.device}"
            assert g.shape == t.shape, f"{case.name}: grad shape {g.shape} != input shape {t.shape}"
            assert g.dtype == t.dtype, f"{case.name}: grad dtype {g.dtype} != input dtype {t.dtype}"
            grads[k] = g.numpy()
    assert out.dtype == inputs[0].dtype or specs[0].kind != "float", f"{case.name}: output dtype {out.dtype}"
    return out.numpy(), grads


def run_torch(case: OpCase, variant: int, dtype=np.float64, seed: int = 0):
    import torch

    arrays = make_inputs(case.inputs[variant], seed, dtype)
    specs = case.inputs[variant]
    inputs = [torch.tensor(a, requires_grad=(s.kind == "float")) for s, a in zip(specs, arrays, strict=False)]
    out = case.torch(torch, *inputs)
    upstream = np.random.default_rng(seed + 1).standard_normal(tuple(out.shape)).astype(dtype)
    out.backward(torch.tensor(upstream))
    grads = {k: t.grad.numpy() for k, (s, t) in enumerate(zip(specs, inputs, strict=False)) if s.kind == "float"}
    return out.detach().numpy(), grads
