"""``progress_bar``: a tqdm bar around an iterable, quiet unless its output is a terminal."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from ..argcheck import int_at_least

_T = TypeVar("_T")
_warned = [False]  # the missing-tqdm warning is given once per process


def progress_bar(iterable: Iterable[_T], prefix: str = "", length: int = 30, **kwargs: Any) -> Iterator[_T]:
    """Yield the items of ``iterable`` while drawing a progress bar (tqdm's) on stdout.

    Parameters
    ----------
    iterable : iterable
        What to loop over. With a length (or a ``total`` keyword argument) the bar fills up;
        without one, tqdm shows a counter.
    prefix : str, default ""
        The bar's label (pytinytensor 1.x's argument).
    length : int, default 30
        The bar's width in characters (pytinytensor 1.x's argument).
    **kwargs
        Passed on to ``tqdm.tqdm``, winning over the defaults above and over tinytensor's
        (``file=sys.stdout``; ``disable=None``, which is tqdm's "only on a terminal"), e.g.
        ``file=sys.stderr``, ``leave=False``, ``disable=True``.

    Returns
    -------
    iterator
        The items of ``iterable``, unchanged. The bar is closed (its last line written) when
        the loop ends, also when it is left early.

    Raises
    ------
    TypeError
        ``iterable`` is not iterable, ``prefix`` is not a str or ``length`` not an int.
    ValueError
        ``length`` is below 1.

    Notes
    -----
    Nothing is written when the output is not a terminal (a file, a pipe, captured output), so
    logs stay clean. Without tqdm installed, the items come through unchanged and one warning
    (per process) says how to get the bar. ``train_bar`` is the same function, under its 1.x
    name.

    Examples
    --------
    >>> for epoch in progress_bar(range(100), prefix="train"):
    ...     pass
    """
    if not isinstance(prefix, str):
        raise TypeError(f"progress_bar: prefix must be a str, got {type(prefix).__name__}")
    length = int_at_least("progress_bar", "length", length, 1)
    _check_iterable(iterable)
    return _bar(iterable, prefix, length, kwargs)


def _check_iterable(iterable: object) -> None:
    # An object with __getitem__ alone is iterable too (the old sequence protocol).
    if not isinstance(iterable, Iterable) and not hasattr(iterable, "__getitem__"):
        raise TypeError(f"progress_bar: iterable must be iterable, got {type(iterable).__name__}")


def _bar(iterable: Iterable[_T], prefix: str, length: int, kwargs: dict[str, Any]) -> Iterator[_T]:
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
