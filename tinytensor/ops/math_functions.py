"""Elementwise math functions (trigonometry, logarithms, rounding, ...) and their derivatives.

Result dtypes follow PyTorch: a function with a fractional result (``sin``, ``log1p``,
``reciprocal``, ...) gives the default float (float32) for integer and bool tensors, where numpy
would give float64; ``square``, ``sign`` and the rounding functions keep integer dtypes (a bool
``square`` gives int64, as PyTorch). Rounding functions and ``sign`` have PyTorch's zero gradient.
"""

from __future__ import annotations

import math
import numbers
from typing import SupportsIndex

import numpy as np

from ..array_types import Array, Namespace
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..tensor import Tensor, wrap
from .elementwise import floating_unary, unary

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _zero_grad(xp: Namespace, g: Array, x: Array, out: Array) -> Array:
    return xp.zeros_like(g)


def sin(a: Tensor) -> Tensor:
    """The sine of each element."""
    return floating_unary(a, lambda xp, x: xp.sin(x), lambda xp, g, x, out: g * xp.cos(x))


def cos(a: Tensor) -> Tensor:
    """The cosine of each element."""
    return floating_unary(a, lambda xp, x: xp.cos(x), lambda xp, g, x, out: -g * xp.sin(x))


def tan(a: Tensor) -> Tensor:
    """The tangent of each element."""
    return floating_unary(a, lambda xp, x: xp.tan(x), lambda xp, g, x, out: g * (1 + out * out))


def log1p(a: Tensor) -> Tensor:
    """``log(1 + x)`` of each element, accurate for small ``x``."""
    return floating_unary(a, lambda xp, x: xp.log1p(x), lambda xp, g, x, out: g / (1 + x))


def expm1(a: Tensor) -> Tensor:
    """``exp(x) - 1`` of each element, accurate for small ``x``."""
    return floating_unary(a, lambda xp, x: xp.expm1(x), lambda xp, g, x, out: g * (out + 1))


def log2(a: Tensor) -> Tensor:
    """The base-2 logarithm of each element."""
    return floating_unary(a, lambda xp, x: xp.log2(x), lambda xp, g, x, out: g / (x * _LN2))


def log10(a: Tensor) -> Tensor:
    """The base-10 logarithm of each element."""
    return floating_unary(a, lambda xp, x: xp.log10(x), lambda xp, g, x, out: g / (x * _LN10))


def exp2(a: Tensor) -> Tensor:
    """``2 ** x`` of each element."""
    # the array API has no exp2; a Python float base keeps the array's dtype
    return floating_unary(a, lambda xp, x: 2.0**x, lambda xp, g, x, out: g * out * _LN2)


def reciprocal(a: Tensor) -> Tensor:
    """``1 / x`` of each element."""
    return floating_unary(a, lambda xp, x: 1.0 / x, lambda xp, g, x, out: -g * out * out)


def rsqrt(a: Tensor) -> Tensor:
    """``1 / sqrt(x)`` of each element."""
    return floating_unary(a, lambda xp, x: 1.0 / xp.sqrt(x), lambda xp, g, x, out: -0.5 * g * out * out * out)


def square(a: Tensor) -> Tensor:
    """``x * x`` of each element; a bool tensor gives int64 (as PyTorch)."""
    x = a._data
    if numpy_dtype(x.dtype).kind == "b":
        x = backend_of(x).astype(x, np.int64)
        return wrap(x * x)
    return unary(a, lambda xp, x: x * x, lambda xp, g, x, out: 2 * g * x)


def sign(a: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (NaN stays NaN); a bool tensor stays bool. Zero gradient."""
    x = a._data
    if numpy_dtype(x.dtype).kind == "b":
        return wrap(backend_of(x).copy(x))
    return unary(a, lambda xp, x: xp.sign(x), _zero_grad)


def _rounding(name: str, a: Tensor) -> Tensor:
    x = a._data
    backend = backend_of(x)
    if numpy_dtype(x.dtype).kind == "b":
        raise TypeError(f"{name}() is not defined for bool tensors (as in PyTorch)")
    if not backend.is_float(x):  # integers are already whole: a copy, as PyTorch returns
        return wrap(backend.copy(x))
    return unary(a, lambda xp, x: getattr(xp, name)(x), _zero_grad)


def floor(a: Tensor) -> Tensor:
    """The largest integer not above each element (integers come back as a copy). Zero gradient."""
    return _rounding("floor", a)


def ceil(a: Tensor) -> Tensor:
    """The smallest integer not below each element (integers come back as a copy). Zero gradient."""
    return _rounding("ceil", a)


def round(  # noqa: A001 - PyTorch's name
    a: Tensor,
    *,
    decimals: SupportsIndex = 0,  # an int (checked below: numbers.Integral, not bool)
) -> Tensor:
    """Each element rounded to ``decimals`` decimal places, halves to even (as PyTorch). Zero gradient."""
    if isinstance(decimals, bool) or not isinstance(decimals, numbers.Integral):
        raise TypeError(f"round(): decimals must be an int, got {type(decimals).__name__}")
    if decimals == 0:
        return _rounding("round", a)
    x = a._data
    backend = backend_of(x)
    if not backend.is_float(x):
        return _rounding("round", a)  # integers: a copy; bools: refused
    scale = 10.0 ** int(decimals)
    return unary(a, lambda xp, x: xp.round(x * scale) / scale, _zero_grad)
