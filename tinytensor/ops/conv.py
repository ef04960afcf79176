"""Convolution (``conv1d``, ``conv2d``, ``conv_transpose2d``) and its building blocks ``unfold`` and
``fold``, each with its gradient.

A convolution is im2col (the backend's ``im2col``: every kernel window of the input, laid out
(N, C, KH, KW, OH, OW)) and a batched matrix product with the weight; its input gradient is the
transposed product and ``col2im``, the adjoint of im2col. A transposed convolution is the same pair
run the other way. One-dimensional ops run as two-dimensional ones of height 1. The window geometry
(``windows.window``) is computed once per shape; numpy's im2col is a strided view, so no index
arrays are built at all.
"""

from __future__ import annotations

from .. import windows
from ..array_types import Array
from ..autograd import GRAD_ENABLED
from ..backend import Backend
from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor, wrap
from ..windows import Window, tuple_arg, window
from .arith import combine_error


def _check_operands(fn: str, x: Tensor, weight: Tensor, bias: Tensor | None, ndim: int) -> None:
    """Types, ranks, devices and dtypes of a convolution's operands (PyTorch's rules)."""
    for name, t in (("input", x), ("weight", weight), ("bias", bias)):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): {name} must be a Tensor, got {type(t).__name__}")
    if x.ndim != ndim + 2:
        raise ShapeError(
            f"{fn}(): expected a {ndim + 1}-D (unbatched) or {ndim + 2}-D (batched) input, got shape {tuple(x.shape)}"
        )
    if weight.ndim != ndim + 2:
        raise ShapeError(f"{fn}(): expected a {ndim + 2}-D weight, got shape {tuple(weight.shape)}")
    if numpy_dtype(x._data.dtype).kind != "f":
        raise TypeError(f"{fn}(): the input must be floating point, got dtype {numpy_dtype(x._data.dtype)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is None:
            continue
        if type(t._data) is not type(x._data) or backend_of(x._data).device(t._data) != backend_of(x._data).device(
            x._data
        ):
            raise combine_error(f"{fn}()", x._data, t._data)
        if numpy_dtype(t._data.dtype) != numpy_dtype(x._data.dtype):
            raise TypeError(
                f"{fn}(): input type ({numpy_dtype(x._data.dtype)}) and {name} type "
                f"({numpy_dtype(t._data.dtype)}) should be the same"
            )


def _groups(fn: str, groups: object, in_channels: int, out_channels: int) -> int:
    g = tuple_arg(fn, "groups", groups, 1, 1)[0]
    if in_channels % g or out_channels % g:
        raise ValueError(
            f"{fn}(): groups={g} must divide both the input channels ({in_channels}) and the output channels "
            f"({out_channels})"
        )
    return g


def _bias_shape(fn: str, bias: Tensor | None, channels: int) -> None:
    if bias is not None and tuple(bias.shape) != (channels,):
        raise ShapeError(
            f"{fn}(): bias should have shape ({channels},) (one per output channel), got {tuple(bias.shape)}"
        )


def _conv_arrays(b: Backend, x: Array, w: Array, bias: Array | None, win: Window, groups: int) -> tuple[Array, Array]:
    """(output (N, O, OH, OW), the im2col matrix (N, G, C/G*KH*KW, OH*OW) for the gradient)."""
    xp = b.xp
    n, c = x.shape[:2]
    o = w.shape[0]
    depth = c // groups * win.kernel_area
    cols = xp.reshape(b.im2col(x, win), (n, groups, depth, win.oh * win.ow))
    out = b.matmul(xp.reshape(w, (groups, o // groups, depth)), cols)  # (N, G, O/G, P)
    out = xp.reshape(out, (n, o, win.oh, win.ow))
    if bias is not None:
        out += xp.reshape(bias, (1, o, 1, 1))  # in place: the product is a new array
    return out, cols


def _conv_input_grad(b: Backend, g4: Array, w: Array, win: Window, shape: tuple[int, ...], groups: int) -> Array:
    """d loss / d input of ``_conv_arrays`` from the output gradient shaped (N, G, O/G, P)."""
    xp = b.xp
    n, c, h, wd = shape
    o = w.shape[0]
    w3 = xp.reshape(w, (groups, o // groups, c // groups * win.kernel_area))
    # the transposed weight copied (it is small): numpy's batched matmul runs a transposed operand
    # that broadcasts over the batch outside BLAS, about 3x slower
    gcols = b.matmul(b.copy(xp.matrix_transpose(w3)), g4)  # (N, G, C/G*K, P)
    return b.col2im(xp.reshape(gcols, (n, c, win.kh, win.kw, win.oh, win.ow)), win, h, wd)


def _conv_weight_grad(b: Backend, g4: Array, cols: Array, w_shape: tuple[int, ...]) -> Array:
    """d loss / d weight: the output gradient (N, G, O/G, P) times the im2col matrix, summed over N."""
    xp = b.xp
    return xp.reshape(xp.sum(b.matmul(g4, xp.matrix_transpose(cols)), axis=0), w_shape)


def _same_padding(
    fn: str, kernel: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]
) -> list[tuple[int, int]]:
    """PyTorch's padding="same": (before, after) per axis; an odd total puts the extra one after."""
    if any(s != 1 for s in stride):
        raise ValueError(f"{fn}(): padding='same' is not supported for strided convolutions")
    pads = []
    for k, d in zip(kernel, dilation, strict=True):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return pads


def _padding(
    fn: str, padding: object, kernel: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]
) -> list[tuple[int, int]]:
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * len(kernel)
        if padding == "same":
            return _same_padding(fn, kernel, stride, dilation)
        raise ValueError(f"{fn}(): invalid padding string {padding!r}, should be one of 'valid', 'same'")
    return [(p, p) for p in tuple_arg(fn, "padding", padding, len(kernel), 0)]


def _convolution(
    fn: str,
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: object,
    padding: object,
    dilation: object,
    groups: object,
    ndim: int,
) -> Tensor:
    if getattr(x, "ndim", None) == ndim + 1:  # one unbatched sample, as PyTorch takes it (x unchecked yet)
        return _convolution(fn, x.unsqueeze(0), weight, bias, stride, padding, dilation, groups, ndim).squeeze(0)
    _check_operands(fn, x, weight, bias, ndim)
    xa, wa = x._data, weight._data
    c, o = xa.shape[1], wa.shape[0]
    g = _groups(fn, groups, c, o)
    if wa.shape[1] * g != c:
        raise ShapeError(
            f"{fn}(): the weight of shape {tuple(wa.shape)} with groups={g} expects {wa.shape[1] * g} input channels, "
            f"got an input of shape {tuple(xa.shape)} ({c} channels)"
        )
    _bias_shape(fn, bias, o)
    kernel = tuple(int(k) for k in wa.shape[2:])
    st = tuple_arg(fn, "stride", stride, ndim, 1)
    dil = tuple_arg(fn, "dilation", dilation, ndim, 1)
    pads = _padding(fn, padding, kernel, st, dil)
    b = backend_of(xa)
    xp = b.xp
    if ndim == 1:  # as 2-D with height 1
        xa, wa = xp.reshape(xa, (xa.shape[0], c, 1, xa.shape[2])), xp.reshape(wa, (*wa.shape[:2], 1, kernel[0]))
        kernel, st, dil, pads = (1, *kernel), (1, *st), (1, *dil), [(0, 0), *pads]
    in_shape = tuple(xa.shape)
    # an odd "same" padding: the extra row/column after, as a zero border on the input itself
    extra_h, extra_w = pads[0][1] - pads[0][0], pads[1][1] - pads[1][0]
    if extra_h or extra_w:
        grown = b.zeros((*in_shape[:2], in_shape[2] + extra_h, in_shape[3] + extra_w), xa.dtype, xa)
        grown[:, :, : in_shape[2], : in_shape[3]] = xa
        xa = grown
    spatial = (int(xa.shape[2]), int(xa.shape[3]))
    win = window(fn, spatial, kernel, st, (pads[0][0], pads[1][0]), dil)
    out, cols = _conv_arrays(b, xa, wa, bias._data if bias is not None else None, win, g)
    out_shape = (out.shape[0], o, win.ow) if ndim == 1 else tuple(out.shape)
    if ndim == 1:
        out = xp.reshape(out, out_shape)
    parents = tuple(t for t in (x, weight, bias) if t is not None)
    if not (any(t.requires_grad for t in parents) and GRAD_ENABLED[0]):
        return wrap(out)
    w_shape = tuple(weight._data.shape)

    def backward(grad: Array) -> tuple[Array | None, ...]:
        g4 = xp.reshape(grad, (grad.shape[0], g, o // g, win.oh * win.ow))
        gx = None
        if x.requires_grad:
            gx = _conv_input_grad(b, g4, wa, win, (*in_shape[:2], *spatial), g)
            if extra_h or extra_w:
                gx = gx[:, :, : in_shape[2], : in_shape[3]]
            gx = xp.reshape(gx, tuple(x._data.shape))
        grads: list[Array | None] = [gx, _conv_weight_grad(b, g4, cols, w_shape) if weight.requires_grad else None]
        if bias is not None:
            grads.append(xp.sum(grad, axis=(0, *range(2, grad.ndim))) if bias.requires_grad else None)
        return tuple(grads)

    return wrap(out, (backward, parents))


def conv2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] | str = 0,
    dilation: int | tuple[int, int] = 1,
    groups: int = 1,
) -> Tensor:
    """A 2-D convolution (PyTorch's cross-correlation) of (N, C, H, W) ``input`` with ``weight``.

    Parameters
    ----------
    input : Tensor
        Floating point, of shape (N, C, H, W).
    weight : Tensor
        (O, C / groups, KH, KW), the input's dtype and device.
    bias : Tensor, optional
        (O,), added to each output channel.
    stride, dilation : int or (int, int)
        The step between windows, and between the kernel's taps.
    padding : int, (int, int), "valid" or "same"
        Zeros added on both sides of each spatial axis; "same" (stride 1 only) keeps the input's
        size, with an odd total padding's extra row or column after, as PyTorch.
    groups : int
        Split the channels into this many independent convolutions (``groups == C``: depthwise).

    Returns
    -------
    Tensor
        (N, O, OH, OW), with OH = (H + 2 * padding - dilation * (KH - 1) - 1) // stride + 1.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.nn.functional.conv2d(tt.ones(1, 1, 4, 4), tt.ones(2, 1, 3, 3), padding=1).shape
    (1, 2, 4, 4)
    """
    return _convolution("conv2d", input, weight, bias, stride, padding, dilation, groups, 2)


def conv1d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int] = 1,
    padding: int | tuple[int] | str = 0,
    dilation: int | tuple[int] = 1,
    groups: int = 1,
) -> Tensor:
    """A 1-D convolution of (N, C, L) ``input`` with (O, C / groups, K) ``weight``; the arguments
    are ``conv2d``'s, one number each.

    Returns
    -------
    Tensor
        (N, O, OL), with OL = (L + 2 * padding - dilation * (K - 1) - 1) // stride + 1.
    """
    return _convolution("conv1d", input, weight, bias, stride, padding, dilation, groups, 1)


def conv_transpose2d(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    output_padding: int | tuple[int, int] = 0,
    groups: int = 1,
    dilation: int | tuple[int, int] = 1,
) -> Tensor:
    """The transposed 2-D convolution: the gradient of ``conv2d`` with respect to its input, used
    to upsample (N, C, H, W) ``input``.

    Parameters
    ----------
    weight : Tensor
        (C, O / groups, KH, KW), PyTorch's layout.
    bias : Tensor, optional
        (O,).
    stride, padding, dilation : int or (int, int)
        Those of the convolution this one transposes (``padding`` is removed from the output).
    output_padding : int or (int, int)
        Extra rows and columns after, smaller than stride or dilation: picks among the input
        sizes a strided convolution maps to the same output size.
    groups : int
        Independent channel groups.

    Returns
    -------
    Tensor
        (N, O, OH, OW), OH = (H - 1) * stride - 2 * padding + dilation * (KH - 1) + output_padding + 1.
    """
    fn = "conv_transpose2d"
    _check_operands(fn, input, weight, bias, 2)
    xa, wa = input._data, weight._data
    n, c, h, w = (int(s) for s in xa.shape)
    if wa.shape[0] != c:
        raise ShapeError(
            f"{fn}(): the weight of shape {tuple(wa.shape)} expects {wa.shape[0]} input channels, got an input of "
            f"shape {tuple(xa.shape)}"
        )
    g = _groups(fn, groups, c, c)  # the output channels, weight.shape[1] * groups, always divide
    o = wa.shape[1] * g
    _bias_shape(fn, bias, o)
    kh, kw = int(wa.shape[2]), int(wa.shape[3])
    st = tuple_arg(fn, "stride", stride, 2, 1)
    pad = tuple_arg(fn, "padding", padding, 2, 0)
    dil = tuple_arg(fn, "dilation", dilation, 2, 1)
    opad = tuple_arg(fn, "output_padding", output_padding, 2, 0)
    for op_, s, d in zip(opad, st, dil, strict=True):
        if op_ >= s and op_ >= d:
            raise ValueError(f"{fn}(): output_padding {opad} must be smaller than either stride {st} or dilation {dil}")
    oh = (h - 1) * st[0] - 2 * pad[0] + dil[0] * (kh - 1) + opad[0] + 1
    ow = (w - 1) * st[1] - 2 * pad[1] + dil[1] * (kw - 1) + opad[1] + 1
    if oh < 1 or ow < 1:
        raise ValueError(f"{fn}(): the output size would be {oh}x{ow} for an input of shape {tuple(xa.shape)}")
    # the convolution that maps the (oh, ow) output back to the (h, w) input
    win = Window(kh, kw, st[0], st[1], pad[0], pad[1], dil[0], dil[1], h, w)
    b = backend_of(xa)
    xp = b.xp
    x4 = xp.reshape(xa, (n, g, c // g, h * w))
    # weight as the convolution's (O, C / G, KH, KW) grouped matrix, transposed
    wt = xp.reshape(wa, (g, c // g, o // g * kh * kw))
    cols = b.matmul(b.copy(xp.matrix_transpose(wt)), x4)  # (N, G, O/G*K, P); copied as in _conv_input_grad
    out = b.col2im(xp.reshape(cols, (n, o, kh, kw, h, w)), win, oh, ow)
    if bias is not None:
        out = out + xp.reshape(bias._data, (1, o, 1, 1))
    parents = tuple(t for t in (input, weight, bias) if t is not None)
    if not (any(t.requires_grad for t in parents) and GRAD_ENABLED[0]):
        return wrap(out)

    def backward(grad: Array) -> tuple[Array | None, ...]:
        gcols = xp.reshape(b.im2col(grad, win), (n, g, o // g * kh * kw, h * w))
        gx = xp.reshape(b.matmul(wt, gcols), (n, c, h, w)) if input.requires_grad else None
        gw = None
        if weight.requires_grad:
            gw = xp.reshape(xp.sum(b.matmul(x4, xp.matrix_transpose(gcols)), axis=0), tuple(wa.shape))
        grads: list[Array | None] = [gx, gw]
        if bias is not None:
            grads.append(xp.sum(grad, axis=(0, 2, 3)) if bias.requires_grad else None)
        return tuple(grads)

    return wrap(out, (backward, parents))


def _fold_args(
    fn: str, kernel_size: object, dilation: object, padding: object, stride: object
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    return (
        tuple_arg(fn, "kernel_size", kernel_size, 2, 1),
        tuple_arg(fn, "dilation", dilation, 2, 1),
        tuple_arg(fn, "padding", padding, 2, 0),
        tuple_arg(fn, "stride", stride, 2, 1),
    )


def unfold(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    kernel_size: int | tuple[int, int],
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    stride: int | tuple[int, int] = 1,
) -> Tensor:
    """Every sliding window of (N, C, H, W) ``input`` as a column: (N, C * KH * KW, L), L the
    number of windows (im2col). ``fold`` sums such columns back.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.nn.functional.unfold(tt.ones(1, 2, 4, 4), kernel_size=2).shape
    (1, 8, 9)
    """
    fn = "unfold"
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): input must be a Tensor, got {type(input).__name__}")
    if input.ndim != 4:
        raise ShapeError(f"{fn}(): expected a 4-D (N, C, H, W) input, got shape {tuple(input.shape)}")
    kernel, dil, pad, st = _fold_args(fn, kernel_size, dilation, padding, stride)
    xa = input._data
    n, c, h, w = (int(s) for s in xa.shape)
    win = window(fn, (h, w), kernel, st, pad, dil)
    b = backend_of(xa)
    xp = b.xp
    out = xp.reshape(b.im2col(xa, win), (n, c * win.kernel_area, win.oh * win.ow))
    if not (input.requires_grad and GRAD_ENABLED[0]):
        return wrap(out)

    def backward(grad: Array) -> tuple[Array]:
        return (b.col2im(xp.reshape(grad, (n, c, win.kh, win.kw, win.oh, win.ow)), win, h, w),)

    return wrap(out, (backward, (input,)))


def fold(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    output_size: int | tuple[int, int],
    kernel_size: int | tuple[int, int],
    dilation: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    stride: int | tuple[int, int] = 1,
) -> Tensor:
    """Sum (N, C * KH * KW, L) columns into an (N, C, H, W) image (col2im, the adjoint of
    ``unfold``): each output position adds every window entry that covers it.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.nn.functional.fold(tt.ones(1, 4, 9), output_size=4, kernel_size=2)[0, 0, 1]
    Tensor([2., 4., 4., 2.])
    """
    fn = "fold"
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): input must be a Tensor, got {type(input).__name__}")
    if input.ndim != 3:
        raise ShapeError(f"{fn}(): expected a 3-D (N, C * KH * KW, L) input, got shape {tuple(input.shape)}")
    kernel, dil, pad, st = _fold_args(fn, kernel_size, dilation, padding, stride)
    h, w = tuple_arg(fn, "output_size", output_size, 2, 1)
    xa = input._data
    n, depth, length = (int(s) for s in xa.shape)
    area = kernel[0] * kernel[1]
    if depth % area:
        raise ShapeError(
            f"{fn}(): expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
            f"input.size(1)={depth} and kernel_size={kernel}"
        )
    oh = windows.placements(h, kernel[0], st[0], pad[0], dil[0])
    ow = windows.placements(w, kernel[1], st[1], pad[1], dil[1])
    if oh * ow != length:
        raise ShapeError(
            f"{fn}(): given output_size=({h}, {w}), kernel_size={kernel}, dilation={dil}, padding={pad}, "
            f"stride={st}, expected size of input's dimension 2 to match the calculated number of sliding blocks "
            f"{oh} * {ow} = {oh * ow}, but got input.size(2)={length}"
        )
    win = window(fn, (h, w), kernel, st, pad, dil)
    c = depth // area
    b = backend_of(xa)
    xp = b.xp
    out = b.col2im(xp.reshape(xa, (n, c, kernel[0], kernel[1], oh, ow)), win, h, w)
    if not (input.requires_grad and GRAD_ENABLED[0]):
        return wrap(out)

    def backward(grad: Array) -> tuple[Array]:
        return (xp.reshape(b.im2col(grad, win), (n, depth, length)),)

    return wrap(out, (backward, (input,)))
