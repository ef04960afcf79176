"""Padding, resizing and channel dropout, as PyTorch's ``nn.functional``: ``pad`` (constant,
reflect, replicate, circular), ``interpolate`` (nearest, nearest-exact, linear, bilinear,
trilinear, area) and ``dropout2d``.

The non-constant pads and the resizes work one axis at a time: along each axis an output
position reads one input position (a gather: ``take``) or a weighted pair of them, a map known
on the host from the sizes alone. The gradient applies that map's transpose (slices added back,
or a small (out, in) matrix), so no op here needs a scatter.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import random as _random
from ..argcheck import is_integral, is_real
from ..array_types import Array
from ..autograd import GRAD_ENABLED, mark_modified
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor, wrap

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _at(ndim: int, axis: int, part: slice) -> tuple[slice, ...]:
    """An index that takes ``part`` along ``axis`` and everything along the other axes."""
    return tuple(part if k == axis else slice(None) for k in range(ndim))


# ---------------------------------------------------------------------------------------------- pad
def pad(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    pad: Sequence[int],
    mode: str = "constant",
    value: float | None = None,
) -> Tensor:
    """Pad (or, with negative amounts, crop) the trailing axes of the input, as PyTorch's ``F.pad``.

    Parameters
    ----------
    pad : tuple of ints
        (left, right) amounts for the last axis, then for the one before it, and so on:
        ``(1, 1, 2, 0)`` adds a column on each side and two rows on top. At most two per axis.
    mode : {'constant', 'reflect', 'replicate', 'circular'}
        ``'constant'`` fills with ``value`` and pads any axes; the others pad the last 1, 2 or 3
        axes (2 or 4, 4 or 6, 6 or 8 pad values for an input of 2 or 3, 3 or 4, 4 or 5
        dimensions): ``'reflect'`` mirrors the input without repeating the edge (each amount
        smaller than the axis), ``'replicate'`` repeats the edge, ``'circular'`` wraps around
        (each amount at most the axis).
    value : float, optional
        The fill of ``'constant'`` (default 0), cast to the input's dtype.

    Returns
    -------
    Tensor
        The padded input, of the input's dtype.

    Examples
    --------
    >>> import tinytensor as tt
    >>> x = tt.tensor([[1.0, 2.0, 3.0]])
    >>> tt.nn.functional.pad(x, (2, 1), mode="reflect").tolist()
    [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pad(): argument 'input' must be a Tensor, got {type(input).__name__}")
    amounts = _pad_amounts(pad)
    x = input._data
    if len(amounts) % 2:
        raise ValueError(f"pad(): Padding length must be divisible by 2, got pad={tuple(amounts)}")
    if len(amounts) > 2 * x.ndim:
        raise ValueError(
            f"pad(): Padding length should be less than or equal to two times the input dimension but got "
            f"padding length {len(amounts)} and input of dimension {x.ndim}"
        )
    if not isinstance(mode, str):
        raise TypeError(f"pad(): mode must be a str, got {type(mode).__name__}")
    if mode not in _PAD_MODES:
        raise NotImplementedError(
            f"pad(): Unrecognised padding mode {mode!r} (expected one of {', '.join(_PAD_MODES)})"
        )
    # (axis, left, right), the last axis first
    sides = [(x.ndim - 1 - k, amounts[2 * k], amounts[2 * k + 1]) for k in range(len(amounts) // 2)]
    if mode == "constant":
        return _pad_constant(input, sides, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise ValueError(f'pad(): Padding mode "{mode}" doesn\'t take in value argument')
    return _pad_indexed(input, sides, mode)


def _pad_amounts(pad: object) -> list[int]:
    if not isinstance(pad, (tuple, list)):
        raise TypeError(f"pad(): argument 'pad' must be a tuple of ints, got {type(pad).__name__}")
    for item in pad:
        if not is_integral(item):
            raise TypeError(
                f"pad(): argument 'pad' must be a tuple of ints, but found an element of type {type(item).__name__}"
            )
    return [int(item) for item in pad]


def _pad_constant(input: Tensor, sides: list[tuple[int, int, int]], value: object) -> Tensor:  # noqa: A002
    x = input._data
    backend = backend_of(x)
    if not is_real(value):
        raise TypeError(f"pad(): value must be a number, got {type(value).__name__}")
    kind = numpy_dtype(x.dtype).kind
    fill = bool(value) if kind == "b" else int(value) if kind in "iu" else float(value)  # as PyTorch's cast
    shape = list(x.shape)
    src = [slice(None)] * x.ndim  # the part of the input kept
    dst = [slice(None)] * x.ndim  # where it lands in the output
    for axis, left, right in sides:
        size = shape[axis] + left + right
        if size < 0:
            raise ValueError(
                f"pad(): padding ({left}, {right}) would leave dimension {axis} of size {x.shape[axis]} with "
                f"size {size}"
            )
        kept = max(0, x.shape[axis] - max(-left, 0) - max(-right, 0))
        src[axis] = slice(max(-left, 0), max(-left, 0) + kept)
        dst[axis] = slice(max(left, 0), max(left, 0) + kept)
        shape[axis] = size
    out = backend.full(tuple(shape), fill, x.dtype, x)
    if all(s.stop is None or s.stop > s.start for s in src):
        out[tuple(dst)] = x[tuple(src)]
    if input.requires_grad and GRAD_ENABLED[0]:

        def backward(g: Array) -> tuple[Array]:
            grad = backend_of(g).zeros(tuple(x.shape), g.dtype, g)
            if all(s.stop is None or s.stop > s.start for s in src):
                grad[tuple(src)] = g[tuple(dst)]
            return (grad,)

        return wrap(out, (backward, (input,)))
    return wrap(out)


def _pad_indexed(input: Tensor, sides: list[tuple[int, int, int]], mode: str) -> Tensor:  # noqa: A002
    """Reflect, replicate or circular padding: each padded axis a gather of input positions."""
    x = input._data
    axes = len(sides)
    if x.ndim not in (axes + 1, axes + 2) or axes not in (1, 2, 3):
        raise NotImplementedError(
            f"pad(): Padding size {2 * axes} is not supported for {x.ndim}D input tensor in mode {mode!r}: "
            "the non-constant modes take 2 values for 2D or 3D input (the last axis), 4 for 3D or 4D "
            "input (the last 2 axes), 6 for 4D or 5D input (the last 3 axes)"
        )
    first = 1 if x.ndim == axes + 2 else 0  # a batch axis may be empty; the others may not
    if any(size == 0 for size in x.shape[first:]):
        raise ShapeError(
            f"pad(): mode {mode!r} expects an input whose axes are non-empty (but for the batch axis), "
            f"got shape {tuple(x.shape)}"
        )
    backend = backend_of(x)
    xp = backend.xp
    sources = [
        (axis, _pad_sources(mode, x.shape[axis], left, right, axis, tuple(x.shape))) for axis, left, right in sides
    ]
    out = x
    for axis, src in sources:
        out = xp.take(out, backend.asarray(src, np.int64, x), axis=axis)
    if input.requires_grad and GRAD_ENABLED[0]:

        def backward(g: Array) -> tuple[Array]:
            for axis, src in reversed(sources):
                g = _gather_transpose(g, axis, src, x.shape[axis])
            return (g,)

        return wrap(out, (backward, (input,)))
    return wrap(out)


def _pad_sources(mode: str, size: int, left: int, right: int, axis: int, shape: tuple[int, ...]) -> list[int]:
    """For each output position along one axis, the input position it reads (PyTorch's checks)."""
    if mode == "reflect" and (left >= size or right >= size):
        raise ValueError(
            f"pad(): Padding size should be less than the corresponding input dimension, but got: "
            f"padding ({left}, {right}) at dimension {axis} of input {list(shape)}"
        )
    # circular wraps within what negative amounts leave of the axis, as PyTorch's
    offset = max(-left, 0)
    period = size - offset - max(-right, 0)
    if mode == "circular" and max(left, right) > max(period, 0):
        raise ValueError(
            f"pad(): Padding value causes wrapping around more than once: padding ({left}, {right}) at "
            f"dimension {axis} of input {list(shape)}"
        )
    length = size + left + right
    if length < 1:
        raise ValueError(
            f"pad(): input (size {size} at dimension {axis}) is too small for padding ({left}, {right}): "
            f"the calculated output size is {length}"
        )
    out = []
    for k in range(length):
        s = k - left
        if mode == "reflect":
            s = -s if s < 0 else 2 * (size - 1) - s if s >= size else s
        elif mode == "replicate":
            s = min(max(s, 0), size - 1)
        else:
            s = offset + (k - max(left, 0)) % period
        out.append(s)
    return out


def _gather_transpose(g: Array, axis: int, src: list[int], size: int) -> Array:
    """The transpose of ``take(x, src, axis)``: each of ``g``'s slices along ``axis`` added back at
    the input position it was read from. ``src`` is a few runs of consecutive positions (up,
    down or repeated), each one slice operation."""
    backend = backend_of(g)
    xp = backend.xp
    shape = list(g.shape)
    shape[axis] = size
    out = backend.zeros(tuple(shape), g.dtype, g)
    for start, stop, step in _runs(src):
        part = g[_at(g.ndim, axis, slice(start, stop))]
        first, count = src[start], stop - start
        if step == 0:
            out[_at(g.ndim, axis, slice(first, first + 1))] += xp.sum(part, axis=axis, keepdims=True)
        elif step == 1:
            out[_at(g.ndim, axis, slice(first, first + count))] += part
        else:
            out[_at(g.ndim, axis, slice(first - count + 1, first + 1))] += xp.flip(part, axis=axis)
    return out


def _runs(src: list[int]) -> list[tuple[int, int, int]]:
    """``src`` cut into runs (start, stop, step) whose entries go up by 1, down by 1 or stay the
    same (step 1, -1 or 0; a run of one entry has step 1)."""
    runs = []
    start = 0
    while start < len(src):
        stop = start + 1
        step = src[stop] - src[start] if stop < len(src) else 1
        if abs(step) > 1:  # a jump (circular's wrap): this run is one entry
            step = 1
        else:
            while stop < len(src) and src[stop] - src[stop - 1] == step:
                stop += 1
        runs.append((start, stop, step))
        start = stop
    return runs


# -------------------------------------------------------------------------------------- interpolate
# mode -> the input dimensions it takes (None: any of 3, 4, 5)
_MODES: dict[str, int | None] = {
    "nearest": None,
    "nearest-exact": None,
    "area": None,
    "linear": 3,
    "bilinear": 4,
    "trilinear": 5,
}


def interpolate(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resize the spatial axes of an (N, C, L), (N, C, H, W) or (N, C, D, H, W) input, as PyTorch's.

    Parameters
    ----------
    size : int or tuple of ints, optional
        The output's spatial size (an int: the same for every axis).
    scale_factor : float or tuple of floats, optional
        The output's size as a multiple of the input's (rounded down); exactly one of ``size``
        and ``scale_factor`` is given. Unless ``recompute_scale_factor``, it is also the scale the
        coordinates are mapped with (as PyTorch's).
    mode : {'nearest', 'nearest-exact', 'linear', 'bilinear', 'trilinear', 'area'}, default 'nearest'
        ``'nearest'`` reads input position ``floor(out * in_size / out_size)`` (PyTorch's rule, in
        float32 as PyTorch computes it), ``'nearest-exact'``
        ``floor((out + 0.5) * in_size / out_size)``; ``'linear'`` (3-D input), ``'bilinear'`` (4-D) and ``'trilinear'`` (5-D)
        interpolate between the two nearest positions along each axis; ``'area'`` averages (as
        ``adaptive_avg_pool``).
    align_corners : bool, optional
        For the linear modes: map the corner pixels' centres onto each other (True) or the
        corners of the pixels (False, the default). The other modes refuse it.
    recompute_scale_factor : bool, optional
        With ``scale_factor``: map coordinates by the sizes' ratio instead of the given factor.
    antialias : bool, default False
        Accepted for PyTorch's signature; True is not supported.

    Returns
    -------
    Tensor
        (N, C) followed by ``size``, of the input's (floating-point) dtype.

    Examples
    --------
    >>> import tinytensor as tt
    >>> x = tt.tensor([[[1.0, 2.0]]])
    >>> tt.nn.functional.interpolate(x, scale_factor=2).tolist()
    [[[1.0, 1.0, 2.0, 2.0]]]
    >>> tt.nn.functional.interpolate(x, size=3, mode="linear", align_corners=True).tolist()
    [[[1.0, 1.5, 2.0]]]
    """
    fn = "interpolate()"
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}: argument 'input' must be a Tensor, got {type(input).__name__}")
    x = input._data
    if mode not in _MODES:
        raise NotImplementedError(
            f"{fn}: mode {mode!r} is not supported (supported: {', '.join(_MODES)}; PyTorch's 'bicubic' "
            "is not implemented here)"
        )
    linear = mode in ("linear", "bilinear", "trilinear")
    if not linear and align_corners is not None:
        raise ValueError(
            f"{fn}: align_corners option can only be set with the interpolating modes: linear | bilinear | "
            f"bicubic | trilinear (got mode {mode!r})"
        )
    if antialias:
        raise NotImplementedError(f"{fn}: antialias=True is not supported")
    if x.ndim not in (3, 4, 5):  # NotImplementedError, as PyTorch's (its modes exist for these only)
        raise NotImplementedError(
            f"{fn}: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D input of shape {tuple(x.shape)})"
        )
    wanted = _MODES[mode]
    if wanted is not None and x.ndim != wanted:
        raise NotImplementedError(f"{fn}: Got {x.ndim}D input, but {mode} mode needs {wanted}D input")
    if numpy_dtype(x.dtype).kind != "f":
        raise TypeError(f"{fn}: the input must be floating point, got dtype {numpy_dtype(x.dtype)}")
    spatial = tuple(x.shape[2:])
    sizes, scales = _resize_plan(fn, spatial, size, scale_factor, recompute_scale_factor, mode)
    if x.shape[1] == 0 or min(spatial) < 1 or min(sizes) < 1:
        raise ValueError(
            f"{fn}: Input and output sizes should be greater than 0, but got input of shape {tuple(x.shape)} "
            f"and output size {sizes}"
        )
    backend = backend_of(x)
    xp = backend.xp
    # float32 input: PyTorch computes source positions and weights in float32 (float64 for float64)
    math_dtype = np.float64 if numpy_dtype(x.dtype) == np.float64 else np.float32
    plans = [
        _axis_plan(mode, n_in, n_out, scale, bool(align_corners), math_dtype)
        for n_in, n_out, scale in zip(spatial, sizes, scales, strict=True)
    ]
    out = x
    for k, (index, weights, matrix) in enumerate(plans):
        axis = 2 + k
        if index is None:  # area: a small averaging matrix
            out = _along(out, axis, backend.asarray(matrix.T, x.dtype, x))
        elif weights is None:
            out = xp.take(out, backend.asarray(index[0], np.int64, x), axis=axis)
        else:
            column = [1] * out.ndim
            column[axis] = -1
            w0 = xp.reshape(backend.asarray(weights[0], x.dtype, x), tuple(column))
            w1 = xp.reshape(backend.asarray(weights[1], x.dtype, x), tuple(column))
            low = xp.take(out, backend.asarray(index[0], np.int64, x), axis=axis)
            high = xp.take(out, backend.asarray(index[1], np.int64, x), axis=axis)
            out = low * w0 + high * w1
    if input.requires_grad and GRAD_ENABLED[0]:

        def backward(g: Array) -> tuple[Array]:
            b = backend_of(g)
            for k in reversed(range(len(plans))):
                g = _along(g, 2 + k, b.asarray(plans[k][2], g.dtype, g))
            return (g,)

        return wrap(out, (backward, (input,)))
    return wrap(out)


def _along(a: Array, axis: int, matrix: Array) -> Array:
    """``a``'s ``axis`` (length m) multiplied by the (m, n) ``matrix``: length n."""
    xp = backend_of(a).xp
    return xp.moveaxis(xp.matmul(xp.moveaxis(a, axis, -1), matrix), -1, axis)


def _resize_plan(
    fn: str,
    spatial: tuple[int, ...],
    size: object,
    scale_factor: object,
    recompute_scale_factor: bool | None,
    mode: str,
) -> tuple[tuple[int, ...], tuple[float | None, ...]]:
    """(the output size, the scale each axis maps coordinates with: None for the sizes' ratio)."""
    dims = len(spatial)
    if size is not None and scale_factor is not None:
        raise ValueError(f"{fn}: only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError(f"{fn}: recompute_scale_factor is not meaningful with an explicit size.")
        items = list(size) if isinstance(size, (tuple, list)) else [size] * dims
        if len(items) != dims:
            raise ValueError(
                f"{fn}: Input and output must have the same number of spatial dimensions, but got input with "
                f"spatial dimensions of {list(spatial)} and output size of {size!r}"
            )
        wanted = []
        for item in items:
            if not is_integral(item):
                raise TypeError(f"{fn}: size must be an int or a tuple of ints, got {size!r}")
            wanted.append(int(item))
        return tuple(wanted), (None,) * dims
    if scale_factor is None:
        raise ValueError(f"{fn}: either size or scale_factor should be defined")
    factors = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * dims
    if len(factors) != dims:
        raise ValueError(
            f"{fn}: Input and scale_factor must have the same number of spatial dimensions, but got input with "
            f"spatial dimensions of {list(spatial)} and scale_factor of {scale_factor!r}"
        )
    scales = []
    for factor in factors:
        if not is_real(factor):
            raise TypeError(f"{fn}: scale_factor must be a number or a tuple of numbers, got {scale_factor!r}")
        if not math.isfinite(factor):
            raise ValueError(f"{fn}: scale_factor must be finite, got {scale_factor!r}")
        scales.append(float(factor))
    sizes = tuple(math.floor(n * f) for n, f in zip(spatial, scales, strict=True))
    if recompute_scale_factor or mode == "area":  # area: PyTorch always recomputes
        return sizes, (None,) * dims
    return sizes, tuple(scales)


def _axis_plan(
    mode: str, n_in: int, n_out: int, scale: float | None, align_corners: bool, dtype: type[np.floating[Any]]
) -> tuple[list[list[int]] | None, list[list[float]] | None, np.ndarray]:
    """Along one axis: (the input positions each output reads, their weights (linear modes), and
    the (n_out, n_in) matrix of the map, whose product with the gradient is its transpose)."""
    matrix = np.zeros((n_out, n_in))
    if mode == "area":
        for i in range(n_out):
            start, end = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
            matrix[i, start:end] = 1.0 / (end - start)
        return None, None, matrix
    if mode in ("nearest", "nearest-exact"):
        index = _nearest(n_in, n_out, scale, mode == "nearest-exact", dtype)
        matrix[np.arange(n_out), index] = 1.0
        return [index], None, matrix
    low, high, w_low, w_high = _linear(n_in, n_out, scale, align_corners, dtype)
    np.add.at(matrix, (np.arange(n_out), np.asarray(low)), w_low)
    np.add.at(matrix, (np.arange(n_out), np.asarray(high)), w_high)
    return [low, high], [w_low, w_high], matrix


def _nearest(n_in: int, n_out: int, scale: float | None, exact: bool, dtype: type[np.floating[Any]]) -> list[int]:
    """PyTorch's nearest source positions (its CPU kernel's ``HelperInterpNearest`` and
    ``HelperInterpNearestExact``) with its arithmetic: the position in ``dtype`` (float32 for
    float32 input, where PyTorch's build fuses ``ratio * (i + 0.5) - 0.5`` into one rounding),
    then floored as a float32 (``floorf``), so that the floors land where PyTorch's do."""
    ratio = dtype(1.0 / scale) if scale is not None and scale > 0 else dtype(n_in) / dtype(n_out)
    out = []
    for i in range(n_out):
        if exact:  # the pixel centre's source, rounded: floor(max(ratio * (i + 0.5) - 0.5, 0) + 0.5)
            real = max(dtype(float(ratio) * (i + 0.5) - 0.5), dtype(0))
            position = np.float32(real + dtype(0.5))
        else:
            position = np.float32(ratio * dtype(i))
        out.append(min(int(math.floor(position)), n_in - 1))
    return out


def _linear(
    n_in: int, n_out: int, scale: float | None, align_corners: bool, dtype: type[np.floating[Any]]
) -> tuple[list[int], list[int], list[float], list[float]]:
    """PyTorch's linear interpolation along one axis (``area_pixel_compute_source_index``): for
    each output, the two input positions and their weights, computed in ``dtype``."""
    if n_out == n_in:
        positions = list(range(n_out))
        return positions, positions, [1.0] * n_out, [0.0] * n_out
    if align_corners:
        ratio = dtype(n_in - 1) / dtype(n_out - 1) if n_out > 1 else dtype(0)
    elif scale is not None and scale > 0:
        ratio = dtype(1.0 / scale)
    else:
        ratio = dtype(n_in) / dtype(n_out)
    low, high, w_low, w_high = [], [], [], []
    for i in range(n_out):
        # as _nearest: PyTorch's build fuses ratio * (i + 0.5) - 0.5 into one rounding
        real = ratio * dtype(i) if align_corners else max(dtype(float(ratio) * (i + 0.5) - 0.5), dtype(0))
        i0 = min(int(math.floor(real)), n_in - 1)
        lam = min(max(float(real - dtype(i0)), 0.0), 1.0)
        low.append(i0)
        high.append(i0 + 1 if i0 < n_in - 1 else i0)
        w_low.append(float(dtype(1) - dtype(lam)))
        w_high.append(lam)
    return low, high, w_low, w_high


# ---------------------------------------------------------------------------------------- dropout2d
def dropout2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
) -> Tensor:
    """Zero whole channels with probability ``p`` and scale the others by ``1 / (1 - p)``.

    Each (sample, channel) plane of an (N, C, H, W) input is kept or zeroed as one. As PyTorch's,
    a 3-D input is read as (N, C, L) (one-dimensional channels), with PyTorch's warning, and other
    shapes of at least 2 dimensions drop along their first two axes, with its deprecation warning.

    Parameters
    ----------
    p : float, default 0.5
        The probability of zeroing a channel, in [0, 1].
    training : bool, default True
        With False (or ``p=0``) the input itself comes back, unchanged.
    inplace : bool, default False
        Write the result into the input and return it (refused while the input requires grad and
        gradients are recorded, as tinytensor's in-place ops).

    Returns
    -------
    Tensor
        Of the input's shape. The mask is drawn on the input's device from a seed taken from the
        global stream (``tt.manual_seed``); it is not PyTorch's mask for the same seed.
    """
    if not is_real(p) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout2d(): dropout probability has to be between 0 and 1, but got {p!r}")
    if not isinstance(input, Tensor):
        raise TypeError(f"dropout2d(): argument 'input' must be a Tensor, got {type(input).__name__}")
    x = input._data
    if x.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {x.ndim}-D input to dropout2d, which is deprecated and will result in an "
            "error in a future release. To retain the behavior and silence this warning, please use dropout "
            "instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 spatial "
            "dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            UserWarning,
            stacklevel=3,  # the caller of nn.functional.dropout2d (its array-accepting wrapper is one frame)
        )
    elif x.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
            "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
            "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d "
            "instead.",
            UserWarning,
            stacklevel=3,  # the caller of nn.functional.dropout2d (its array-accepting wrapper is one frame)
        )
    if x.ndim < 2:
        raise ShapeError(
            f"dropout2d(): Feature dropout requires at least 2 dimensions in the input, got shape {tuple(x.shape)}"
        )
    if numpy_dtype(x.dtype).kind != "f":
        raise TypeError(f"dropout2d(): the input must be floating point, got dtype {numpy_dtype(x.dtype)}")
    if not training or p == 0.0:
        return input
    backend = backend_of(x)
    xp = backend.xp
    mask_shape = (x.shape[0], x.shape[1]) + (1,) * (x.ndim - 2)  # one draw per (sample, channel)
    if p == 1.0:
        scale = backend.zeros(mask_shape, x.dtype, x)
    else:
        keep = backend.uniform(mask_shape, x.dtype, x, _random.next_seed()) >= p
        scale = xp.astype(keep, x.dtype) * (1.0 / (1.0 - p))
    if inplace:
        if GRAD_ENABLED[0] and (input.requires_grad or input._ctx is not None):
            raise RuntimeError(
                "dropout2d(inplace=True): a tensor that requires grad cannot be changed in place while "
                "gradients are recorded; use inplace=False, or wrap the call in tinytensor.no_grad()"
            )
        x *= scale
        mark_modified(input)
        return input
    out = x * scale
    if input.requires_grad and GRAD_ENABLED[0]:
        return wrap(out, (lambda g: (g * scale,), (input,)))
    return wrap(out)
