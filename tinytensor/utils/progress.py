"""``progress_bar``: a tqdm bar around an iterable, quiet unless its output is a terminal."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable

from ..argcheck import int_at_least

_warned = [False]  # the missing-tqdm warning is given once per process


def progress_bar(iterable, prefix: str = "", length: int = 30, **kwargs):
    """Yield the items of ``iterable`` while drawing a progress bar (tqdm's) on stdout.

    ``prefix`` labels the bar and ``length`` is the bar's width in characters (pytinytensor 1.x's
    arguments); other keyword arguments go to ``tqdm.tqdm`` and win over these defaults (e.g.
    ``file=sys.stderr``, ``leave=False``, ``disable=True``). Nothing is written when the output is
    not a terminal (a file, a pipe, captured output), so logs stay clean. Without tqdm installed,
    the items come through unchanged and one warning says how to get the bar.

        for epoch in progress_bar(range(100), prefix="train"):
            ...
    """
    if not isinstance(prefix, str):
        raise TypeError(f"progress_bar: prefix must be a str, got {type(prefix).__name__}")
    length = int_at_least("progress_bar", "length", length, 1)
    if not isinstance(iterable, Iterable) and not hasattr(iterable, "__getitem__"):
        raise TypeError(f"progress_bar: iterable must be iterable, got {type(iterable).__name__}")
    return _bar(iterable, prefix, length, kwargs)


def _bar(iterable, prefix, length, kwargs):
    try:
        from tqdm import tqdm
    except ImportError:
        if not _warned[0]:
            _warned[0] = True
            warnings.warn(
                "progress_bar: tqdm is not installed, so no progress bar is drawn (pip install tqdm)",
                stacklevel=2,
            )
        yield from iterable
        return
    kwargs.setdefault("desc", prefix or None)
    kwargs.setdefault("file", sys.stdout)  # 1.x drew on stdout; looked up now, so redirection applies
    kwargs.setdefault("disable", None)  # tqdm's "off unless the file is a terminal"
    # A bar of `length` characters; without a known length, tqdm's own counter (no bar to fill).
    if kwargs.get("total") is not None or hasattr(iterable, "__len__"):
        kwargs.setdefault("bar_format", f"{{l_bar}}{{bar:{length}}}{{r_bar}}")
    # The with-block closes the bar (final line, newline) also when the loop is left early.
    with tqdm(iterable, **kwargs) as bar:
        yield from bar


train_bar = progress_bar  # the 1.x alias
