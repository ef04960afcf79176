"""Grad mode: whether ops record the graph (``no_grad``, ``enable_grad``, ``set_grad_enabled``,
``inference_mode``), as PyTorch's context managers and decorators.

``GRAD_ENABLED[0]`` is the switch every op reads; a list, not a bool, so hot paths read it with one
index and no global rebinding.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Literal, ParamSpec, Self, TypeVar, overload

_P = ParamSpec("_P")
_R = TypeVar("_R")

GRAD_ENABLED = [True]

# Inference mode (tt.inference_mode): recorded only so is_inference_mode_enabled() can report it.
INFERENCE = [False]


class no_grad:
    """Context manager and decorator: ops inside record no graph."""

    def __enter__(self) -> Self:
        self._prev = GRAD_ENABLED[0]
        GRAD_ENABLED[0] = False
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        GRAD_ENABLED[0] = self._prev
        return False

    def __call__(self, fn: Callable[_P, _R]) -> Callable[_P, _R]:
        """Decorate ``fn``: each call runs in this mode."""
        mode = type(self)  # enable_grad's decorator too

        @functools.wraps(fn)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with mode():
                return fn(*args, **kwargs)

        return wrapper


class enable_grad(no_grad):
    """Turns recording back on inside a ``no_grad`` block."""

    def __enter__(self) -> Self:
        self._prev = GRAD_ENABLED[0]
        GRAD_ENABLED[0] = True
        return self


def is_grad_enabled() -> bool:
    """Whether ops record the graph now (False inside ``no_grad()`` and ``inference_mode()``)."""
    return GRAD_ENABLED[0]


class set_grad_enabled:
    """Turns recording on or off: at once when called (``tt.set_grad_enabled(False)``), and back to
    the mode it found when used as a context manager or decorator, as PyTorch's."""

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be a bool, got {type(mode).__name__}")
        self.prev = GRAD_ENABLED[0]
        self.mode = mode
        GRAD_ENABLED[0] = mode

    def __enter__(self) -> None:
        GRAD_ENABLED[0] = self.mode

    def __exit__(self, *exc: object) -> None:
        GRAD_ENABLED[0] = self.prev

    def __call__(self, fn: Callable[_P, _R]) -> Callable[_P, _R]:
        """Decorate ``fn``: each call runs with recording set to this mode."""
        GRAD_ENABLED[0] = self.prev  # as a decorator it changes nothing until the function runs
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class inference_mode:
    """Context manager and decorator (also bare, ``@tt.inference_mode``): ``inference_mode()`` is
    ``no_grad()`` that ``is_inference_mode_enabled()`` reports; ``inference_mode(False)`` turns
    recording back on, as PyTorch's. Unlike PyTorch's, tensors made inside are ordinary tensors
    (PyTorch makes inference tensors, which later graphs and in-place changes refuse), and it is
    no faster than ``no_grad()``."""

    mode: bool  # True: inference mode on (no recording); False: recording on

    @overload
    def __new__(cls, mode: bool = True) -> Self: ...
    # @tt.inference_mode, bare, returns the decorated function: mypy wants __new__ to return an instance
    @overload
    def __new__(cls, mode: Callable[_P, _R]) -> Callable[_P, _R]: ...  # type: ignore[misc]
    def __new__(cls, mode: object = True) -> Self | Callable[..., object]:  # type: ignore[misc]  # as above
        if isinstance(mode, bool):
            self = super().__new__(cls)
            self.mode = mode  # set here, not in __init__, so type checkers read the signature above
            return self
        if callable(mode):  # @tt.inference_mode without parentheses
            return cls()(mode)
        raise TypeError(f"inference_mode(): argument 'mode' must be a bool, got {type(mode).__name__}")

    def __enter__(self) -> None:
        self._prev = GRAD_ENABLED[0], INFERENCE[0]
        GRAD_ENABLED[0] = not self.mode
        INFERENCE[0] = self.mode

    def __exit__(self, *exc: object) -> None:
        GRAD_ENABLED[0], INFERENCE[0] = self._prev

    def __call__(self, fn: Callable[_P, _R]) -> Callable[_P, _R]:
        """Decorate ``fn``: each call runs in this mode."""
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper


def is_inference_mode_enabled() -> bool:
    """Whether an ``inference_mode()`` block is running."""
    return INFERENCE[0]
