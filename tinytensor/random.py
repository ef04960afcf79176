"""The global random generator. Creation functions draw on the host, so one seed gives the same
values on every device; GPU dropout masks come from a seed drawn here."""

from __future__ import annotations

import numpy as np

_state = {"rng": np.random.default_rng()}


def manual_seed(seed: int) -> None:
    """Make tinytensor's random numbers (init, randn, rand, dropout) repeatable."""
    _state["rng"] = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    return _state["rng"]


def next_seed() -> int:
    return int(_state["rng"].integers(0, 2**63 - 1))
