"""Names the package's annotations share for what static types cannot pin down.

An array is whatever the tensor's array namespace makes: a numpy.ndarray, a CuPy ndarray or an
array_api_strict Array. They share no static type (CuPy and array_api_strict are optional and
untyped), so annotations say ``Array``, which is Any to a type checker and documents the intent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from .tensor import Tensor

Array: TypeAlias = Any  # numpy.ndarray, cupy.ndarray or array_api_strict's Array
Namespace: TypeAlias = Any  # an array namespace: the numpy, cupy or array_api_strict module
DType: TypeAlias = Any  # a dtype of the array's own namespace (numpy.dtype, cupy's, array_api_strict's)
Shape: TypeAlias = tuple[int, ...]
# what a function that converts its tensor argument takes (``tensor.tensor_arg``): a Tensor, an
# array, a Python number or nested sequences of numbers (Any: the nesting has no fixed depth)
TensorLike: TypeAlias = "Tensor | Array | float | Sequence[Any]"
