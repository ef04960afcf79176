"""Convolution layers, as PyTorch's: ``Conv1d``, ``Conv2d``, ``ConvTranspose2d`` and ``LazyConv2d``
(whose ``in_channels`` is read from its first input). The computation is ``nn.functional``'s
``conv1d``, ``conv2d`` and ``conv_transpose2d``.

This is also pytinytensor 1.x's module path for ``Conv2d``. A 1.x ``Conv2d`` kept its bias as
(out, 1); its checkpoints load here as (out,) (``nn.legacy_state``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .. import creation
from ..argcheck import is_integral
from ..array_types import Array, DType
from ..devices import backend_of
from ..ops import conv as ops_conv
from ..parameter import Parameter
from ..tensor import Tensor
from ..windows import tuple_arg
from . import init
from .base import Module
from .layers import size_arg

_PADDING_STRINGS = ("same", "valid")
_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")  # PyTorch's; only "zeros" is implemented


class _ConvNd(Module):
    """What the convolution layers share: the arguments' checks, the parameters and their
    initialization, the repr, and the 1.x conversion. ``transposed`` layers keep their weight as
    (in_channels, out_channels / groups, *kernel_size), the others as (out_channels, in_channels /
    groups, *kernel_size), as PyTorch."""

    # each layer's tuples have one int per spatial axis (its annotations say how many)
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: str | tuple[int, ...]
    dilation: tuple[int, ...]
    output_padding: tuple[int, ...]
    weight: Parameter
    bias: Parameter | None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int],
        padding: str | int | Sequence[int],
        dilation: int | Sequence[int],
        transposed: bool,
        output_padding: int | Sequence[int],
        groups: int,
        bias: bool,
        padding_mode: str,
        device: str | None,
        dtype: DType | str | None,
        spatial: int,
    ) -> None:
        super().__init__()
        fn = f"{type(self).__name__}()"
        in_channels = size_arg(type(self).__name__, "in_channels", in_channels)
        out_channels = size_arg(type(self).__name__, "out_channels", out_channels)
        if not is_integral(groups) or groups <= 0:
            raise ValueError(f"{fn}: groups must be a positive integer, got {groups!r}")
        if in_channels % groups:
            raise ValueError(f"{fn}: in_channels must be divisible by groups ({in_channels} and {groups})")
        if out_channels % groups:
            raise ValueError(f"{fn}: out_channels must be divisible by groups ({out_channels} and {groups})")
        self.kernel_size = tuple_arg(fn, "kernel_size", kernel_size, spatial, 1)
        self.stride = tuple_arg(fn, "stride", stride, spatial, 1)
        self.dilation = tuple_arg(fn, "dilation", dilation, spatial, 1)
        self.output_padding = tuple_arg(fn, "output_padding", output_padding, spatial, 0)
        if isinstance(padding, str):
            if transposed:
                raise ValueError(f"{fn}: padding must be an int or a tuple of {spatial} ints, got {padding!r}")
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"{fn}: Invalid padding string {padding!r}, should be one of {set(_PADDING_STRINGS)}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{fn}: padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = tuple_arg(fn, "padding", padding, spatial, 0)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"{fn}: padding_mode must be one of {set(_PADDING_MODES)}, but got padding_mode={padding_mode!r}"
            )
        if padding_mode != "zeros":
            raise ValueError(
                f"{fn}: padding_mode={padding_mode!r} is not supported; only padding_mode='zeros' is (pad the input "
                f"with nn.functional.pad, then use padding=0)"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, int(groups)
        self.transposed, self.padding_mode = transposed, padding_mode
        shape = (
            (in_channels, out_channels // self.groups, *self.kernel_size)
            if transposed
            else (out_channels, in_channels // self.groups, *self.kernel_size)
        )
        self.weight = Parameter(creation.zeros(shape, dtype=dtype, device=device))
        self.bias = Parameter(creation.zeros(out_channels, dtype=dtype, device=device)) if bias else None

    def reset_parameters(self) -> None:
        """PyTorch's initialization: ``weight`` from ``kaiming_uniform_(a=sqrt(5))`` (U(-k, k) with
        ``k = 1 / sqrt(fan_in)``), ``bias`` from U(-k, k), ``fan_in`` being the weight's inputs per
        output (``in_channels / groups * prod(kernel_size)``; for a transposed layer,
        ``out_channels / groups * prod(kernel_size)``)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self.bias, -bound, bound)

    def _from_1x(self, name: str, array: Array) -> tuple[str, Array]:
        # 1.x's Conv2d added its bias as a column, (out, 1), to the (out, N*OH*OW) product
        if name == "bias" and array.ndim == 2 and array.shape[1] == 1:
            return name, array.reshape(-1)
        return name, array

    def extra_repr(self) -> str:
        """The settings as PyTorch's repr shows them: those that differ from the defaults."""
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if isinstance(self.padding, str):
            s += f", padding={self.padding}"
        elif any(self.padding):
            s += f", padding={self.padding}"
        if any(d != 1 for d in self.dilation):
            s += f", dilation={self.dilation}"
        if any(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """A 1-D convolution over (N, C_in, L) input (or unbatched (C_in, L)), as PyTorch's: each of
    ``out_channels`` filters of shape (C_in / groups, kernel_size) slides along L.

    Parameters
    ----------
    in_channels, out_channels : int
        The channels of the input and of the output.
    kernel_size : int or tuple of 1 int
        The filters' length.
    stride, dilation : int or tuple of 1 int
        The step between two placements, and between two taps of a filter (default 1).
    padding : int, tuple of 1 int, ``"same"`` or ``"valid"``
        Zeros added on both sides (default 0); ``"same"``: as many as keep the length (stride 1
        only); ``"valid"``: none.
    groups : int
        Channels split into ``groups`` independent groups (``groups == in_channels``: depthwise).
    bias : bool
        True (default): a learned ``bias`` of shape (out_channels,).
    padding_mode : str
        ``"zeros"``, the only one supported (PyTorch's ``"reflect"``, ``"replicate"`` and
        ``"circular"`` are refused: pad with ``nn.functional.pad`` first).
    device, dtype
        Where and in which floating dtype the parameters are made.

    Attributes
    ----------
    weight : Parameter
        (out_channels, in_channels / groups, kernel_size), from U(-k, k), ``k = 1 / sqrt(fan_in)``.
    bias : Parameter or None
        (out_channels,), from U(-k, k).

    Examples
    --------
    >>> import tinytensor as tt
    >>> conv = tt.nn.Conv1d(2, 4, 3, padding=1)
    >>> conv(tt.randn(5, 2, 10)).shape
    (5, 4, 10)
    """

    kernel_size: tuple[int]
    stride: tuple[int]
    padding: str | tuple[int]
    dilation: tuple[int]

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        padding: str | int | Sequence[int] = 0,
        dilation: int | Sequence[int] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: str | None = None,
        dtype: DType | str | None = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            False,
            0,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
            spatial=1,
        )
        self.reset_parameters()

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument name
        """The convolution of ``input`` with ``weight``, plus ``bias``."""
        return ops_conv.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """A 2-D convolution over (N, C_in, H, W) input (or unbatched (C_in, H, W)), as PyTorch's:
    each of ``out_channels`` filters of shape (C_in / groups, kH, kW) slides over H and W.

    Parameters
    ----------
    in_channels, out_channels : int
        The channels of the input and of the output.
    kernel_size : int or tuple of 2 ints
        The filters' height and width.
    stride, dilation : int or tuple of 2 ints
        The step between two placements, and between two taps of a filter (default 1).
    padding : int, tuple of 2 ints, ``"same"`` or ``"valid"``
        Zeros added on both sides of each axis (default 0); ``"same"``: as many as keep the size
        (stride 1 only); ``"valid"``: none.
    groups : int
        Channels split into ``groups`` independent groups (``groups == in_channels``: depthwise).
    bias : bool
        True (default): a learned ``bias`` of shape (out_channels,).
    padding_mode : str
        ``"zeros"``, the only one supported (PyTorch's ``"reflect"``, ``"replicate"`` and
        ``"circular"`` are refused: pad with ``nn.functional.pad`` first).
    device, dtype
        Where and in which floating dtype the parameters are made.

    Attributes
    ----------
    weight : Parameter
        (out_channels, in_channels / groups, kH, kW), from U(-k, k), ``k = 1 / sqrt(fan_in)``,
        ``fan_in = in_channels / groups * kH * kW`` (PyTorch's ``kaiming_uniform_(a=sqrt(5))``).
    bias : Parameter or None
        (out_channels,), from U(-k, k).

    Notes
    -----
    pytinytensor 1.x's ``Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0)``
    is the same call; its checkpoints' (out, 1) biases load as (out,).

    Examples
    --------
    >>> import tinytensor as tt
    >>> conv = tt.nn.Conv2d(3, 8, kernel_size=3, padding=1)
    >>> conv(tt.randn(2, 3, 16, 16)).shape
    (2, 8, 16, 16)
    >>> conv
    Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    """

    kernel_size: tuple[int, int]
    stride: tuple[int, int]
    padding: str | tuple[int, int]
    dilation: tuple[int, int]

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        padding: str | int | Sequence[int] = 0,
        dilation: int | Sequence[int] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: str | None = None,
        dtype: DType | str | None = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            False,
            0,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
            spatial=2,
        )
        self.reset_parameters()

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument name
        """The convolution of ``input`` with ``weight``, plus ``bias``."""
        return ops_conv.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    """A 2-D transposed convolution (the gradient of ``Conv2d`` with respect to its input), as
    PyTorch's: it maps (N, C_in, H, W) to (N, C_out, H_out, W_out) with
    ``H_out = (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1``.

    Parameters
    ----------
    in_channels, out_channels : int
        The channels of the input and of the output.
    kernel_size : int or tuple of 2 ints
        The filters' height and width.
    stride, dilation : int or tuple of 2 ints
        As the matching ``Conv2d``'s (default 1).
    padding : int or tuple of 2 ints
        The matching ``Conv2d``'s padding: removed from each side of the output (default 0).
    output_padding : int or tuple of 2 ints
        Added to one side of the output, to reach a size that several inputs of ``Conv2d`` share
        (smaller than the stride or the dilation; default 0).
    groups : int
        Channels split into ``groups`` independent groups.
    bias : bool
        True (default): a learned ``bias`` of shape (out_channels,).
    dilation : int or tuple of 2 ints
        The step between two taps of a filter (default 1).
    padding_mode : str
        ``"zeros"``, the only one (as in PyTorch).
    device, dtype
        Where and in which floating dtype the parameters are made.

    Attributes
    ----------
    weight : Parameter
        (in_channels, out_channels / groups, kH, kW), from U(-k, k), ``k = 1 / sqrt(fan_in)``,
        ``fan_in = out_channels / groups * kH * kW``, as PyTorch.
    bias : Parameter or None
        (out_channels,), from U(-k, k).

    Examples
    --------
    >>> import tinytensor as tt
    >>> up = tt.nn.ConvTranspose2d(4, 2, kernel_size=2, stride=2)
    >>> up(tt.randn(1, 4, 5, 5)).shape
    (1, 2, 10, 10)
    >>> tt.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1)(tt.randn(1, 4, 5, 5), output_size=(10, 10)).shape
    (1, 2, 10, 10)
    """

    kernel_size: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    output_padding: tuple[int, int]

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        padding: int | Sequence[int] = 0,
        output_padding: int | Sequence[int] = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: int | Sequence[int] = 1,
        padding_mode: str = "zeros",
        device: str | None = None,
        dtype: DType | str | None = None,
    ) -> None:
        if padding_mode != "zeros":  # PyTorch's own refusal for the transposed layers
            raise ValueError('ConvTranspose2d(): Only "zeros" padding mode is supported for ConvTranspose2d')
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            True,
            output_padding,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
            spatial=2,
        )
        self.reset_parameters()

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:  # noqa: A002
        """The transposed convolution of ``input``; ``output_size`` ((H_out, W_out), or the whole
        output shape) picks the output padding that gives that size, as in PyTorch."""
        output_padding = self._output_padding(input, output_size)
        return ops_conv.conv_transpose2d(
            input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation
        )

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple[int, int]:  # noqa: A002
        """``output_padding``, or the one that makes the output ``output_size`` (PyTorch's rule and errors)."""
        if output_size is None:
            return self.output_padding
        sizes = [int(s) for s in output_size]
        leading = 2 if input.ndim == 4 else 1  # (N, C) or, unbatched, (C,)
        if len(sizes) == leading + 2:
            sizes = sizes[leading:]
        if len(sizes) != 2:
            raise ValueError(
                f"ConvTranspose2d: for {input.ndim}D input, output_size must have 2 or {leading + 2} elements "
                f"(got {len(output_size)})"
            )
        spatial = input.shape[-2:]
        smallest = [
            (spatial[d] - 1) * self.stride[d] - 2 * self.padding[d] + self.dilation[d] * (self.kernel_size[d] - 1) + 1
            for d in range(2)
        ]
        largest = [smallest[d] + self.stride[d] - 1 for d in range(2)]
        if any(not lo <= s <= hi for s, lo, hi in zip(sizes, smallest, largest, strict=True)):
            raise ValueError(
                f"ConvTranspose2d: requested an output size of {sizes}, but valid sizes range from {smallest} to "
                f"{largest} (for an input of {tuple(spatial)})"
            )
        return sizes[0] - smallest[0], sizes[1] - smallest[1]


