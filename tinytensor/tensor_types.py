"""PyTorch's typed tensor constructors: ``tt.FloatTensor``, ``DoubleTensor``, ``HalfTensor``,
``IntTensor``, ``LongTensor``, ``BoolTensor``.

Each makes a CPU tensor of its dtype, from data (``tt.FloatTensor([1, 2])``) or a shape
(``tt.LongTensor(3, 4)``), and answers ``isinstance``: ``isinstance(x, tt.FloatTensor)`` is true
for a float32 tensor on the CPU. They are not classes of their own: what they make is a
``tt.Tensor``.
"""

from __future__ import annotations

import operator

import numpy as np

from .creation import tensor, zeros
from .devices import backend_of
from .dtypes import numpy_dtype
from .tensor import Tensor


class TensorType(type):
    """The type of ``tt.FloatTensor`` and its kind: calling one makes a tensor, ``isinstance``
    checks the dtype and that the tensor is on the CPU."""

    dtype: str

    def __call__(cls, *args: object) -> Tensor:
        name = cls.__name__
        if not args:
            return zeros(0, dtype=cls.dtype)
        sizes = [a for a in args if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))]
        if len(sizes) == len(args):
            if any(a < 0 for a in sizes):
                raise ValueError(f"{name}(): a shape holds non-negative integers, got {tuple(int(a) for a in sizes)}")
            # PyTorch leaves such a tensor uninitialised; here it holds zeros.
            return zeros(*(operator.index(a) for a in sizes), dtype=cls.dtype)
        if len(args) > 1:
            raise TypeError(
                f"{name}(): takes data (a list, an array or a tensor) or a shape as ints, got "
                f"{', '.join(type(a).__name__ for a in args)}"
            )
        data = args[0]
        if isinstance(data, Tensor):
            if not cls.__instancecheck__(data):  # isinstance(data, cls), which checkers take for a class test
                raise TypeError(
                    f"{name}(): expected a {cls.dtype} tensor on the CPU, got {data.dtype} on {data.device}; "
                    f"use .to({cls.dtype!r})"
                )
            return data.detach()  # as PyTorch: the same storage
        if isinstance(data, (bool, int, float, complex, np.generic, str, bytes)) or data is None:
            raise TypeError(f"{name}(): data must be a sequence or an array, got {type(data).__name__}")
        return tensor(data, dtype=cls.dtype)

    def __instancecheck__(cls, obj: object) -> bool:
        return (
            isinstance(obj, Tensor)
            and numpy_dtype(obj.dtype) == np.dtype(cls.dtype)
            and backend_of(obj._data).kind == "cpu"
        )

    def __repr__(cls) -> str:
        return f"<class 'tinytensor.{cls.__name__}'>"


def _tensor_type(name: str, dtype: str) -> TensorType:
    doc = (
        f"{dtype} tensors on the CPU, as ``torch.{name}``: ``{name}(data)`` copies data into one, "
        f"``{name}(*shape)`` makes zeros of that shape, and ``isinstance(x, {name})`` checks dtype and device."
    )
    return TensorType(name, (), {"dtype": dtype, "is_cuda": False, "__doc__": doc, "__module__": "tinytensor"})


HalfTensor = _tensor_type("HalfTensor", "float16")
FloatTensor = _tensor_type("FloatTensor", "float32")
DoubleTensor = _tensor_type("DoubleTensor", "float64")
IntTensor = _tensor_type("IntTensor", "int32")
LongTensor = _tensor_type("LongTensor", "int64")
BoolTensor = _tensor_type("BoolTensor", "bool")
