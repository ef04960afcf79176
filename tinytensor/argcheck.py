"""Argument checks and spellings shared across the library: the errors name the function, the
argument and the problem. PyTorch's ``dim``/``keepdim`` and numpy's ``axis``/``keepdims`` both work."""

from __future__ import annotations

import numbers
import operator
from typing import TypeGuard, TypeVar

import numpy as np

_T = TypeVar("_T")


def int_at_least(fn: str, name: str, value: object, minimum: int) -> int:
    """``value`` as an int >= ``minimum``; bools, floats and strings are TypeErrors, smaller ints
    ValueErrors (messages: "<fn>: <name> must be an int >= <minimum>, got ...")."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fn}: {name} must be an int >= {minimum}, got a bool")
    try:
        number = operator.index(value)  # type: ignore[arg-type]  # any object: index() decides, its TypeError is ours
    except TypeError:
        raise TypeError(f"{fn}: {name} must be an int >= {minimum}, got {type(value).__name__} {value!r:.40}") from None
    if number < minimum:
        raise ValueError(f"{fn}: {name} must be an int >= {minimum}, got {number}")
    return number


def dim_arg(fn: str, dim: _T, axis: _T | None) -> _T:
    """The axis argument from either spelling; both at once is an error."""
    if axis is None:
        return dim
    if dim is not None:
        raise TypeError(f"{fn}(): got both dim={dim!r} and axis={axis!r}; they are the same argument")
    return axis


def keepdim_arg(fn: str, keepdim: object, keepdims: object) -> bool:
    """The keepdim flag from either spelling (``keepdims`` is numpy's); both at once is an error."""
    if keepdims is None:
        return bool(keepdim)
    if keepdim:
        raise TypeError(f"{fn}(): got both keepdim and keepdims; they are the same argument")
    return bool(keepdims)


def is_real(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a real number and not a bool: an int, a float, a numpy integer or float, a
    Fraction (``numbers.Real``). A TypeGuard: an argument annotated ``float`` (what a user should
    pass) may still be anything at run time, and its check stays reachable for the type checker."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_integral(value: object) -> TypeGuard[int]:
    """Whether ``value`` is an integer and not a bool: an int or a numpy integer
    (``numbers.Integral``); a TypeGuard, as ``is_real``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
