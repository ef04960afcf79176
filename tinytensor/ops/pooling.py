"""Pooling, as PyTorch's ``nn.functional``: ``max_pool1d/2d`` (with ``return_indices``),
``avg_pool1d/2d`` and the adaptive pools ``adaptive_avg_pool1d/2d`` and ``adaptive_max_pool1d/2d``.

The window reductions and their gradients are ``Backend`` methods (``max_pool2d``,
``max_pool2d_grad``, ``avg_pool2d``, ``avg_pool2d_grad``), so a GPU backend runs them as kernels;
the 1-d pools are the 2-d ones over inputs of height 1, and unbatched (C, H, W) inputs are a
batch of one. The adaptive pools are plain pools where the output size divides the input's, and
PyTorch's uneven windows otherwise. Indices are PyTorch's: the flat position ``h * W + w`` of
each maximum in its (unpadded) input plane, int64.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias, overload

from ..argcheck import is_integral
from ..array_types import Array
from ..autograd import GRAD_ENABLED
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor, wrap
from ..windows import Window, empty_placement, tuple_arg, window

# A size argument: an int, or a tuple (or list) of one int per spatial axis.
Size: TypeAlias = int | Sequence[int]
# An adaptive pool's output size: a None (entry) keeps the input's size along that axis.
OutputSize: TypeAlias = int | None | Sequence[int | None]


def _spatial_input(fn: str, input: Tensor, dims: int) -> tuple[Array, tuple[int, ...]]:  # noqa: A002
    """The input as an (N, C, H, W) array (1-d pools: height 1; unbatched input: a batch of one),
    and the axes the result keeps before its spatial ones: (N, C), or (C,) for unbatched input."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}: argument 'input' must be a Tensor, got {type(input).__name__}")
    x = input._data
    if x.ndim not in (dims + 1, dims + 2):
        names = "2D (unbatched) or 3D (batched)" if dims == 1 else "3D (unbatched) or 4D (batched)"
        raise ShapeError(f"{fn}: expected {names} input, got {x.ndim}D input of shape {tuple(x.shape)}")
    if any(size == 0 for size in x.shape[x.ndim - dims - 1 :]):
        raise ShapeError(
            f"{fn}: expected an input with non-zero channels and spatial sizes (only the batch may be "
            f"empty), got shape {tuple(x.shape)}"
        )
    lead = tuple(x.shape[: x.ndim - dims])
    n, c = (1, *lead) if len(lead) == 1 else lead
    spatial = tuple(x.shape[x.ndim - dims :])
    height, width = (1, spatial[0]) if dims == 1 else spatial
    return backend_of(x).xp.reshape(x, (n, c, height, width)), lead


def _check_dtype(fn: str, x: Array, integers: bool) -> None:
    """Floating-point input (or integer too, for the max pools, as PyTorch's on the CPU)."""
    kind = numpy_dtype(x.dtype).kind
    if kind != "f" and not (integers and kind in "iu"):
        wanted = "a floating-point or integer" if integers else "a floating-point"
        raise TypeError(f"{fn}: expected {wanted} input, got dtype {numpy_dtype(x.dtype)}")


def _result(out: Array, lead: tuple[int, ...], dims: int) -> Array:
    """A pooled (N, C, OH, OW) array in the input's layout: (*lead, OL) for the 1-d pools."""
    spatial = tuple(out.shape[4 - dims :])
    return backend_of(out).xp.reshape(out, (*lead, *spatial))


def _shown(values: tuple[int, ...]) -> str:
    return str(values[0]) if len(values) == 1 else str(values)