class LazyConv2d(Conv2d):
    """A ``Conv2d`` whose ``in_channels`` is read from its first input, as PyTorch's lazy modules
    (d2l's chapters build their networks with it).

    Until that first call, ``in_channels`` is 0 and ``weight`` has no elements (shape
    (out_channels, 0, kH, kW)). The first call sets ``in_channels`` from the input's channel axis,
    gives ``weight`` its shape and initializes both parameters as ``Conv2d`` does; the layer then
    becomes a ``Conv2d`` (its class changes, as in PyTorch). The Parameter objects stay the same,
    so an optimizer made before that first call updates them.

    Parameters
    ----------
    out_channels : int
        The channels of the output.
    kernel_size, stride, padding, dilation, groups, bias, padding_mode, device, dtype
        As ``Conv2d``'s.

    Examples
    --------
    >>> import tinytensor as tt
    >>> conv = tt.nn.LazyConv2d(8, kernel_size=3)
    >>> conv
    LazyConv2d(0, 8, kernel_size=(3, 3), stride=(1, 1))
    >>> conv(tt.randn(2, 3, 6, 6)).shape
    (2, 8, 4, 4)
    >>> conv
    Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))
    """

    def __init__(
        self,
        out_channels: int,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        padding: str | int | Sequence[int] = 0,
        dilation: int | Sequence[int] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: str | None = None,
        dtype: DType | str | None = None,
    ) -> None:
        # _ConvNd directly: Conv2d's reset_parameters has nothing to initialize yet
        _ConvNd.__init__(
            self,
            0,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            False,
            0,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
            spatial=2,
        )

    def has_uninitialized_params(self) -> bool:
        """True until the first call gives ``weight`` its shape."""
        return self.in_channels == 0

    def initialize_parameters(self, input: Tensor) -> None:  # noqa: A002 - PyTorch's argument name
        """Take ``in_channels`` from ``input`` ((N, C, H, W), or unbatched (C, H, W)), shape and
        initialize the parameters, and become a ``Conv2d``; the first call does this itself."""
        if input.ndim not in (3, 4):
            raise ValueError(
                f"LazyConv2d: expected 3D (unbatched) or 4D (batched) input, but got input of shape {input.shape}"
            )
        in_channels = input.shape[0 if input.ndim == 3 else 1]
        if in_channels % self.groups:
            raise ValueError(f"LazyConv2d: in_channels must be divisible by groups ({in_channels} and {self.groups})")
        empty = self.weight._data
        shape = (self.out_channels, in_channels // self.groups, *self.kernel_size)
        self.weight._data = backend_of(empty).zeros(shape, empty.dtype, empty)  # the same Parameter, resized
        self.in_channels = in_channels
        self.reset_parameters()
        self.__class__ = Conv2d  # type: ignore[assignment]  # as PyTorch's cls_to_become

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument name
        """Initialize the parameters from ``input`` (first call only), then ``Conv2d``'s forward."""
        if self.has_uninitialized_params():
            self.initialize_parameters(input)
        return Conv2d.forward(self, input)  # the class is Conv2d by now: no super()


__all__ = ["Conv1d", "Conv2d", "ConvTranspose2d", "LazyConv2d"]
