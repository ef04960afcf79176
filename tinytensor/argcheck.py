"""Argument checks shared by constructors: the errors name the function, the argument and the problem."""

from __future__ import annotations

import operator

import numpy as np


def int_at_least(fn: str, name: str, value, minimum: int) -> int:
    """``value`` as an int >= ``minimum``; bools, floats and strings are TypeErrors, smaller ints
    ValueErrors (messages: "<fn>: <name> must be an int >= <minimum>, got ...")."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fn}: {name} must be an int >= {minimum}, got a bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{fn}: {name} must be an int >= {minimum}, got {type(value).__name__} {value!r:.40}") from None
    if value < minimum:
        raise ValueError(f"{fn}: {name} must be an int >= {minimum}, got {value}")
    return value