def _window(
    fn: str,
    x4: Array,
    dims: int,
    kernel_size: Size,
    stride: Size | None,
    padding: Size,
    dilation: Size,
    ceil_mode: bool,
) -> Window:
    """The checked pooling Window over (N, C, H, W) ``x4`` (1-d pools: kernel 1 along the height)."""
    kernel = tuple_arg(fn, "kernel_size", kernel_size, dims, 1)
    # PyTorch: stride None, or an empty tuple or list, is the kernel size
    if stride is None or (isinstance(stride, (tuple, list)) and not stride):
        strides = kernel
    else:
        strides = tuple_arg(fn, "stride", stride, dims, 1)
    pads = tuple_arg(fn, "padding", padding, dims, 0)
    dilations = tuple_arg(fn, "dilation", dilation, dims, 1)
    # PyTorch checks both pad <= effective kernel / 2 and pad <= kernel / 2: the second decides
    if any(p > k // 2 for p, k in zip(pads, kernel, strict=True)):
        raise ValueError(
            f"{fn}: pad should be at most half of kernel size, but got padding={_shown(pads)} for "
            f"kernel_size={_shown(kernel)}"
        )
    spatial = tuple(x4.shape[4 - dims :])

    def two(values: tuple[int, ...], one: int) -> tuple[int, int]:
        return (one, values[0]) if dims == 1 else (values[0], values[1])

    try:
        win = window(
            fn,
            (x4.shape[2], x4.shape[3]),
            two(kernel, 1),
            two(strides, 1),
            two(pads, 0),
            two(dilations, 1),
            bool(ceil_mode),
        )
    except ValueError:  # said again in the pool's own terms (1-d pools: without the height)
        raise ValueError(
            f"{fn}: the window (kernel_size={_shown(kernel)}, padding={_shown(pads)}, dilation="
            f"{_shown(dilations)}) does not fit the input of spatial size {_shown(spatial)}: "
            "Output size is too small"
        ) from None
    # a window with no input position has no maximum or mean (PyTorch returns indices outside the
    # input for it); only dilation or ceil_mode's extra window can place one so
    axes = (
        (x4.shape[2], win.kh, win.sh, win.ph, win.dh, win.oh),
        (x4.shape[3], win.kw, win.sw, win.pw, win.dw, win.ow),
    )
    for axis, (size, k, s, p, d, out) in enumerate(axes[2 - dims :]):
        empty = empty_placement(size, k, s, p, d, out) if d > 1 or ceil_mode else None
        if empty is not None:
            raise ValueError(
                f"{fn}: the window at output position {empty} along spatial axis {axis} covers no input "
                f"element (input size {size}, kernel_size={k}, stride={s}, padding={p}, dilation={d}): "
                "it has only padding to pool"
            )
    return win


def _with_indices(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    pooled: Array,
    argmax: Array,
    shape4: tuple[int, ...],
    lead: tuple[int, ...],
    dims: int,
    return_indices: bool,
) -> Tensor | tuple[Tensor, Tensor]:
    """A max pool's result (and indices) as tensors; the gradient goes to each window's maximum."""
    out = _result(pooled, lead, dims)
    if input.requires_grad and GRAD_ENABLED[0]:
        x_shape = tuple(input._data.shape)

        def backward(g: Array) -> tuple[Array]:
            backend = backend_of(g)
            xp = backend.xp
            g4 = xp.reshape(g, pooled.shape)
            return (xp.reshape(backend.max_pool2d_grad(g4, argmax, shape4[2], shape4[3]), x_shape),)

        result = wrap(out, (backward, (input,)))
    else:
        result = wrap(out)
    return (result, wrap(_result(argmax, lead, dims))) if return_indices else result


def _max_pool(
    fn: str,
    dims: int,
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None,
    padding: Size,
    dilation: Size,
    ceil_mode: bool,
    return_indices: bool,
) -> Tensor | tuple[Tensor, Tensor]:
    x4, lead = _spatial_input(fn, input, dims)
    _check_dtype(fn, x4, integers=True)
    win = _window(fn, x4, dims, kernel_size, stride, padding, dilation, ceil_mode)
    pooled, argmax = backend_of(x4).max_pool2d(x4, win)
    return _with_indices(input, pooled, argmax, x4.shape, lead, dims, return_indices)


@overload
def max_pool2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def max_pool2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    *,
    return_indices: Literal[True],
) -> tuple[Tensor, Tensor]: ...
@overload
def max_pool2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
def max_pool2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """The maximum of each ``kernel_size`` window of an (N, C, H, W) or (C, H, W) input.

    Parameters
    ----------
    kernel_size : int or (int, int)
        The window's height and width.
    stride : int or (int, int), optional
        The step between windows; the kernel size by default.
    padding : int or (int, int), default 0
        Implicit -inf on each side, at most half the kernel size.
    dilation : int or (int, int), default 1
        The step between the window's elements.
    ceil_mode : bool, default False
        Round the output size up: a last, partial window counts if it starts inside the input or
        its left padding.
    return_indices : bool, default False
        Also return where each maximum is.

    Returns
    -------
    Tensor, or (Tensor, Tensor) with ``return_indices``
        The pooled input, (N, C, OH, OW) with ``OH = floor((H + 2 * padding - dilation *
        (kernel_size - 1) - 1) / stride) + 1`` (ceil with ``ceil_mode``), and the indices: the
        flat position ``h * W + w`` of each maximum in its input plane, int64, as PyTorch's. The
        gradient goes to each window's maximum (the first, row by row, among equal ones).
        Floating-point and integer inputs (as PyTorch's on the CPU).

    Examples
    --------
    >>> import tinytensor as tt
    >>> x = tt.arange(16.0).reshape(1, 1, 4, 4)
    >>> tt.nn.functional.max_pool2d(x, 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _max_pool("max_pool2d()", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@overload
def max_pool1d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def max_pool1d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    *,
    return_indices: Literal[True],
) -> tuple[Tensor, Tensor]: ...
@overload
def max_pool1d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
def max_pool1d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    dilation: Size = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """The maximum of each ``kernel_size`` window along the last axis of an (N, C, L) or (C, L) input.

    Parameters
    ----------
    kernel_size, stride, padding, dilation : int or (int,)
        As ``max_pool2d``'s, along L; ``stride`` is the kernel size by default.
    ceil_mode : bool, default False
        Round the output length up (as ``max_pool2d``).
    return_indices : bool, default False
        Also return the position of each maximum along L (int64).

    Returns
    -------
    Tensor, or (Tensor, Tensor) with ``return_indices``
        The pooled input, (N, C, OL), and the indices.
    """
    return _max_pool("max_pool1d()", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_pool(
    fn: str,
    dims: int,
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None,
    padding: Size,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
) -> Tensor:
    x4, lead = _spatial_input(fn, input, dims)
    _check_dtype(fn, x4, integers=False)
    if divisor_override is not None:
        if not is_integral(divisor_override):
            raise TypeError(f"{fn}: divisor_override must be an int or None, got {type(divisor_override).__name__}")
        if divisor_override == 0:
            raise ValueError(f"{fn}: divisor must be not zero (divisor_override=0)")
        divisor_override = int(divisor_override)
    win = _window(fn, x4, dims, kernel_size, stride, padding, 1, ceil_mode)
    include = bool(count_include_pad)
    pooled = backend_of(x4).avg_pool2d(x4, win, include, divisor_override)
    out = _result(pooled, lead, dims)
    if input.requires_grad and GRAD_ENABLED[0]:
        x_shape = tuple(input._data.shape)
        height, width = x4.shape[2], x4.shape[3]

        def backward(g: Array) -> tuple[Array]:
            backend = backend_of(g)
            g4 = backend.xp.reshape(g, pooled.shape)
            grad = backend.avg_pool2d_grad(g4, win, height, width, include, divisor_override)
            return (backend.xp.reshape(grad, x_shape),)

        return wrap(out, (backward, (input,)))
    return wrap(out)


def avg_pool2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean of each ``kernel_size`` window of an (N, C, H, W) or (C, H, W) floating-point input.

    Parameters
    ----------
    kernel_size : int or (int, int)
        The window's height and width.
    stride : int or (int, int), optional
        The step between windows; the kernel size by default.
    padding : int or (int, int), default 0
        Implicit zeros on each side, at most half the kernel size.
    ceil_mode : bool, default False
        Round the output size up (as ``max_pool2d``).
    count_include_pad : bool, default True
        Whether the zeros of the padding count in the mean's divisor.
    divisor_override : int, optional
        Divide each window's sum by this instead (nonzero).

    Returns
    -------
    Tensor
        (N, C, OH, OW), sized as ``max_pool2d``'s output (with dilation 1). As PyTorch's, a window
        that ceil_mode lets run past the padding divides by its part inside the padded input
        (inside the input itself without ``count_include_pad``).

    Examples
    --------
    >>> import tinytensor as tt
    >>> x = tt.arange(16.0).reshape(1, 1, 4, 4)
    >>> tt.nn.functional.avg_pool2d(x, 2).tolist()
    [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    return _avg_pool(
        "avg_pool2d()", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )


def avg_pool1d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """The mean of each ``kernel_size`` window along the last axis of an (N, C, L) or (C, L) input.

    Parameters
    ----------
    kernel_size, stride, padding : int or (int,)
        As ``avg_pool2d``'s, along L; ``stride`` is the kernel size by default.
    ceil_mode, count_include_pad : bool
        As ``avg_pool2d``'s (defaults False and True).

    Returns
    -------
    Tensor
        (N, C, OL).
    """
    return _avg_pool("avg_pool1d()", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def _output_size(fn: str, output_size: OutputSize, dims: int, spatial: tuple[int, ...]) -> tuple[int, ...]:
    """An adaptive pool's output size per spatial axis; a None entry keeps the input's size."""
    items = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size] * dims
    if len(items) != dims:
        raise ValueError(f"{fn}: output_size must be an int or a tuple of {dims}, got {output_size!r}")
    sizes = []
    for item, size in zip(items, spatial, strict=True):
        if item is None:
            sizes.append(size)
            continue
        if not is_integral(item):
            raise TypeError(f"{fn}: output_size must hold ints (or None), got {output_size!r}")
        if item < 0:
            raise ValueError(
                f"{fn}: elements of output_size must be greater than or equal to 0, but got {output_size!r}"
            )
        sizes.append(int(item))
    return tuple(sizes)


def _bins(n_in: int, n_out: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive windows along one axis: [floor(i * n_in / n_out), ceil((i + 1) * n_in / n_out))."""
    return [((i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)) for i in range(n_out)]


