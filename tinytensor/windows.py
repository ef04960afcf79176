"""Sliding windows over the spatial axes of (N, C, H, W) arrays: the geometry that convolution,
pooling, ``unfold`` and ``fold`` share, and the checks of their size arguments.

A ``Window`` is one 2-D window placement: kernel, stride, padding and dilation per axis, and the
output size. One-dimensional ops use height 1 (kernel 1, stride 1, no padding). The backends'
``im2col`` and ``col2im`` take a Window; their array layout is (N, C, KH, KW, OH, OW).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from .argcheck import is_integral


class Window(NamedTuple):
    """Where a kh x kw kernel lands on an input of h x w: ``stride``, ``padding`` (each side) and
    ``dilation`` per axis, and the oh x ow placements that result."""

    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    dh: int
    dw: int
    oh: int
    ow: int

    @property
    def kernel_area(self) -> int:
        return self.kh * self.kw


def tuple_arg(fn: str, name: str, value: object, n: int, minimum: int) -> tuple[int, ...]:
    """An int, or a tuple or list of ``n`` ints, each >= ``minimum``, as an ``n``-tuple (PyTorch's
    ``_pair`` and ``_single``); an error that names ``fn`` and ``name`` otherwise."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(items) == 1 and n > 1:
        items = items * n
    if len(items) != n:
        raise ValueError(f"{fn}: {name} must be an int or a tuple of {n} ints, got {value!r}")
    out = []
    for item in items:
        if not is_integral(item):
            raise TypeError(f"{fn}: {name} must be an int or a tuple of {n} ints, got {value!r}")
        if item < minimum:
            raise ValueError(f"{fn}: {name} must be >= {minimum}, got {value!r}")
        out.append(int(item))
    return tuple(out)


def placements(size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool = False) -> int:
    """The number of window placements along one axis (PyTorch's rule: with ``ceil_mode`` a last,
    partial window counts if it starts inside the input or its left padding)."""
    span = dilation * (kernel - 1) + 1
    room = size + 2 * padding - span
    if not ceil_mode:
        return max(room // stride + 1, 0)
    # ceil_mode rounds up even a window wider than the padded input (PyTorch's floor division)
    out = -(-room // stride) + 1
    if (out - 1) * stride >= size + padding:
        out -= 1
    return max(out, 0)


def empty_placement(size: int, kernel: int, stride: int, padding: int, dilation: int, out: int) -> int | None:
    """The first of ``out`` placements along one axis whose taps all fall outside the input (in
    the padding, or between dilated taps), or None when every window sees the input."""
    for i in range(out):
        start = i * stride - padding
        if not any(0 <= start + k * dilation < size for k in range(kernel)):
            return i
    return None


@functools.lru_cache(maxsize=512)
def window(
    fn: str,
    spatial: tuple[int, int],
    kernel: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    ceil_mode: bool = False,
) -> Window:
    """The Window of a kernel over an input of ``spatial`` (h, w), computed once per shape; an
    error naming ``fn`` when the kernel does not fit (PyTorch's "Kernel size can't be greater than
    actual input size" and "Output size is too small")."""
    h, w = spatial
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    oh = placements(h, kh, sh, ph, dh, ceil_mode)
    ow = placements(w, kw, sw, pw, dw, ceil_mode)
    if oh < 1 or ow < 1:
        raise ValueError(
            f"{fn}: the kernel {kernel} (dilation {dilation}) does not fit the input of spatial size "
            f"{spatial} with padding {padding}: the output would be {oh}x{ow}"
        )
    return Window(kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
