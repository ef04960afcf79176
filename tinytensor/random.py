"""The global random generator, and ``Generator`` for private streams (like ``torch.Generator``).

Creation functions draw on the host, so one seed gives the same values on every device; GPU
dropout masks come from a seed drawn here.
"""

from __future__ import annotations

import operator
import secrets

import numpy as np

from . import device_names
from .errors import DeviceError

_state = {"rng": np.random.default_rng()}

# PyTorch accepts seeds in [-2**63, 2**64) and maps negative ones onto the unsigned range.
_SEED_LOW, _SEED_HIGH = -(2**63), 2**64
# What a fresh torch.Generator() starts from: a new Generator is repeatable until reseeded.
DEFAULT_SEED = 67280421310721


def _check_seed(seed: object, where: str) -> int:
    if isinstance(seed, bool):
        raise TypeError(f"{where}: seed must be an int, got bool")
    try:
        number = operator.index(seed)  # type: ignore[arg-type]  # any object: index() decides, its TypeError is ours
    except TypeError:
        raise TypeError(f"{where}: seed must be an int, got {type(seed).__name__}") from None
    if not _SEED_LOW <= number < _SEED_HIGH:
        raise ValueError(f"{where}: seed must be in [-2**63, 2**64), got {number}")
    return number % _SEED_HIGH


def manual_seed(seed: int) -> None:
    """Make tinytensor's random numbers (init, randn, rand, dropout, DataLoader shuffling) repeatable."""
    _state["rng"] = np.random.default_rng(_check_seed(seed, "manual_seed"))


def generator() -> np.random.Generator:
    """The numpy Generator behind tinytensor's global random stream."""
    return _state["rng"]


def next_seed() -> int:
    """A seed drawn from the global stream, for draws a backend makes itself (dropout masks)."""
    return int(_state["rng"].integers(0, 2**63 - 1))


class Generator:
    """A private random stream, as ``torch.Generator``: ``tt.Generator().manual_seed(3)``.

    Pass it where a function takes ``generator=`` (``randn``, ``rand``, ``randint``, ``randperm``,
    ``normal``, ``multinomial``, ``DataLoader``) to make that randomness independent of the global
    stream. Like PyTorch's, a new Generator starts from a fixed default seed, so it is repeatable
    before ``manual_seed``; ``seed()`` reseeds it non-deterministically. Numbers are drawn on the
    host by the wrapped numpy Generator (``.rng``), so one seed gives the same values on every
    device; ``device`` (default ``"cpu"``) only says, as in PyTorch, which type of device its
    results may go to: a ``Generator(device="cuda")`` for tensors made on a GPU.
    """

    __slots__ = ("_device", "_initial_seed", "rng")

    def __init__(self, device: str = "cpu") -> None:
        self._device = device_names.device(device)
        self.manual_seed(DEFAULT_SEED)

    @property
    def device(self) -> device_names.device:
        """The type of device (and index) this generator's results go to, as given."""
        return self._device

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from ``seed``; returns this generator."""
        self._initial_seed = _check_seed(seed, "Generator.manual_seed")
        self.rng = np.random.default_rng(self._initial_seed)
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy; returns the new seed."""
        new = secrets.randbits(64)
        self.manual_seed(new)
        return new

    def initial_seed(self) -> int:
        """The seed this stream last started from."""
        return self._initial_seed

    def __repr__(self) -> str:
        where = "" if self._device == "cpu" else f", device={str(self._device)!r}"
        return f"Generator(initial_seed={self._initial_seed}{where})"


def check_generator(generator: object, fn: str) -> Generator | None:
    """``generator`` if it is a tinytensor Generator or None; anything else is a TypeError naming ``fn``."""
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(
            f"{fn}: generator must be a tinytensor Generator (tt.Generator().manual_seed(seed)) or None, "
            f"got {type(generator).__module__}.{type(generator).__qualname__}"
        )
    return generator


def rng_of(generator: Generator | None) -> np.random.Generator:
    """``generator``'s numpy stream, or the global one for None (a generator already checked)."""
    return generator.rng if generator is not None else _state["rng"]


def rng_for(generator: object, kind: str, fn: str) -> np.random.Generator:
    """The numpy stream a draw for a result on a device of ``kind`` ("cpu", "cuda", "strict") takes:
    ``generator``'s, or the global one when it is None. As in PyTorch, the generator must be made
    for that type of device."""
    generator = check_generator(generator, fn)
    if generator is None:
        return _state["rng"]
    if generator.device.type != kind:
        raise DeviceError(
            f"{fn}: generator is a {generator.device.type!r} generator but the result is on a {kind!r} device; "
            f"as in PyTorch they must match: tt.Generator(device={kind!r})"
        )
    return generator.rng
