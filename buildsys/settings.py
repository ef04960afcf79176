"""Every environment variable the build reads, parsed and checked in one place.

A value that cannot be used is a SettingError naming the variable, its value and what it accepts,
with the fix (``cause`` and ``fix``, like the build's other errors); an empty variable counts as
unset. The TINYTENSOR_* variables (and SOURCE_DATE_EPOCH) are checked by setup.py before anything
is built (``check``): each is an explicit instruction to this build, so a value it does not accept
is an error for every variant, as an unknown TINYTENSOR_CUDA_VARIANT is. The places and compilers
the environment names (CUDA_HOME, CUDA_PATH, CONDA_PREFIX, CXX, CUDAHOSTCXX) are checked where the
extension's build uses them: a fault there is one of the toolchain, which the plain pytinytensor
turns into its CPU-only warning (carrying this message) and a -cuNN variant into an error.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from . import archs

BUILD_TIMEOUT = "TINYTENSOR_BUILD_TIMEOUT"
DEFAULT_TIMEOUT = 600
# subprocess waits in poll(), whose timeout is an int of milliseconds: at most about 24 days
MOST_TIMEOUT = 7 * 24 * 3600
CUDA_SEARCH = "TINYTENSOR_CUDA_SEARCH"
DEFAULT_SEARCH = "CUDA_HOME,CUDA_PATH,/usr/local/cuda,CONDA_PREFIX,pip"
# Variables whose folder is a CUDA toolkit: each must hold its compiler. Others of the search (such
# as CONDA_PREFIX) are places that may hold some components.
TOOLKIT_ROOTS = ("CUDA_HOME", "CUDA_PATH")
NVCC = "bin/nvcc"
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Env = Mapping[str, str]


class SettingError(ValueError):
    """A build variable whose value cannot be used."""

    def __init__(self, cause: str, fix: str):
        super().__init__(cause)
        self.cause, self.fix = cause, fix


def invalid(name: str, value: str, expected: str, example: str) -> SettingError:
    """NAME='value': expected ..., with the fix "set NAME to <example>, or unset it"."""
    return SettingError(f"{name}={value!r}: expected {expected}", f"set {name} to {example}, or unset it")


def _env(env: Env | None) -> Env:
    return os.environ if env is None else env


def value(env: Env | None, name: str) -> str | None:
    """The variable without surrounding blanks, or None where it is unset or empty."""
    text = _env(env).get(name, "").strip()
    return text or None


# ---------------------------------------------------------------------------- kinds of value
def choice(env: Env | None, name: str, choices: tuple[str, ...], default: str, unset: str = "") -> str:
    """One of ``choices``; ``unset`` says what leaving it unset means where that is none of them."""
    text = value(env, name)
    if text is None:
        return default
    if text not in choices:
        expected = "one of " + ", ".join(repr(c) for c in choices) + (f", or unset for {unset}" if unset else "")
        raise invalid(name, text, expected, ", ".join(repr(c) for c in choices[:-1]) + f" or {choices[-1]!r}")
    return text


def seconds(env: Env | None, name: str, default: float, most: float = MOST_TIMEOUT) -> float:
    """A positive, finite number of seconds, at most ``most``."""
    text = value(env, name)
    if text is None:
        return default
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not 0 < number <= most:  # also refuses nan
        raise invalid(name, text, f"a positive number of seconds, at most {most:g}, e.g. 1800", "e.g. 1800")
    return number


def count(env: Env | None, name: str, default: int, what: str, example: str) -> int:
    """A whole number, 0 or more, in ASCII digits (what int() alone would also take, '+8', '1_0'
    or other scripts' digits, is refused)."""
    text = value(env, name)
    if text is None:
        return default
    if not re.fullmatch(r"[0-9]+", text):
        raise invalid(name, text, f"{what}, e.g. {example}", f"e.g. {example}")
    return int(text)


def command(env: Env | None, name: str, default: str | None, example: str) -> list[str] | None:
    """A command line (a program and its arguments, quoted as in a shell), or ``default``'s."""
    text = value(env, name)
    if text is None:
        return None if default is None else shlex.split(default)
    try:
        words = shlex.split(text)
    except ValueError as exc:  # an unclosed quotation
        raise invalid(name, text, f"a command line ({str(exc).lower()}), e.g. {example!r}", repr(example)) from None
    if not words or not words[0]:
        raise invalid(name, text, f"a command line naming a program, e.g. {example!r}", repr(example))
    return words


def directory(env: Env | None, name: str, holding: str | None = None) -> Path | None:
    """The folder the variable names, or None where unset; one that does not exist, or lacks
    ``holding`` (a file inside it), is an error naming the variable and the path."""
    text = _env(env).get(name, "")
    if not text:
        return None
    folder = Path(text)
    toolkit = f"the folder of a CUDA toolkit (the one holding {holding})" if holding else "a folder that exists"
    fix = f"set {name} to {toolkit}, or unset it"
    if not folder.is_dir():
        raise SettingError(f"${name}={text} does not exist", fix)
    if holding and not (folder / holding).is_file():
        raise SettingError(
            f"${name}={text} holds no {holding}: {Path(holding).name} not found at {folder / holding}", fix
        )
    return folder


# ---------------------------------------------------------------------------- the build's variables
def build_timeout(env: Env | None = None) -> float:
    """Seconds each command of the build may run (buildsys/commands.py)."""
    return seconds(env, BUILD_TIMEOUT, DEFAULT_TIMEOUT)


def nvcc_threads(env: Env | None = None) -> int:
    """nvcc --threads: architectures compiled in parallel, 0 for one per core."""
    return count(env, "TINYTENSOR_NVCC_THREADS", 0, "a whole number of threads (0: one per core)", "8")


def cuda_archs(env: Env | None = None) -> tuple[list[int], list[int]] | None:
    """(SASS archs, PTX archs) asked for, or None for the CUDA major's default (buildsys/archs.py)."""
    name, text = "TINYTENSOR_CUDA_ARCHS", value(env, "TINYTENSOR_CUDA_ARCHS")
    if text is None:
        return None
    try:
        return archs.parse(text)
    except ValueError as exc:
        raise invalid(name, text, f"GPU architectures such as '80;90+PTX' ({exc})", "e.g. '80;90+PTX'") from None


def cuda_search(env: Env | None = None) -> list[str]:
    """The places to look for CUDA, in order: variable names, absolute paths and "pip" (buildsys/toolkit.py)."""
    text = value(env, CUDA_SEARCH) or DEFAULT_SEARCH
    entries = [e.strip() for e in text.split(",") if e.strip()]
    bad = [e for e in entries if not (e == "pip" or e.startswith("/") or _VARIABLE.fullmatch(e))]
    if bad or not entries:
        why = f"{bad[0]!r} is none of these" if bad else "it names no place"
        raise invalid(
            CUDA_SEARCH,
            text,
            f"a comma-separated list of variable names, absolute paths and 'pip' ({why})",
            f"e.g. {DEFAULT_SEARCH!r}",
        )
    return entries


def search_place(env: Env | None, name: str) -> Path | None:
    """The folder a variable of the search names: a toolkit's (CUDA_HOME, CUDA_PATH) must hold nvcc."""
    return directory(env, name, NVCC if name in TOOLKIT_ROOTS else None)


def linker(env: Env | None = None) -> str:
    """What compiles the binding and links: "cxx" ($CXX) or "zig" (zig's clang against glibc 2.28)."""
    return choice(env, "TINYTENSOR_LINKER", ("cxx", "zig"), "cxx")


def zig(env: Env | None = None) -> list[str]:
    """zig as a command line, e.g. "python -m ziglang" (TINYTENSOR_LINKER=zig)."""
    return command(env, "TINYTENSOR_ZIG", "zig", "python -m ziglang") or ["zig"]


def zig_target(env: Env | None = None) -> str:
    """The target zig compiles and links for: glibc 2.28, manylinux_2_28's floor, unless asked otherwise."""
    name, text = "TINYTENSOR_ZIG_TARGET", value(env, "TINYTENSOR_ZIG_TARGET")
    if text is None:
        return f"{os.uname().machine}-linux-gnu.2.28"
    if not re.fullmatch(r"[\w.+-]+", text):
        raise invalid(name, text, "a zig target, e.g. 'x86_64-linux-gnu.2.28'", "e.g. 'x86_64-linux-gnu.2.28'")
    return text


def rpath(env: Env | None = None) -> bool:
    """Whether the extension's RPATH names the toolkit's library folders."""
    return choice(env, "TINYTENSOR_RPATH", ("1", "0"), "1") == "1"


def cxx(env: Env | None = None) -> list[str] | None:
    """$CXX as a command line, or None where unset."""
    return command(env, "CXX", None, "g++")


def host_cxx(env: Env | None = None) -> str | None:
    """$CUDAHOSTCXX: nvcc's host compiler (one program: nvcc's -ccbin takes no arguments), or None."""
    return _env(env).get("CUDAHOSTCXX") or None


def source_date_epoch(env: Env | None = None) -> int | None:
    """$SOURCE_DATE_EPOCH (reproducible-builds.org): the time to give the sdist's files, or None."""
    if value(env, "SOURCE_DATE_EPOCH") is None:
        return None
    return count(env, "SOURCE_DATE_EPOCH", 0, "a whole number of seconds since 1970", "1700000000")


def check(env: Env | None = None) -> None:
    """Parse every TINYTENSOR_* variable of the extension's build, and SOURCE_DATE_EPOCH, raising
    SettingError for the first that cannot be used (buildsys/variant.py checks those choosing the
    distribution)."""
    for parse in (build_timeout, nvcc_threads, cuda_archs, cuda_search, linker, zig, zig_target, rpath):
        parse(env)
    source_date_epoch(env)
