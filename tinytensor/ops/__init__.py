"""Ops on tensors, each next to its gradient. ``install`` makes them Tensor methods and operators."""

from . import arith, elementwise, nn_ops, reduce, shape


def install(cls) -> None:
    """Attach the ops to ``Tensor`` (done once, when tinytensor is imported)."""
    methods = {
        "__add__": arith.add,
        "__radd__": arith.radd,
        "__sub__": arith.sub,
        "__rsub__": arith.rsub,
        "__mul__": arith.mul,
        "__rmul__": arith.rmul,
        "__truediv__": arith.div,
        "__rtruediv__": arith.rdiv,
        "__pow__": arith.pow,
        "__rpow__": arith.rpow,
        "__neg__": arith.neg,
        "__matmul__": arith.matmul,
        "__rmatmul__": arith.rmatmul,
        "__eq__": arith.eq,
        "__ne__": arith.ne,
        "__lt__": arith.lt,
        "__le__": arith.le,
        "__gt__": arith.gt,
        "__ge__": arith.ge,
        "__abs__": elementwise.abs,
        "__getitem__": shape.getitem,
        "__setitem__": shape.setitem,
        "matmul": arith.matmul,
        "pow": arith.pow,
        "exp": elementwise.exp,
        "log": elementwise.log,
        "sqrt": elementwise.sqrt,
        "abs": elementwise.abs,
        "tanh": elementwise.tanh,
        "sigmoid": elementwise.sigmoid,
        "relu": elementwise.relu,
        "gelu": elementwise.gelu,
        "clip": elementwise.clip,
        "maximum": elementwise.maximum,
        "minimum": elementwise.minimum,
        "sum": reduce.sum,
        "mean": reduce.mean,
        "max": reduce.max,
        "min": reduce.min,
        "var": reduce.var,
        "logsumexp": reduce.logsumexp,
        "reshape": shape.reshape,
        "flatten": shape.flatten,
        "permute": shape.permute,
        "transpose": shape.transpose,
        "expand": shape.expand,
        "squeeze": shape.squeeze,
        "unsqueeze": shape.unsqueeze,
        "softmax": nn_ops.softmax,
        "log_softmax": nn_ops.log_softmax,
    }
    for name, fn in methods.items():
        setattr(cls, name, fn)
    cls.T = property(shape.T)
    cls.mT = property(lambda self: shape.transpose(self, -2, -1))
    cls.clamp = cls.clip
