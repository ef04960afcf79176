"""Whatever ``tt.save`` writes, ``tt.load`` reads back as it was: a property over generated objects
(nested lists, tuples, dicts and OrderedDicts at every depth the format takes, keys of every kind
it admits, numpy arrays of every dtype it holds, with any shape, order and strides, numpy scalars,
and tensors that may require grad).
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

import tinytensor as tt
from tinytensor.serialization import load, save
from tinytensor.serialization.format import ARRAY_DTYPES, DEPTH_LIMIT

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis (the test dependency group) generates the objects")
st = pytest.importorskip("hypothesis.strategies")
hnp = pytest.importorskip("hypothesis.extra.numpy")

DTYPES = sorted(ARRAY_DTYPES, key=str)
SURROGATE = b"scan-\xff".decode("utf-8", "surrogateescape")


@st.composite
def arrays(draw):
    """An array of a dtype a file holds: C or Fortran order, or a strided or transposed view."""
    dtype = draw(st.sampled_from(DTYPES))
    base = draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
    view = draw(st.sampled_from(["c", "fortran", "transposed", "strided", "big-endian"]))
    if view == "fortran":
        return np.asfortranarray(base)
    if view == "transposed":
        return base.T
    if view == "strided" and base.ndim:
        return base[::2]
    if view == "big-endian" and dtype.itemsize > 1:
        return base.astype(dtype.newbyteorder(">"))
    return base


@st.composite
def tensors(draw):
    data = draw(arrays())
    t = tt.tensor(data)
    if data.dtype.kind == "f" and draw(st.booleans()):
        t.requires_grad_(True)
    return t


TEXT = st.text(max_size=8) | st.just(SURROGATE)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | TEXT
KEYS = SCALARS | st.tuples(SCALARS, SCALARS)
LEAVES = SCALARS | arrays() | tensors() | arrays().map(lambda a: a[()] if a.ndim == 0 else a)


def _containers(children):
    return (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(KEYS, children, max_size=4)
        | st.dictionaries(KEYS, children, max_size=4).map(OrderedDict)
    )


OBJECTS = st.recursive(LEAVES, _containers, max_leaves=12)


def _depth(obj) -> int:
    """How many lists, tuples and dicts ``obj`` nests (keys included)."""
    if isinstance(obj, (list, tuple)):
        return 1 + max(map(_depth, obj), default=0)
    if isinstance(obj, dict):
        return 1 + max((max(_depth(k), _depth(v)) for k, v in obj.items()), default=0)
    return 0


@st.composite
def deep(draw):
    """A chain of containers around any object, up to the deepest the format takes."""
    obj = draw(OBJECTS)
    room = DEPTH_LIMIT - _depth(obj)
    for kind in draw(st.lists(st.sampled_from("ltd"), min_size=room // 2, max_size=room)):
        obj = [obj] if kind == "l" else ((obj,) if kind == "t" else {"k": obj})
    return obj


def _same(a, b) -> bool:
    """``a`` and ``b`` hold the same data, of the same types (nan equal to nan; a numpy array in
    any byte order or layout equal to the native, C-ordered array of its values)."""
    if isinstance(a, tt.Tensor):
        return (
            type(b) is type(a)
            and np.dtype(a.dtype).newbyteorder("=") == b.dtype  # tt.tensor keeps a big-endian array's order
            and a.requires_grad == b.requires_grad
            and np.array_equal(a.numpy(), b.numpy(), equal_nan=a.dtype.kind == "f")
        )
    if isinstance(a, (np.ndarray, np.generic)):
        return (
            type(b) is type(a)
            and a.dtype.newbyteorder("=") == b.dtype
            and a.shape == b.shape
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            _same(ka, kb) and _same(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    return a == b


# No example database: failures are reported with the object, and runs do not depend on earlier ones.
SETTINGS = hypothesis.settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[hypothesis.HealthCheck.too_slow]
)


@SETTINGS
@hypothesis.given(obj=OBJECTS)
def test_what_save_writes_load_reads_back(obj, tmp_path_factory):
    path = tmp_path_factory.mktemp("prop") / "obj.tt"
    save(obj, path)
    assert _same(obj, load(path))


@SETTINGS
@hypothesis.given(obj=deep())
def test_every_depth_save_takes_loads(obj, tmp_path_factory):
    path = tmp_path_factory.mktemp("deep") / "obj.tt"
    save(obj, path)
    assert _same(obj, load(path))
