"""Linear algebra beyond ``@``: the matrix product ``mm`` and vector norms (``norm``), with gradients."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence

import numpy as np

from ..array_types import Array, DType, Namespace
from ..backend import Backend
from ..dtypes import is_float, resolve
from ..errors import ShapeError
from ..tensor import Tensor
from .arith import matmul, operand
from .reduce import _reduce, normalize_axes

# A p-norm in ``reduce._reduce``'s form: the forward ``(xp, x, axes)`` with the axes kept, and the
# gradient ``(backend, g, x, out, axes)`` (None: no gradient).
_Forward = Callable[[Namespace, Array, tuple[int, ...]], Array]
_Gradient = Callable[[Backend, Array, Array, Array, tuple[int, ...]], Array | None]


def mm(a: Tensor, mat2: Tensor) -> Tensor:
    """The matrix product of two 2-D tensors, ``(n, m) @ (m, p) -> (n, p)``.

    As PyTorch's ``mm``: both must be matrices (``matmul`` takes any rank and broadcasts) of one
    dtype, on one device. Raises ShapeError when a rank or the inner sizes do not fit."""
    b = operand(mat2, a, "mm", "mat2")
    if not isinstance(b, Tensor):
        raise TypeError(f"mm(): argument 'mat2' must be a Tensor, got {type(mat2).__name__}")
    if a.ndim != 2:
        raise ShapeError(f"mm(): self must be a matrix (2-D), got shape {a.shape}")
    if b.ndim != 2:
        raise ShapeError(f"mm(): mat2 must be a matrix (2-D), got shape {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ShapeError(
            f"mm(): mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and {b.shape[0]}x{b.shape[1]})"
        )
    return matmul(a, b)


def _order(p: object, dim: int | Sequence[int] | None) -> float:
    """``p`` as a float order; 'fro' is 2 over at most two axes, as in PyTorch."""
    if isinstance(p, str):
        if p == "fro":
            if isinstance(dim, (tuple, list)) and len(dim) > 2:
                raise ValueError(f"norm(): p='fro' takes at most 2 dims, got dim={dim!r}; use p=2 for more")
            return 2.0
        if p == "nuc":
            raise ValueError("norm(): the nuclear norm (p='nuc') is not supported")
        raise ValueError(f"norm(): unknown order p={p!r}: expected 'fro', a number >= 0, inf or -inf")
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"norm(): p must be a number, 'fro' or None, got {type(p).__name__}")
    p = float(p)
    if p < 0 and not math.isinf(p):
        raise ValueError(f"norm(): p={p} is not supported: expected 'fro', a number >= 0, inf or -inf")
    return p


def _safe_div(xp: Namespace, num: Array, den: Array) -> Array:
    """``num / den``, and 0 where ``den`` is 0 (the subgradient PyTorch takes at 0)."""
    zero = den == 0
    return xp.where(zero, 0, num / xp.where(zero, 1, den))


def _norm_rules(p: float) -> tuple[_Forward, _Gradient]:
    """(forward, gradient) in ``reduce._reduce``'s form for the p-norm over the reduced axes."""

    def check_empty(x: Array, axes: tuple[int, ...]) -> None:
        if any(x.shape[ax] == 0 for ax in axes):
            raise ShapeError(f"norm(): the {p} norm of an empty tensor of shape {tuple(x.shape)} is undefined")

    if p == 2:
        return (
            lambda xp, x, axes: xp.sqrt(xp.sum(x * x, axis=axes, keepdims=True)),
            lambda bk, g, x, out, axes: x * _safe_div(bk.xp, g, out),
        )
    if p == 1:
        return (
            lambda xp, x, axes: xp.sum(xp.abs(x), axis=axes, keepdims=True),
            lambda bk, g, x, out, axes: g * bk.xp.sign(x),
        )
    if math.isinf(p):
        pick = "max" if p > 0 else "min"

        def extremum(xp: Namespace, x: Array, axes: tuple[int, ...]) -> Array:
            check_empty(x, axes)
            return getattr(xp, pick)(xp.abs(x), axis=axes, keepdims=True)

        def extremum_grad(bk: Backend, g: Array, x: Array, out: Array, axes: tuple[int, ...]) -> Array:
            # ties share the gradient evenly, as in PyTorch
            xp = bk.xp
            hit = xp.astype(xp.abs(x) == out, g.dtype)
            return xp.sign(x) * hit * (g / xp.sum(hit, axis=axes, keepdims=True))

        return extremum, extremum_grad
    if p == 0:
        # the count of nonzero elements: no gradient (None), as in PyTorch
        return (
            lambda xp, x, axes: xp.sum(xp.astype(x != 0, x.dtype), axis=axes, keepdims=True),
            lambda bk, g, x, out, axes: None,
        )

    def general(xp: Namespace, x: Array, axes: tuple[int, ...]) -> Array:
        return xp.sum(xp.abs(x) ** p, axis=axes, keepdims=True) ** (1.0 / p)

    def general_grad(bk: Backend, g: Array, x: Array, out: Array, axes: tuple[int, ...]) -> Array:
        # d/dx = sign(x) |x|^(p-1) / out^(p-1), taken as 0 where x or out is 0
        xp = bk.xp
        magnitude = xp.abs(x)
        safe = xp.where(magnitude == 0, 1, magnitude)
        power = xp.where(magnitude == 0, 0, xp.sign(x) * safe ** (p - 1))
        return power * _safe_div(xp, g, xp.where(out == 0, 0, xp.where(out == 0, 1, out) ** (p - 1)))

    return general, general_grad


def norm(
    a: Tensor,
    p: str | float | None = "fro",
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    dtype: str | DType | None = None,
) -> Tensor:
    """The vector ``p``-norm over ``dim`` (all axes by default).

    Parameters
    ----------
    p : {'fro', float, inf, -inf}, default 'fro'
        ``'fro'`` (or None) is the 2-norm; a number >= 0 is ``sum(|x| ** p) ** (1 / p)``;
        ``p=0`` counts the nonzero elements, ``inf`` takes the largest magnitude and ``-inf`` the
        smallest.
    dim : int or sequence of ints, optional
        The axes to reduce (default: all; ``'fro'`` takes at most two).
    keepdim : bool, default False
        Keep the reduced axes with length 1.
    dtype : str or numpy dtype, optional
        A floating-point dtype to cast the input to first (differentiably).

    Returns
    -------
    Tensor
        The norms. The gradient at a zero norm is 0, as in PyTorch.

    Notes
    -----
    Floating-point tensors only. Unlike ``torch.norm``, ``p`` always means a vector norm, as in
    ``torch.linalg.vector_norm``: matrix norms (``'nuc'``, or a numeric ``p`` over two axes taken
    as a matrix norm) are not supported.
    """
    if dtype is not None:
        target = resolve(dtype, "norm()")
        if not is_float(target):
            raise TypeError(f"norm(): dtype must be a floating-point dtype, got {target}")
        a = a.to(dtype=dtype)  # to() resolves it as above
    if not is_float(a.dtype):
        raise TypeError(f"norm(): needs a floating-point tensor, got dtype {a.dtype}; convert with .float()")
    order = _order("fro" if p is None else p, dim)
    normalize_axes(dim, a.ndim)  # an invalid dim is reported before any work
    if not isinstance(keepdim, (bool, np.bool_)):
        raise TypeError(f"norm(): keepdim must be a bool, got {type(keepdim).__name__}")
    fwd, bwd = _norm_rules(order)
    return _reduce(a, dim, bool(keepdim), fwd, bwd)
