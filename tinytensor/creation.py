"""Functions that make tensors: ``tensor``, ``zeros``, ``ones``, ``full``, ``arange``, ``linspace``,
``eye``, ``randn``, ``rand``, ``randint``, ``randperm``, the ``*_like`` forms, ``from_numpy`` and
``from_dlpack``.

Their parameters have PyTorch's names, so keyword calls port unchanged; each docstring says where
the function differs from PyTorch's.

Random tensors are drawn on the host, from the global stream or a ``tt.Generator``, so one seed
gives the same values on every device.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from . import random as _random
from .argcheck import int_at_least
from .array_types import Array, DType
from .device_names import parse_device
from .devices import backend_for, backend_of, transfer
from .dtypes import DEFAULT_FLOAT, is_float
from .dtypes import resolve as _resolve_dtype
from .errors import DeviceError
from .random import Generator
from .tensor import Tensor, as_array, wrap

# What the creation functions take for ``dtype`` and ``device``, as PyTorch's keyword arguments:
# a dtype name ("float32", which tt.float32 is) or a numpy dtype or type; a device string or
# tt.device (a str).
DTypeArg = str | DType | None
DeviceArg = str | None
_FloatArray = NDArray[np.floating[Any]]
_FloatOrArray = np.floating[Any] | _FloatArray

# The parameters the creation functions share, each described once (as PyTorch's
# factory_common_args and factory_like_common_args): a docstring line that is only ``{name}``
# becomes that entry, indented as the line; a function with more to say adds lines below it.
# ``{fn}`` in an entry is the function's name.
_FACTORY_ARGS = {
    "size": (
        "*size : int or sequence of ints\n"
        "    The shape, as separate ints (``{fn}(2, 3)``) or one sequence (``{fn}((2, 3))``); none gives a\n"
        "    0-d tensor. Unlike PyTorch, ``size=`` cannot be passed by keyword."
    ),
    "dtype": "dtype : str or numpy dtype, optional\n    The dtype (default float32).",
    "float_dtype": "dtype : str or numpy dtype, optional\n    A floating-point dtype (default float32).",
    "device": 'device : str or tt.device, optional\n    ``"cpu"`` (the default), ``"cuda"`` or ``"cuda:N"``.',
    "requires_grad": (
        "requires_grad : bool, default False\n"
        "    Record operations on the result for autograd (a floating-point dtype only)."
    ),
    "generator": (
        "generator : tt.Generator, optional\n"
        "    The stream to draw from (default: the global one, seeded by ``tt.manual_seed``); it must be\n"
        "    made for the result's device type, as in PyTorch."
    ),
}
# The ``*_like`` functions take their defaults from ``input``.
_LIKE_ARGS = {
    **_FACTORY_ARGS,
    "input": (
        "input : Tensor\n    The tensor whose shape (and dtype and device) the result takes; its values are not read."
    ),
    "dtype": "dtype : str or numpy dtype, optional\n    The dtype (default ``input``'s).",
    "float_dtype": "dtype : str or numpy dtype, optional\n    A floating-point dtype (default ``input``'s).",
    "device": "device : str or tt.device, optional\n    The device (default ``input``'s).",
}
_PLACEHOLDER = re.compile(r"(\s*)\{(\w+)\}\s*")
_F = TypeVar("_F", bound=Callable[..., Tensor])


def _shared_args(table: dict[str, str]) -> Callable[[_F], _F]:
    """Fill the docstring's ``{name}`` lines from ``table`` (an unknown name is an error)."""

    def fill(fn: _F) -> _F:
        if fn.__doc__ is None:  # python -OO
            return fn
        lines = []
        for line in fn.__doc__.split("\n"):
            match = _PLACEHOLDER.fullmatch(line)
            if match is None:
                lines.append(line)
                continue
            indent, name = match.groups()
            if name not in table:
                raise KeyError(f"{fn.__name__}'s docstring names {{{name}}}, which is not a shared argument")
            lines.extend(indent + entry for entry in table[name].replace("{fn}", fn.__name__).split("\n"))
        fn.__doc__ = "\n".join(lines)
        return fn

    return fill