def _uniform_window(height: int, width: int, oh: int, ow: int) -> Window | None:
    """The plain pooling Window an adaptive pool is, when the output size divides the input's."""
    if oh == 0 or ow == 0 or height % oh or width % ow:
        return None
    kh, kw = height // oh, width // ow
    return Window(kh, kw, kh, kw, 0, 0, 1, 1, oh, ow)


def _averaging(bins: list[tuple[int, int]], size: int, like: Array) -> Array:
    """The (len(bins), size) matrix whose row i averages the positions of bin i."""
    backend = backend_of(like)
    if not bins:
        return backend.zeros((0, size), like.dtype, like)
    rows = [[1.0 / (end - start) if start <= k < end else 0.0 for k in range(size)] for start, end in bins]
    return backend.asarray(rows, like.dtype, like)


def _adaptive_avg(
    fn: str,
    dims: int,
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    output_size: OutputSize,
) -> Tensor:
    x4, lead = _spatial_input(fn, input, dims)
    _check_dtype(fn, x4, integers=False)
    backend = backend_of(x4)
    xp = backend.xp
    height, width = x4.shape[2], x4.shape[3]
    sizes = _output_size(fn, output_size, dims, tuple(x4.shape[4 - dims :]))
    oh, ow = (1, sizes[0]) if dims == 1 else sizes
    win = _uniform_window(height, width, oh, ow)
    if win is not None:
        even = win
        pooled = backend.avg_pool2d(x4, even, True, None)

        def grad_of(g4: Array) -> Array:
            return backend_of(g4).avg_pool2d_grad(g4, even, height, width, True, None)

    else:
        # each output is a rectangle's mean: the input between two averaging matrices,
        # (OH, H) @ x @ (W, OW), whose transposes carry the gradient back (2-D: .T is array API)
        rows = _averaging(_bins(height, oh), height, x4)
        cols = _averaging(_bins(width, ow), width, x4).T
        pooled = xp.matmul(xp.matmul(rows, x4), cols)

        def grad_of(g4: Array) -> Array:
            return xp.matmul(xp.matmul(rows.T, g4), cols.T)

    out = _result(pooled, lead, dims)
    if input.requires_grad and GRAD_ENABLED[0]:
        x_shape = tuple(input._data.shape)

        def backward(g: Array) -> tuple[Array]:
            return (xp.reshape(grad_of(xp.reshape(g, pooled.shape)), x_shape),)

        return wrap(out, (backward, (input,)))
    return wrap(out)


