"""Argument spellings: PyTorch's ``dim``/``keepdim`` and numpy's ``axis``/``keepdims`` both work."""

from __future__ import annotations


def dim_arg(fn: str, dim, axis):
    """The axis argument from either spelling; both at once is an error."""
    if axis is None:
        return dim
    if dim is not None:
        raise TypeError(f"{fn}(): got both dim={dim!r} and axis={axis!r}; they are the same argument")
    return axis


def keepdim_arg(fn: str, keepdim, keepdims) -> bool:
    if keepdims is None:
        return bool(keepdim)
    if keepdim:
        raise TypeError(f"{fn}(): got both keepdim and keepdims; they are the same argument")
    return bool(keepdims)