def _shape(shape: Sequence[object], fn: str = "shape") -> tuple[int, ...]:
    """The sizes given as ints (``zeros(2, 3)``) or as one sequence (``zeros((2, 3))``), checked."""
    sizes = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)
    checked = []
    for n in sizes:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
            raise ValueError(f"{fn}: a shape holds non-negative integers, got {sizes!r}")
        checked.append(int(n))
    return tuple(checked)


def _size_arg(size: int | Sequence[int], fn: str) -> tuple[int, ...]:
    """A ``size`` argument that is one int or one sequence of ints (``full``, ``randint``)."""
    return _shape((size,) if isinstance(size, (int, np.integer)) else tuple(size), fn)


def _number(value: object, fn: str, name: str) -> int | float:
    """A Python bool, int or float (a numpy scalar of those kinds becomes one), else a TypeError."""
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"{fn}: {name} must be a number, got {type(value).__name__}")
    return value


def _finish(data: Array, requires_grad: bool) -> Tensor:
    t = wrap(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


@_shared_args(_FACTORY_ARGS)
def tensor(data: object, dtype: DTypeArg = None, device: DeviceArg = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data``.

    Parameters
    ----------
    data : array_like
        A Python number, bool or (nested) list or tuple of them, a numpy or CuPy array, or a Tensor.
        Python bools, ints and floats become bool, int64 and float32 (a list mixing ints and floats
        becomes float32), as in PyTorch; arrays and tensors keep their dtype.
    dtype : str or numpy dtype, optional
        The result's dtype: a name (``"float32"``, which ``tt.float32`` is) or a numpy dtype or
        type; by default it follows ``data`` as above.
    {device}
    {requires_grad}

    Returns
    -------
    Tensor
        A copy: later changes to ``data`` do not show in it.

    Raises
    ------
    TypeError
        ``data`` holds something that is not a number (strings, ``None``, ragged lists) or
        ``dtype`` is not a supported dtype.

    Notes
    -----
    Unlike ``torch.tensor``, ``dtype``, ``device`` and ``requires_grad`` may also be passed by
    position, and there is no ``pin_memory``. Complex numbers are not supported.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.tensor([[1.0, 2.0], [3.0, 4.0]])
    Tensor([[1., 2.],
            [3., 4.]])
    >>> tt.tensor([1, 2, 3]).dtype
    dtype('int64')
    >>> tt.tensor([1, 2], dtype=tt.float64, requires_grad=True)
    Tensor([1., 2.], dtype=float64, requires_grad=True)
    """
    array = as_array(data, _resolve_dtype(dtype, "tensor()"), "tensor()")
    return _finish(_place(array, device), requires_grad)


@_shared_args(_FACTORY_ARGS)
def full(
    size: int | Sequence[int],
    fill_value: float,
    dtype: DTypeArg = None,
    device: DeviceArg = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value``.

    Parameters
    ----------
    size : int or sequence of ints
        The shape, e.g. ``(2, 3)``; one int gives a 1-D tensor (PyTorch needs a sequence).
    fill_value : bool, int or float
        The value of every element (a numpy scalar of those kinds is taken too).
    dtype : str or numpy dtype, optional
        By default the dtype follows ``fill_value`` as in PyTorch: a bool gives bool, an int
        int64, a float float32.
    {device}
    {requires_grad}

    Returns
    -------
    Tensor

    Raises
    ------
    ValueError
        ``size`` holds a negative or non-integer size, or ``fill_value`` is a float that an
        integer ``dtype`` cannot hold exactly (PyTorch truncates it; here 0.5 into int64 is an
        error, 2.0 is 2).
    TypeError
        ``fill_value`` is not a number.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.full((2, 2), 7.0)
    Tensor([[7., 7.],
            [7., 7.]])
    >>> tt.full((3,), 1).dtype
    dtype('int64')
    """
    shape = _size_arg(size, "full()")
    value = _number(fill_value, "full()", "fill_value")
    dev = parse_device(device or "cpu")
    if dtype is None:
        dtype = np.bool_ if isinstance(value, bool) else np.int64 if isinstance(value, int) else DEFAULT_FLOAT
    resolved = _resolve_dtype(dtype, "full()")
    if not is_float(resolved) and isinstance(value, float) and not (math.isfinite(value) and value == int(value)):
        raise ValueError(f"full(): fill_value {value!r} cannot be stored exactly in dtype {resolved}")
    return _finish(backend_for(dev).full_on(shape, value, resolved, dev[1]), requires_grad)


@_shared_args(_FACTORY_ARGS)
def zeros(
    *size: int | Sequence[int], dtype: DTypeArg = None, device: DeviceArg = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of shape ``size`` filled with zeros, float32 by default.

    Parameters
    ----------
    {size}
    {dtype}
    {device}
    {requires_grad}

    Returns
    -------
    Tensor

    Raises
    ------
    ValueError
        A size is negative or not an integer.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.zeros(2, 3)
    Tensor([[0., 0., 0.],
            [0., 0., 0.]])
    >>> tt.zeros((2,), dtype=tt.int64)
    Tensor([0, 0])
    """
    return full(_shape(size, "zeros()"), 0.0, dtype=dtype, device=device, requires_grad=requires_grad)


@_shared_args(_FACTORY_ARGS)
def ones(
    *size: int | Sequence[int], dtype: DTypeArg = None, device: DeviceArg = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of shape ``size`` filled with ones, float32 by default.

    Parameters
    ----------
    {size}
    {dtype}
    {device}
    {requires_grad}

    Returns
    -------
    Tensor

    Raises
    ------
    ValueError
        A size is negative or not an integer.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.ones(2)
    Tensor([1., 1.])
    >>> tt.ones(2, 2, dtype="bool")
    Tensor([[ True,  True],
            [ True,  True]])
    """
    return full(_shape(size, "ones()"), 1.0, dtype=dtype, device=device, requires_grad=requires_grad)


@_shared_args(_FACTORY_ARGS)
def arange(
    start: float,
    end: float | None = None,
    step: float = 1,
    dtype: DTypeArg = None,
    device: DeviceArg = None,
    requires_grad: bool = False,
) -> Tensor:
    """Values from ``start`` up to (not including) ``end``, ``step`` apart.

    ``arange(end)`` counts from 0, as in PyTorch and Python's ``range``.

    Parameters
    ----------
    start : int or float
        The first value; with ``end`` omitted, it is the end and the values start at 0.
    end : int or float, optional
        The bound the values stop before.
    step : int or float, default 1
        The gap between values; negative counts down. Nonzero.
    dtype : str or numpy dtype, optional
        By default int64 when ``start``, ``end`` and ``step`` are all ints, else float32 (as in
        PyTorch).
    {device}
    {requires_grad}

    Returns
    -------
    Tensor
        A 1-D tensor of ``ceil((end - start) / step)`` values.

    Raises
    ------
    ValueError
        ``step`` is 0, a bound is not finite, or ``step`` points away from ``end``.
    TypeError
        An argument is not a number.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.arange(5)
    Tensor([0, 1, 2, 3, 4])
    >>> tt.arange(1, 2, 0.25)
    Tensor([1.  , 1.25, 1.5 , 1.75])
    """
    if end is None:
        start, end = 0, start
    first, stop, gap = (_number(v, "arange()", n) for v, n in ((start, "start"), (end, "end"), (step, "step")))
    if gap == 0:
        raise ValueError("arange(): step must be nonzero")
    if not all(math.isfinite(v) for v in (first, stop, gap)):
        raise ValueError(f"arange(): start, end and step must be finite, got {first}, {stop}, {gap}")
    if (stop - first) * gap < 0:
        raise ValueError(f"arange(): step {gap} points away from end {stop} (start {first})")
    if dtype is None:
        is_int = all(isinstance(v, int) for v in (first, stop, gap))
        dtype = np.int64 if is_int else DEFAULT_FLOAT
    host = np.arange(first, stop, gap, dtype=_resolve_dtype(dtype, "arange()"))
    return _finish(_place(host, device), requires_grad)


@_shared_args(_FACTORY_ARGS)
def linspace(
    start: float | Tensor,
    end: float | Tensor,
    steps: int,
    *,
    dtype: DTypeArg = None,
    device: DeviceArg = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` values evenly spaced from ``start`` to ``end``, both included.

    The values are PyTorch's, bit for bit: the first half counts up from ``start`` and the second
    half down from ``end`` (so both ends are exact), each value one fused multiply-add as
    PyTorch's kernels compute it; an integer dtype truncates them, as PyTorch does.

    Parameters
    ----------
    start, end : int, float or one-element Tensor
        The first and the last value.
    steps : int
        How many values (>= 0); 1 gives just ``start``.
    dtype : str or numpy dtype, optional
        The dtype (default float32; bool is refused). With an integer dtype the values are computed
        in float64 and truncated.
    {device}
    {requires_grad}

    Returns
    -------
    Tensor
        A 1-D tensor of ``steps`` values.

    Raises
    ------
    ValueError
        ``steps`` is negative, a tensor ``start`` or ``end`` has more than one element, or they are
        not finite or do not fit an integer ``dtype``.
    TypeError
        ``dtype`` is bool, or an argument is not a number.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.linspace(0, 1, 5)
    Tensor([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    fn = "linspace()"
    first, last = (_number(_item(v, fn, n), fn, n) for v, n in ((start, "start"), (end, "end")))
    n_steps = int_at_least(fn, "steps", steps, 0)
    resolved = _resolve_dtype(dtype, fn) or DEFAULT_FLOAT
    if resolved.kind == "b":
        raise TypeError(f"{fn}: dtype bool is not supported; use a float or integer dtype")
    if resolved.kind == "f":
        math_dtype = resolved
        low, high = math_dtype.type(first), math_dtype.type(last)
    else:
        if not all(math.isfinite(v) for v in (first, last)):
            raise ValueError(f"{fn}: start and end must be finite for dtype {resolved}, got {first} and {last}")
        info = np.iinfo(resolved)
        whole_first, whole_last = int(first), int(last)  # truncated to the dtype first, as PyTorch
        if not (info.min <= whole_first <= info.max and info.min <= whole_last <= info.max):
            raise ValueError(f"{fn}: start {first} or end {last} does not fit in {resolved}")
        math_dtype = np.dtype(np.float64)  # PyTorch steps through integer ranges in double
        low, high = math_dtype.type(whole_first), math_dtype.type(whole_last)
    if n_steps == 1:
        host = np.array([low]).astype(resolved)
    else:
        index = np.arange(n_steps)
        with np.errstate(invalid="ignore", over="ignore"):
            step = (high - low) / math_dtype.type(max(n_steps - 1, 1))
            up = _multiply_add(step, index.astype(math_dtype), low)
            down = _multiply_add(-step, (n_steps - 1 - index).astype(math_dtype), high)
        host = np.where(index < n_steps // 2, up, down).astype(resolved)
    return _finish(_place(host, device), requires_grad)


def _multiply_add(a: np.floating[Any], b: _FloatArray, c: np.floating[Any]) -> _FloatArray:
    """``a * b + c`` rounded once, as the fused multiply-add PyTorch's compiled kernels use (float16,
    whose every operation PyTorch rounds, is computed plainly).

    numpy has no fma, so this is Boldo and Melquiond's emulation (2008): Dekker's exact product
    and Knuth's exact sum, the small parts added with rounding to odd, then one rounding to nearest.
    """
    dtype = b.dtype
    a, c = dtype.type(a), dtype.type(c)
    plain: _FloatArray = a * b + c
    if dtype.itemsize < 4:
        return plain
    split = dtype.type(2 ** ((np.finfo(dtype).nmant + 2) // 2) + 1)  # Veltkamp's splitter

    def halves(x: _FloatOrArray) -> tuple[_FloatOrArray, _FloatOrArray]:
        scaled = split * x
        high = scaled - (scaled - x)
        return high, x - high

    product = a * b
    (a_high, a_low), (b_high, b_low) = halves(a), halves(b)
    product_error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    total = c + product
    virtual = total - c
    total_error = (c - (total - virtual)) + (product - virtual)
    small = total_error + product_error
    virtual = small - total_error
    small_error = (total_error - (small - virtual)) + (product_error - virtual)
    # round to odd: an inexact sum whose last bit is even moves to its odd neighbour
    bits = small.view(np.int64 if dtype.itemsize == 8 else np.int32)
    inexact_even = (small_error != 0) & ((bits & 1) == 0)
    small = np.where(inexact_even, np.nextafter(small, np.copysign(dtype.type(np.inf), small_error)), small)
    fused = total + small
    result: _FloatArray = np.where(np.isfinite(fused), fused, plain)  # near overflow, the splitting overflows first
    return result


@_shared_args(_FACTORY_ARGS)
def eye(
    n: int, m: int | None = None, *, dtype: DTypeArg = None, device: DeviceArg = None, requires_grad: bool = False
) -> Tensor:
    """A 2-D tensor with ones on the diagonal and zeros elsewhere.

    Parameters
    ----------
    n : int
        The number of rows (>= 0).
    m : int, optional
        The number of columns (default ``n``).
    {dtype}
    {device}
    {requires_grad}

    Returns
    -------
    Tensor
        Of shape ``(n, m)``.

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.eye(2)
    Tensor([[1., 0.],
            [0., 1.]])
    """
    rows = int_at_least("eye()", "n", n, 0)
    columns = rows if m is None else int_at_least("eye()", "m", m, 0)
    host = np.eye(rows, columns, dtype=_resolve_dtype(dtype, "eye()") or DEFAULT_FLOAT)
    return _finish(_place(host, device), requires_grad)


def _item(value: object, fn: str, name: str) -> object:
    """A one-element tensor's number (PyTorch's linspace takes 0-d tensors for start and end)."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"{fn}: {name} must be a number or a one-element tensor, got shape {value.shape}")
        return value.item()
    return value


def _place(host: Array, device: DeviceArg) -> Array:
    return transfer(host, parse_device(device)) if device is not None else host


def _float_dtype(dtype: DTypeArg, fn: str) -> np.dtype[Any]:
    resolved = _resolve_dtype(dtype, fn) or np.dtype(DEFAULT_FLOAT)
    if not is_float(resolved):
        raise TypeError(f"{fn}: random samples need a floating-point dtype, got {resolved}")
    return resolved


def _rng(generator: Generator | None, device: DeviceArg, fn: str) -> np.random.Generator:
    """The stream to draw from (``generator``'s or the global one), after checking ``device``."""
    kind = parse_device(device)[0] if device is not None else "cpu"
    return _random.rng_for(generator, kind, fn)


@_shared_args(_FACTORY_ARGS)
def randn(
    *size: int | Sequence[int],
    generator: Generator | None = None,
    dtype: DTypeArg = None,
    device: DeviceArg = None,
    requires_grad: bool = False,
) -> Tensor:
    """Samples from the standard normal distribution (mean 0, variance 1), float32 by default.

    The samples are drawn on the host in float64 and then cast and moved, so one seed gives the
    same values on every device. They are not PyTorch's values for the same seed: the stream is
    numpy's (PCG64).

    Parameters
    ----------
    {size}
    {generator}
    {float_dtype}
    {device}
    {requires_grad}

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError
        ``dtype`` is not a floating-point dtype, or ``generator`` is not a ``tt.Generator``.

    Examples
    --------
    >>> import tinytensor as tt
    >>> g = tt.Generator().manual_seed(0)
    >>> tt.randn(2, 3, generator=g).shape
    (2, 3)
    """
    resolved = _float_dtype(dtype, "randn()")
    rng = _rng(generator, device, "randn()")
    host = rng.standard_normal(_shape(size, "randn()"), dtype=np.float64).astype(resolved)
    return _finish(_place(host, device), requires_grad)


@_shared_args(_FACTORY_ARGS)
def rand(
    *size: int | Sequence[int],
    generator: Generator | None = None,
    dtype: DTypeArg = None,
    device: DeviceArg = None,
    requires_grad: bool = False,
) -> Tensor:
    """Samples from the uniform distribution on [0, 1), float32 by default.

    Drawn on the host as ``randn``'s are: one seed gives the same values on every device, but not
    PyTorch's values.

    Parameters
    ----------
    {size}
    {generator}
    {float_dtype}
    {device}
    {requires_grad}

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError
        ``dtype`` is not a floating-point dtype, or ``generator`` is not a ``tt.Generator``.

    Examples
    --------
    >>> import tinytensor as tt
    >>> x = tt.rand(1000)
    >>> bool(((x >= 0) & (x < 1)).all())
    True
    """
    resolved = _float_dtype(dtype, "rand()")
    rng = _rng(generator, device, "rand()")
    host = rng.random(_shape(size, "rand()"), dtype=np.float64).astype(resolved)
    return _finish(_place(host, device), requires_grad)


@_shared_args(_FACTORY_ARGS)
def randint(
    low: int = 0,
    high: int | Sequence[int] | None = None,
    size: int | Sequence[int] = (),
    *,
    generator: Generator | None = None,
    dtype: DTypeArg = None,
    device: DeviceArg = None,
) -> Tensor:
    """Integers drawn uniformly from [``low``, ``high``), int64 by default.

    Called as PyTorch's: ``randint(high, size)`` or ``randint(low, high, size)``.

    Parameters
    ----------
    low : int, default 0
        The smallest value that may be drawn.
    high : int
        One above the largest value that may be drawn.
    size : int or sequence of ints
        The shape of the result (default: 0-d).
    {generator}
    dtype : str or numpy dtype, optional
        The dtype (default int64). The range must fit it: values that would wrap around are an
        error, not a silent cast.
    {device}

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError
        ``low`` or ``high`` is not an int.
    ValueError
        ``high <= low``, or the range does not fit ``dtype``.

    Notes
    -----
    There is no ``requires_grad`` (an integer tensor cannot require grad). The values are not
    PyTorch's for the same seed.

    Examples
    --------
    >>> import tinytensor as tt
    >>> x = tt.randint(10, (3,))
    >>> x.shape, x.dtype
    ((3,), dtype('int64'))
    >>> bool(((x >= 0) & (x < 10)).all())
    True
    """
    if isinstance(high, (tuple, list)) and size == ():  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    lo, hi = (_number(v, "randint()", n) for v, n in ((low, "low"), (high, "high")))
    if not (isinstance(lo, int) and isinstance(hi, int)):
        raise TypeError(f"randint(): low and high must be ints, got {lo!r} and {hi!r}")
    if hi <= lo:
        raise ValueError(f"randint(): high ({hi}) must be greater than low ({lo})")
    resolved = _resolve_dtype(dtype, "randint()") or np.dtype(np.int64)
    # the draw is int64, then cast: the range must fit both, never wrapping silently
    info = np.iinfo(resolved if resolved.kind == "i" else np.int64)
    lowest, highest = (0, 1) if resolved.kind == "b" else (int(info.min), int(info.max))
    if lo < lowest or hi - 1 > highest:
        raise ValueError(f"randint(): values in [{lo}, {hi}) do not fit in dtype {resolved}")
    shape = _size_arg(size, "randint()")
    host = _rng(generator, device, "randint()").integers(lo, hi, shape).astype(resolved)
    return wrap(_place(host, device))


@_shared_args(_FACTORY_ARGS)
def randperm(
    n: int,
    *,
    generator: Generator | None = None,
    dtype: DTypeArg = None,
    device: DeviceArg = None,
    requires_grad: bool = False,
) -> Tensor:
    """A random permutation of the integers ``0 .. n-1``, int64 by default.

    Parameters
    ----------
    n : int
        How many values (>= 0).
    {generator}
    dtype : str or numpy dtype, optional
        The dtype (default int64; bool is refused). It must hold ``n - 1`` exactly.
    {device}
    {requires_grad}

    Returns
    -------
    Tensor
        A 1-D tensor of ``n`` values. Not PyTorch's permutation for the same seed.

    Examples
    --------
    >>> import tinytensor as tt
    >>> sorted(tt.randperm(4).tolist())
    [0, 1, 2, 3]
    """
    count = int_at_least("randperm()", "n", n, 0)
    resolved = _resolve_dtype(dtype, "randperm()") or np.dtype(np.int64)
    if resolved.kind == "b":
        raise TypeError("randperm(): dtype bool is not supported")
    largest = 2 ** (np.finfo(resolved).nmant + 1) if resolved.kind == "f" else int(np.iinfo(resolved).max)
    if count - 1 > largest:
        raise ValueError(f"randperm(): n {count} is too large for dtype {resolved} (values up to {largest} are exact)")
    host = _rng(generator, device, "randperm()").permutation(count).astype(resolved)
    return _finish(_place(host, device), requires_grad)


def uniform(
    shape: int | Sequence[int], low: float, high: float, dtype: DTypeArg = None, device: DeviceArg = None
) -> Tensor:
    """Uniform samples in [low, high) from the global stream (used for layer initialization)."""
    resolved = _resolve_dtype(dtype) or np.dtype(DEFAULT_FLOAT)
    host = _random.generator().uniform(low, high, _shape((shape,))).astype(resolved)
    return wrap(_place(host, device))


def _like(input: Tensor, dtype: DTypeArg, device: DeviceArg) -> tuple[tuple[int, ...], DTypeArg, DeviceArg]:  # noqa: A002
    """The shape, and ``dtype`` and ``device`` where given else ``input``'s, for the ``*_like`` functions."""
    return (
        tuple(input.shape),
        dtype if dtype is not None else input.dtype,
        device if device is not None else input.device,
    )


@_shared_args(_LIKE_ARGS)
def zeros_like(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    dtype: DTypeArg = None,
    device: DeviceArg = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of zeros with the shape of ``input``, and its dtype and device unless given.

    Parameters
    ----------
    {input}
    {dtype}
    {device}
    {requires_grad}

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.zeros_like(tt.tensor([[1, 2], [3, 4]]))
    Tensor([[0, 0],
            [0, 0]])
    """
    shape, dtype, device = _like(input, dtype, device)
    return full(shape, 0, dtype=dtype, device=device, requires_grad=requires_grad)


@_shared_args(_LIKE_ARGS)
def ones_like(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    dtype: DTypeArg = None,
    device: DeviceArg = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor of ones with the shape of ``input``, and its dtype and device unless given.

    Parameters
    ----------
    {input}
    {dtype}
    {device}
    {requires_grad}

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.ones_like(tt.zeros(2, dtype=tt.float64))
    Tensor([1., 1.], dtype=float64)
    """
    shape, dtype, device = _like(input, dtype, device)
    return full(shape, 1, dtype=dtype, device=device, requires_grad=requires_grad)


@_shared_args(_LIKE_ARGS)
def full_like(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    fill_value: float,
    dtype: DTypeArg = None,
    device: DeviceArg = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor filled with ``fill_value``, with the shape of ``input`` and its dtype and device unless given.

    Parameters
    ----------
    {input}
    fill_value : bool, int or float
        The value of every element. A float that ``input``'s integer dtype cannot hold exactly is
        an error (PyTorch truncates it).
    dtype : str or numpy dtype, optional
        The dtype (default ``input``'s, not the one ``fill_value`` would give).
    {device}
    {requires_grad}

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import tinytensor as tt
    >>> tt.full_like(tt.zeros(3), 0.5)
    Tensor([0.5, 0.5, 0.5])
    """
    shape, dtype, device = _like(input, dtype, device)
    return full(shape, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


@_shared_args(_LIKE_ARGS)
def randn_like(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    *,
    generator: Generator | None = None,
    dtype: DTypeArg = None,
    device: DeviceArg = None,
    requires_grad: bool = False,
) -> Tensor:
    """``randn`` with the shape of ``input``, and its dtype and device unless given.

    Parameters
    ----------
    {input}
        It must be floating point unless ``dtype`` is given.
    {generator}
    {float_dtype}
    {device}
    {requires_grad}

    Returns
    -------
    Tensor
    """
    shape, dtype, device = _like(input, dtype, device)
    return randn(*shape, generator=generator, dtype=dtype, device=device, requires_grad=requires_grad)


@_shared_args(_LIKE_ARGS)
def rand_like(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    *,
    generator: Generator | None = None,
    dtype: DTypeArg = None,
    device: DeviceArg = None,
    requires_grad: bool = False,
) -> Tensor:
    """``rand`` with the shape of ``input``, and its dtype and device unless given.

    Parameters
    ----------
    {input}
        It must be floating point unless ``dtype`` is given.
    {generator}
    {float_dtype}
    {device}
    {requires_grad}

    Returns
    -------
    Tensor
    """
    shape, dtype, device = _like(input, dtype, device)
    return rand(*shape, generator=generator, dtype=dtype, device=device, requires_grad=requires_grad)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor that shares memory with the numpy array ``array`` (no copy).

    Parameters
    ----------
    array : numpy.ndarray
        Of a dtype tinytensor supports (bool, int32, int64, float16, float32, float64).

    Returns
    -------
    Tensor
        A change made in place to one shows in the other, as in PyTorch.

    Raises
    ------
    TypeError
        ``array`` is not a ``numpy.ndarray``.

    Examples
    --------
    >>> import numpy as np
    >>> import tinytensor as tt
    >>> a = np.zeros(3)
    >>> t = tt.from_numpy(a)
    >>> a[0] = 5.0
    >>> t
    Tensor([5., 0., 0.], dtype=float64)
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy needs a numpy.ndarray, got {type(array).__name__}")
    return wrap(array)


# DLPack device types (dlpack.h): kDLCPU = 1, kDLCUDA = 2, kDLCUDAManaged = 13.
_DLPACK_CPU = 1
_DLPACK_CUDA = (2, 13)


def from_dlpack(ext_tensor: Any) -> Tensor:  # Any: any object with __dlpack__ and __dlpack_device__
    """A tensor sharing memory with any DLPack producer (a torch tensor, a CuPy, JAX or numpy array).

    Parameters
    ----------
    ext_tensor : object
        An object with ``__dlpack__`` and ``__dlpack_device__`` on the CPU or a CUDA device.

    Returns
    -------
    Tensor
        On the producer's device, without a copy.

    Raises
    ------
    TypeError
        ``ext_tensor`` does not implement the DLPack protocol, or its export fails.
    DeviceError
        The data is on a device that is neither the CPU nor CUDA.

    Examples
    --------
    >>> import numpy as np
    >>> import tinytensor as tt
    >>> tt.from_dlpack(np.arange(3))
    Tensor([0, 1, 2])
    """
    name = type(ext_tensor).__name__
    if not hasattr(ext_tensor, "__dlpack_device__") or not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack(): {name} does not implement the DLPack protocol (__dlpack__, __dlpack_device__)")
    try:
        device_type, device_id = ext_tensor.__dlpack_device__()
        device_type, device_id = int(device_type), int(device_id)
    except Exception as exc:  # a producer's own bug: say whose
        raise TypeError(
            f"from_dlpack(): {name}.__dlpack_device__() must return (device type, device id), failed with {exc!r}"
        ) from None
    importer: Callable[[Any], Array]
    if device_type == _DLPACK_CPU:
        importer = np.from_dlpack
    elif device_type in _DLPACK_CUDA:
        importer = backend_for(("cuda", device_id)).xp.from_dlpack
    else:
        raise DeviceError(f"from_dlpack(): DLPack device type {device_type} is neither CPU (1) nor CUDA (2)")
    try:
        array = importer(ext_tensor)
    except (TypeError, ValueError, RuntimeError, BufferError, AttributeError) as exc:
        raise TypeError(f"from_dlpack(): {name} is not a valid DLPack producer: {exc}") from None
    return wrap(array)


def backend_name(t: Tensor) -> str:
    """Which array library holds the tensor: ``'numpy'``, ``'cupy'`` or ``'array_api_strict'``."""
    return backend_of(t._data).name
