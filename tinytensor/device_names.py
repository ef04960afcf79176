"""Device names: parsing ``"cpu"``, ``"cuda"`` / ``"cuda:N"`` and ``"strict:NAME"``, and ``tt.device``.

``"strict:NAME"`` is a fake device of ``array_api_strict`` that the CPU-only test suite uses to
catch device-placement bugs that would break on a GPU. Parsing is pure string work: it never
imports CuPy or asks whether a GPU exists (``devices.backend_for`` does that).
"""

from __future__ import annotations

import builtins
import operator
from typing import SupportsIndex, TypeAlias

from .errors import DeviceError

# A parsed device: its kind ("cpu", "cuda", "strict") and, for "cuda", the device number or None
# (the current device); for "strict", the test device's name.
ParsedDevice: TypeAlias = tuple[str, int | str | None]

_EXPECTED = "expected 'cpu', 'cuda', 'cuda:N' (N a device number) or 'strict:NAME' (array_api_strict's test devices)"


def parse_device(spec: object) -> ParsedDevice:
    """Split a device string (or ``tt.device``) into (kind, index-or-name), or raise DeviceError naming it."""
    if not isinstance(spec, str):
        raise DeviceError(f"a device must be a string such as 'cpu' or 'cuda:0', got {spec!r}")
    kind, sep, rest = str(spec).partition(":")
    if kind == "cpu" and not sep:
        return "cpu", None
    if kind == "cuda":
        if not sep:
            return "cuda", None
        if rest.isdigit():
            return "cuda", int(rest)
    if kind == "strict" and rest:
        return "strict", rest
    raise DeviceError(f"unknown device {str(spec)!r}: {_EXPECTED}")


class device(str):  # lower case: PyTorch's name
    """A device, as ``torch.device``: ``tt.device("cuda")``, ``tt.device("cuda", 0)``,
    ``tt.device("cuda:1")``, ``tt.device("cpu")``, with ``.type`` and ``.index``.

    Unlike ``torch.device``, it is a ``str`` (its value is the device string, ``"cuda:0"``), so it
    equals and hashes like that string: ``x.device == "cpu"`` is True (False in PyTorch), and it
    is accepted wherever a device string is. ``tt.device("cuda")`` and ``tt.device("cuda:0")``
    differ, as in PyTorch (the first means the current device). Making one never checks that the
    device exists or is usable; putting a tensor there does.
    """

    __slots__ = ()

    def __new__(cls, type: str, index: SupportsIndex | None = None) -> device:  # noqa: A002 - PyTorch's keyword name
        if index is None:
            if isinstance(type, device):
                return type
            parse_device(type)
            return str.__new__(cls, type)
        if isinstance(index, bool):
            raise TypeError(f"device(): index must be an int, got {index!r}")
        try:
            index = operator.index(index)
        except TypeError:
            raise TypeError(f"device(): index must be an int, got {index.__class__.__name__}") from None
        if index < 0:
            raise ValueError(f"device(): index must be >= 0, got {index}")
        if not isinstance(type, str):
            raise DeviceError(f"device(): type must be a string such as 'cuda', got {type!r}")
        if ":" in type:
            raise DeviceError(
                f"device(): type {str(type)!r} must not include an index because index={index} was passed"
            )
        if type != "cuda":
            raise DeviceError(f"device(): only 'cuda' takes an index, got type {str(type)!r} with index={index}")
        return str.__new__(cls, f"cuda:{index}")

    @property
    def type(self) -> str:  # noqa: A003
        """``"cpu"``, ``"cuda"`` or ``"strict"``."""
        return str(self).partition(":")[0]

    @property
    def index(self) -> int | str | None:  # type: ignore[override]  # PyTorch's property hides str.index()
        """The CUDA device number (None for ``"cuda"``, the current one, and for ``"cpu"``); for a
        ``strict:`` test device, its name."""
        return parse_device(self)[1]

    def __repr__(self) -> str:
        index = self.index
        if index is None:
            return f"device(type={self.type!r})"
        return f"device(type={self.type!r}, index={index!r})"

    def __reduce__(self) -> tuple[builtins.type[device], tuple[str]]:
        return (device, (str(self),))


_KNOWN: dict[str, device] = {}


def as_device(spec: str) -> device:
    """The ``tt.device`` for a device string a backend reports (one object per string)."""
    found = _KNOWN.get(spec)
    if found is None:
        found = _KNOWN[spec] = device(spec)
    return found
