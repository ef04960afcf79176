"""Can a GPU of compute capability X.Y run code compiled for these architectures, and how?"""

from __future__ import annotations


def support(capability: int, sass: list[int], ptx: list[int]) -> tuple[str, str]:
    """("sass" | "ptx-jit" | "none", detail) for a device of ``capability`` (e.g. 86 for 8.6).

    SASS for sm_XY runs on devices of the same major with minor >= Y; PTX for compute_XY is
    JIT-compiled by the driver on any device of capability >= XY.
    """
    major, minor = divmod(capability, 10)
    native = [a for a in sass if a // 10 == major and a % 10 <= minor]
    if native:
        return "sass", f"SASS sm_{max(native)}"
    jit = [a for a in ptx if a <= capability]
    if jit:
        return "ptx-jit", f"PTX compute_{max(jit)} JIT-compiled by the driver (slower first launch)"
    return "none", f"no SASS for sm_{capability} and no PTX at or below it: kernels cannot run"


def parse_list(text: object) -> list[int]:
    """The architectures in a list such as ``"70;75;80"`` or ``"70,75"``, as ints."""
    return [int(a) for a in str(text).replace(",", ";").split(";") if a.strip()]