def adaptive_avg_pool2d(input: Tensor, output_size: OutputSize) -> Tensor:  # noqa: A002 - PyTorch's argument name
    """The mean over each of an ``output_size`` grid of windows of an (N, C, H, W) or (C, H, W) input.

    Parameters
    ----------
    output_size : int, or (int or None, int or None)
        The output's height and width; None keeps the input's.

    Returns
    -------
    Tensor
        (N, C, OH, OW): output (i, j) is the mean of rows ``floor(i * H / OH)`` to
        ``ceil((i + 1) * H / OH) - 1`` and the same columns of W, as PyTorch's.

    Examples
    --------
    >>> import tinytensor as tt
    >>> x = tt.arange(16.0).reshape(1, 1, 4, 4)
    >>> tt.nn.functional.adaptive_avg_pool2d(x, 1).tolist()
    [[[[7.5]]]]
    """
    return _adaptive_avg("adaptive_avg_pool2d()", 2, input, output_size)


def adaptive_avg_pool1d(input: Tensor, output_size: OutputSize) -> Tensor:  # noqa: A002 - PyTorch's argument name
    """The mean over each of ``output_size`` windows along the last axis of an (N, C, L) or (C, L) input.

    Parameters
    ----------
    output_size : int or (int,)
        The output length.

    Returns
    -------
    Tensor
        (N, C, OL), windows as ``adaptive_avg_pool2d``'s.
    """
    return _adaptive_avg("adaptive_avg_pool1d()", 1, input, output_size)


