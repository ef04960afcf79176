"""Tensor's operator surface, declared once: each op, the Tensor methods and operators it is, and
whether it is also ``tt.<name>`` and ``nn.functional.<name>``.

``install`` puts the methods on Tensor; ``functions`` builds the two namespaces (their forms take an
array or Python data as the first argument too, unless the op reads its arguments itself);
``tinytensor/_surface.pyi``, ``_activations.pyi`` and ``nn/functional.pyi``, the signatures for
type checkers and editors, and ``docs/operations.md``, the table of every op for readers, are
generated from this table (``python -m ci.dev.surface_stubs``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

from ..tensor import Tensor, accepts_arrays
from . import (
    arith,
    conv,
    cumulative,
    elementwise,
    indexing,
    inplace,
    linalg,
    loss_functions,
    math_functions,
    nn_ops,
    normalization,
    pointwise_losses,
    pooling,
    queries,
    reduce,
    resample,
    shape,
    sorting,
    split_repeat,
)
from .elementwise import ACTIVATION_OPS


class Op(NamedTuple):
    """One operation of the surface: its function and where it is installed."""

    name: str  # as tt.<name> and nn.functional.<name>
    fn: Callable[..., Any]  # Any: ops return tensors, tuples of them, bools or None
    methods: tuple[str, ...] = ()  # Tensor methods and operators
    tt: bool = False
    functional: bool = False
    converts_first: bool = True  # the module-level form converts an array or Python data first argument
    differentiable: bool = True  # gradients flow from its result to its floating-point tensor inputs


def _method(name: str, fn: Callable[..., Any], *dunders: str) -> Op:
    return Op(name, fn, (name, *dunders))


def _everywhere(name: str, fn: Callable[..., Any], *methods: str) -> Op:
    """An op that is a method (by its name) and ``tt.<name>``."""
    return Op(name, fn, (name, *methods), tt=True)


def _no_grad(*ops: Op) -> tuple[Op, ...]:
    """Ops whose results carry no gradient (comparisons, indices, predicates, in-place changes)."""
    return tuple(op._replace(differentiable=False) for op in ops)


OPS: tuple[Op, ...] = (
    # arithmetic and comparison operators
    _method("add", arith.add, "__add__"),
    Op("__radd__", arith.radd, ("__radd__",)),
    _method("sub", arith.sub, "__sub__"),
    Op("__rsub__", arith.rsub, ("__rsub__",)),
    _method("mul", arith.mul, "__mul__"),
    Op("__rmul__", arith.rmul, ("__rmul__",)),
    _method("div", arith.div, "__truediv__"),
    Op("__rtruediv__", arith.rdiv, ("__rtruediv__",)),
    _method("pow", arith.pow, "__pow__"),
    Op("__rpow__", arith.rpow, ("__rpow__",)),
    Op("__neg__", arith.neg, ("__neg__",)),
    Op("matmul", arith.matmul, ("matmul",), tt=True, converts_first=False),
    Op("__matmul__", arith.dunder_matmul, ("__matmul__",)),
    Op("__rmatmul__", arith.rmatmul, ("__rmatmul__",)),
    *_no_grad(
        _everywhere("eq", arith.eq, "__eq__"),
        _everywhere("ne", arith.ne, "__ne__"),
        _everywhere("lt", arith.lt, "__lt__"),
        _everywhere("le", arith.le, "__le__"),
        _everywhere("gt", arith.gt, "__gt__"),
        _everywhere("ge", arith.ge, "__ge__"),
        Op("__floordiv__", arith.floordiv, ("__floordiv__",)),
        Op("__mod__", arith.mod, ("__mod__",)),
        Op("__and__", arith.and_, ("__and__", "__rand__")),
        Op("__or__", arith.or_, ("__or__", "__ror__")),
        Op("__xor__", arith.xor, ("__xor__", "__rxor__")),
        Op("__invert__", arith.invert, ("__invert__",)),
    ),
    # elementwise
    _everywhere("abs", elementwise.abs, "__abs__"),
    _everywhere("exp", elementwise.exp),
    _everywhere("log", elementwise.log),
    _everywhere("sqrt", elementwise.sqrt),
    *(Op(name, fn, (name,), tt=True, functional=True) for name, fn in ACTIVATION_OPS.items()),
    Op("leaky_relu", elementwise.leaky_relu, ("leaky_relu",), functional=True),
    _everywhere("clip", elementwise.clip, "clamp"),
    Op("clamp", elementwise.clip, tt=True),
    Op("maximum", elementwise.maximum, ("maximum",), tt=True, converts_first=False),
    Op("minimum", elementwise.minimum, ("minimum",), tt=True, converts_first=False),
    Op("where", elementwise.where, tt=True, converts_first=False),
    _everywhere("neg", arith.neg),
    *(
        _everywhere(fn.__name__, fn)
        for fn in (
            math_functions.sin,
            math_functions.cos,
            math_functions.tan,
            math_functions.log1p,
            math_functions.expm1,
            math_functions.log2,
            math_functions.log10,
            math_functions.exp2,
            math_functions.reciprocal,
            math_functions.rsqrt,
            math_functions.square,
            math_functions.sign,
            math_functions.floor,
            math_functions.ceil,
            math_functions.round,
        )
    ),
    _everywhere("cumsum", cumulative.cumsum),
    # reductions
    *(
        _everywhere(fn.__name__, fn)
        for fn in (
            reduce.sum,
            reduce.mean,
            reduce.max,
            reduce.min,
            reduce.amax,
            reduce.amin,
            reduce.var,
            reduce.std,
            reduce.logsumexp,
        )
    ),
    *_no_grad(*(_everywhere(fn.__name__, fn) for fn in (reduce.argmax, reduce.argmin, reduce.all, reduce.any))),
    # shapes and indexing
    Op("__getitem__", shape.getitem, ("__getitem__",)),
    *_no_grad(Op("__setitem__", shape.setitem, ("__setitem__",))),
    *(
        _everywhere(fn.__name__, fn)
        for fn in (
            shape.reshape,
            shape.flatten,
            shape.permute,
            shape.transpose,
            shape.t,
            shape.expand,
            shape.squeeze,
            shape.unsqueeze,
        )
    ),
    _method("view", shape.view),
    *(_method(fn.__name__, fn) for fn in (shape.view_as, shape.reshape_as, shape.expand_as)),
    Op("cat", shape.cat, tt=True, converts_first=False),
    Op("concatenate", shape.concatenate, tt=True, converts_first=False),
    Op("stack", shape.stack, tt=True, converts_first=False),
    _everywhere("chunk", split_repeat.chunk),
    Op("split", split_repeat.split, tt=True, converts_first=False),
    _method("split", split_repeat.split_method),
    _method("repeat", split_repeat.repeat),
    _everywhere("gather", indexing.gather),
    _everywhere("masked_fill", indexing.masked_fill),
    *_no_grad(_everywhere("bincount", indexing.bincount)),
    # sorting
    _everywhere("sort", sorting.sort),
    *_no_grad(_everywhere("argsort", sorting.argsort)),
    _everywhere("topk", sorting.topk),
    # linear algebra
    _everywhere("mm", linalg.mm),
    _everywhere("norm", linalg.norm),
    # questions answered with Python values
    *_no_grad(
        _everywhere("allclose", queries.allclose),
        _everywhere("equal", queries.equal),
        Op("is_tensor", queries.is_tensor, tt=True, converts_first=False),
        _method("nelement", queries.nelement),
    ),
    Op("type", queries.tensor_type, ("type",)),  # a cast between floating dtypes is differentiable
    # neural-network ops
    # the method and tt.* need dim (as PyTorch's); nn.functional's pick PyTorch's implicit one, warning
    Op("softmax", nn_ops.softmax, ("softmax",), tt=True),
    Op("log_softmax", nn_ops.log_softmax, ("log_softmax",), tt=True),
    Op("softmax", nn_ops.functional_softmax, functional=True, converts_first=False),
    Op("log_softmax", nn_ops.functional_log_softmax, functional=True, converts_first=False),
    Op("dropout", nn_ops.dropout, tt=True, functional=True),
    Op("layer_norm", nn_ops.layer_norm, tt=True, functional=True),
    Op("embedding", nn_ops.embedding, tt=True, functional=True, converts_first=False),
    Op("linear", nn_ops.linear, functional=True, converts_first=False),
    *_no_grad(Op("one_hot", indexing.one_hot, functional=True, converts_first=False)),
    Op("batch_norm", normalization.batch_norm, functional=True),
    Op("group_norm", normalization.group_norm, functional=True),
    *(
        Op(fn.__name__, fn, functional=True, converts_first=False)
        for fn in (conv.conv1d, conv.conv2d, conv.conv_transpose2d, conv.unfold, conv.fold)
    ),
    # pooling, padding, resizing, channel dropout (the max pools' return_indices form returns a tuple)
    *(
        Op(fn.__name__, fn, functional=True)
        for fn in (
            pooling.max_pool1d,
            pooling.max_pool2d,
            pooling.avg_pool1d,
            pooling.avg_pool2d,
            pooling.adaptive_avg_pool1d,
            pooling.adaptive_avg_pool2d,
            pooling.adaptive_max_pool1d,
            pooling.adaptive_max_pool2d,
            resample.pad,
            resample.interpolate,
            resample.dropout2d,
        )
    ),
    *(
        Op(fn.__name__, fn, functional=True)
        for fn in (
            loss_functions.cross_entropy,
            loss_functions.nll_loss,
            pointwise_losses.mse_loss,
            pointwise_losses.l1_loss,
            pointwise_losses.binary_cross_entropy_with_logits,
            pointwise_losses.binary_cross_entropy,
            pointwise_losses.smooth_l1_loss,
            pointwise_losses.huber_loss,
        )
    ),
    # in place: they refuse tensors that require grad while gradients are recorded
    *_no_grad(
        *(
            _method(fn.__name__, fn)
            for fn in (
                inplace.add_,
                inplace.sub_,
                inplace.mul_,
                inplace.div_,
                inplace.zero_,
                inplace.fill_,
                inplace.copy_,
                inplace.clamp_,
                inplace.masked_fill_,
            )
        ),
        Op("__iadd__", inplace.iadd, ("__iadd__",)),
        Op("__isub__", inplace.isub, ("__isub__",)),
        Op("__imul__", inplace.imul, ("__imul__",)),
        Op("__itruediv__", inplace.itruediv, ("__itruediv__",)),
    ),
)


def _mT(self: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """The last two axes swapped (a batch of matrices transposed)."""
    return shape.transpose(self, -2, -1)


# Tensor properties: name -> getter
PROPERTIES: dict[str, Callable[[Tensor], Tensor]] = {"T": shape.T, "mT": _mT}


def _refusing(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, an operator's function, under a plain name: an operand it cannot take is a TypeError
    there (``NotImplemented`` is only the operator protocol's answer)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if out is NotImplemented:
            other = args[1] if len(args) > 1 else next(iter(kwargs.values()), None)
            raise TypeError(f"{name}: other must be a Tensor or a number, got {type(other).__name__}")
        return out

    return call


def _plain(op: Op) -> Callable[..., Any]:
    """The op's function for its plain (not dunder) names."""
    return _refusing(op.name, op.fn) if any(m.startswith("__") for m in op.methods) else op.fn


def install(cls: type[Tensor]) -> None:
    """Attach the ops to ``Tensor`` (done once, when tinytensor is imported)."""
    for op in OPS:
        for name in op.methods:
            setattr(cls, name, op.fn if name.startswith("__") else _plain(op))
    for name, getter in PROPERTIES.items():
        setattr(cls, name, property(getter))


def functions(namespace: str) -> dict[str, Callable[..., Any]]:
    """The ops of ``namespace`` ("tt" or "functional") by name, in their module-level form."""
    return {
        op.name: accepts_arrays(_plain(op)) if op.converts_first else _plain(op) for op in OPS if getattr(op, namespace)
    }