def _adaptive_max(
    fn: str,
    dims: int,
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    output_size: OutputSize,
    return_indices: bool,
) -> Tensor | tuple[Tensor, Tensor]:
    x4, lead = _spatial_input(fn, input, dims)
    _check_dtype(fn, x4, integers=False)
    backend = backend_of(x4)
    n, c, height, width = x4.shape
    sizes = _output_size(fn, output_size, dims, tuple(x4.shape[4 - dims :]))
    oh, ow = (1, sizes[0]) if dims == 1 else sizes
    win = _uniform_window(height, width, oh, ow)
    if win is not None:
        pooled, argmax = backend.max_pool2d(x4, win)
    elif oh == 0 or ow == 0:
        pooled = backend.zeros((n, c, oh, ow), x4.dtype, x4)
        argmax = backend.zeros((n, c, oh, ow), backend.xp.int64, x4)
    else:
        pooled, argmax = _adaptive_max_array(x4, _bins(height, oh), _bins(width, ow))
    return _with_indices(input, pooled, argmax, x4.shape, lead, dims, return_indices)


def _adaptive_max_array(
    x4: Array, row_bins: list[tuple[int, int]], col_bins: list[tuple[int, int]]
) -> tuple[Array, Array]:
    """(maxima, flat argmax) over windows of uneven sizes, in OH + OW slices: the maximum of each
    row's column window first, then of those rows; the first maximum row by row wins, as in PyTorch."""
    xp = backend_of(x4).xp
    width = x4.shape[3]
    col_max, col_arg = [], []
    for start, end in col_bins:
        part = x4[:, :, :, start:end]
        col_max.append(xp.max(part, axis=3))
        col_arg.append(xp.argmax(part, axis=3) + start)
    by_row, at_col = xp.stack(col_max, axis=3), xp.stack(col_arg, axis=3)  # (N, C, H, OW)
    maxima, flat = [], []
    for start, end in row_bins:
        part = by_row[:, :, start:end, :]
        row = xp.argmax(part, axis=2)  # (N, C, OW)
        col = xp.take_along_axis(at_col[:, :, start:end, :], xp.expand_dims(row, axis=2), axis=2)
        maxima.append(xp.max(part, axis=2))
        flat.append((row + start) * width + col[:, :, 0, :])
    return xp.stack(maxima, axis=2), xp.astype(xp.stack(flat, axis=2), xp.int64)


@overload
def adaptive_max_pool2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    output_size: OutputSize,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def adaptive_max_pool2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    output_size: OutputSize,
    return_indices: Literal[True],
) -> tuple[Tensor, Tensor]: ...
@overload
def adaptive_max_pool2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    output_size: OutputSize,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
def adaptive_max_pool2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    output_size: OutputSize,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """The maximum over each of an ``output_size`` grid of windows of an (N, C, H, W) or (C, H, W) input.

    Parameters
    ----------
    output_size : int, or (int or None, int or None)
        The output's height and width; None keeps the input's.
    return_indices : bool, default False
        Also return where each maximum is (flat ``h * W + w``, int64, as ``max_pool2d``'s).

    Returns
    -------
    Tensor, or (Tensor, Tensor) with ``return_indices``
        (N, C, OH, OW), windows as ``adaptive_avg_pool2d``'s.
    """
    return _adaptive_max("adaptive_max_pool2d()", 2, input, output_size, return_indices)


@overload
def adaptive_max_pool1d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    output_size: OutputSize,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def adaptive_max_pool1d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    output_size: OutputSize,
    return_indices: Literal[True],
) -> tuple[Tensor, Tensor]: ...
@overload
def adaptive_max_pool1d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    output_size: OutputSize,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
def adaptive_max_pool1d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    output_size: OutputSize,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """The maximum over each of ``output_size`` windows along the last axis of an (N, C, L) or (C, L) input.

    Parameters
    ----------
    output_size : int or (int,)
        The output length.
    return_indices : bool, default False
        Also return the position of each maximum along L (int64).

    Returns
    -------
    Tensor, or (Tensor, Tensor) with ``return_indices``
        (N, C, OL).
    """
    return _adaptive_max("adaptive_max_pool1d()", 1, input, output_size, return_indices)
