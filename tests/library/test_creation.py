"""Creation functions against PyTorch: linspace (bit for bit), eye, randperm, randint's forms; and
``generator=``: the same seed gives the same values (on every device), a generator leaves the
global stream alone, and PyTorch's rule on the generator's device type. Bad input in one table.
Last, the docstrings: filled in with the shared parameter descriptions, they list each function's
parameters.

normal and multinomial are in test_sampling.py.
"""

import inspect
import math

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import creation


def _host(t):
    return t.numpy()


# ---------------------------------------------------------------------------- linspace
LINSPACE = [
    (0, 1, 5, None),
    (0, 1, 1, None),  # one step: start, as PyTorch
    (0, 1, 0, None),
    (5, -1, 4, None),  # descending
    (-3.3, 7.1, 50, None),
    (0, 10, 7, None),
    (1e-3, 1e3, 101, None),
    (-126.38, -10.72, 257, "float32"),
    (0.1, 0.7, 1000, "float64"),
    (-2.5, 2.5, 33, "float16"),
    (-3, 7, 7, "int64"),  # PyTorch's fused multiply-add truncates 1.99999... to 1 here
    (0.5, 10.7, 4, "int64"),  # the ends truncate to 0 and 10 first
    (10, -7.9, 39, "int32"),
    (0, 1, 3, "int64"),
]


@pytest.mark.parametrize(("start", "end", "steps", "dtype"), LINSPACE)
def test_linspace_gives_pytorchs_values_exactly(torch, start, end, steps, dtype):
    ours = tt.linspace(start, end, steps, dtype=dtype)
    theirs = torch.linspace(start, end, steps, dtype=getattr(torch, dtype or "float32"))
    assert ours.dtype == np.dtype(dtype or "float32") and ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(_host(ours), theirs.numpy(), strict=True)


def test_linspace_matches_pytorch_on_random_ranges(torch):
    rng = np.random.default_rng(5)
    for dtype in ("float32", "float64", "int64"):
        for _ in range(100):
            start, end = rng.normal(0, 100, 2)
            steps = int(rng.integers(2, 300))
            ours = _host(tt.linspace(start, end, steps, dtype=dtype))
            theirs = torch.linspace(start, end, steps, dtype=getattr(torch, dtype)).numpy()
            np.testing.assert_array_equal(ours, theirs, err_msg=f"linspace({start}, {end}, {steps}, {dtype})")


def test_linspace_takes_one_element_tensors_device_and_requires_grad(device, torch):
    out = tt.linspace(tt.tensor(0.0), tt.tensor([2.0]), 5, device=device, requires_grad=True)
    assert out.device == device and out.requires_grad and out.is_leaf
    np.testing.assert_array_equal(_host(out), torch.linspace(0.0, 2.0, 5).numpy())
    assert tt.linspace(-1, 1, 3, dtype="int64", device=device).device == device


# ---------------------------------------------------------------------------- eye
@pytest.mark.parametrize(
    ("n", "m", "dtype"),
    [(3, None, None), (2, 4, None), (4, 2, "float64"), (0, None, None), (3, 3, "int64"), (2, 3, "bool")],
)
def test_eye_matches_pytorch(torch, device, n, m, dtype):
    ours = tt.eye(n, m, dtype=dtype, device=device)
    theirs = torch.eye(n, n if m is None else m, dtype=getattr(torch, dtype or "float32"))
    assert ours.device == device
    np.testing.assert_array_equal(_host(ours), theirs.numpy(), strict=True)


def test_eye_requires_grad():
    assert tt.eye(2, requires_grad=True).requires_grad


# ---------------------------------------------------------------------------- randperm and randint
def test_randperm_is_a_permutation(device):
    out = tt.randperm(50, device=device)
    assert out.device == device and _host(out).dtype == np.int64
    assert sorted(_host(out).tolist()) == list(range(50))
    assert tt.randperm(0).shape == (0,)
    assert tt.randperm(5, dtype="float32").dtype == np.float32


def test_randint_takes_pytorchs_forms():
    tt.manual_seed(0)
    for out in (
        tt.randint(10, (300,)),
        tt.randint(high=10, size=(300,)),
        tt.randint(0, 10, (300,)),
        tt.randint(10, size=300),
    ):
        values = _host(out)
        assert out.dtype == np.int64 and out.shape == (300,) and values.min() >= 0 and values.max() <= 9
        assert len(set(values.tolist())) == 10
    low = _host(tt.randint(-3, -1, (100,), dtype="int32"))
    assert low.dtype == np.int32 and set(low.tolist()) == {-3, -2}


# ---------------------------------------------------------------------------- PyTorch's keyword names
# (name, a call with PyTorch's keyword names that works in both libraries)
KEYWORD_CALLS = [
    ("tensor", lambda lib, x: lib.tensor(data=[1.5, 2.0], requires_grad=False)),
    ("full", lambda lib, x: lib.full(size=(2, 3), fill_value=7)),
    ("arange", lambda lib, x: lib.arange(start=1, end=7, step=2)),
    ("linspace", lambda lib, x: lib.linspace(start=0.0, end=1.0, steps=5)),
    ("eye", lambda lib, x: lib.eye(n=2, m=3)),
    ("zeros_like", lambda lib, x: lib.zeros_like(input=x)),
    ("ones_like", lambda lib, x: lib.ones_like(input=x)),
    ("full_like", lambda lib, x: lib.full_like(input=x, fill_value=3.0)),
    ("randint", lambda lib, x: lib.randint(low=4, high=5, size=(3,))),
    ("randperm", lambda lib, x: lib.randperm(n=1)),
    ("from_dlpack", lambda lib, x: lib.from_dlpack(ext_tensor=np.arange(3))),
]


@pytest.mark.parametrize(("name", "call"), KEYWORD_CALLS, ids=[name for name, _ in KEYWORD_CALLS])
def test_creation_functions_take_pytorchs_keyword_names(torch, name, call):
    ours = call(tt, tt.tensor([[1.0, 2.0]]))
    theirs = call(torch, torch.tensor([[1.0, 2.0]]))
    assert ours.shape == tuple(theirs.shape)
    assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---------------------------------------------------------------------------- generator=
def _generator(device, seed):
    """A generator for results on ``device``: PyTorch wants its device type to match."""
    return tt.Generator(device=device).manual_seed(seed)


DRAWS = {
    "randn": lambda g, d: tt.randn(3, 4, generator=g, device=d),
    "rand": lambda g, d: tt.rand(6, generator=g, device=d, dtype="float64"),
    "randint": lambda g, d: tt.randint(0, 100, (8,), generator=g, device=d),
    "randperm": lambda g, d: tt.randperm(20, generator=g, device=d),
    "randn_like": lambda g, d: tt.randn_like(tt.zeros(5, device=d), generator=g),
    "rand_like": lambda g, d: tt.rand_like(tt.zeros(5, device=d), generator=g),
    "normal": lambda g, d: tt.normal(2.0, 3.0, (7,), generator=g, device=d),
    "normal-tensor": lambda g, d: tt.normal(tt.zeros(7, device=d), 2.0, generator=g),
    "multinomial": lambda g, d: tt.multinomial(tt.tensor([0.1, 0.2, 0.7], device=d), 5, True, generator=g),
}


@pytest.mark.parametrize("name", DRAWS)
def test_a_seeded_generator_repeats_its_values_on_every_device(name, device):
    draw = DRAWS[name]
    first = draw(_generator(device, 7), device)
    assert first.device == device
    np.testing.assert_array_equal(_host(first), _host(draw(_generator(device, 7), device)))
    np.testing.assert_array_equal(_host(first), _host(draw(_generator("cpu", 7), "cpu")))  # drawn on the host
    assert not np.array_equal(_host(first), _host(draw(_generator(device, 8), device)))


@pytest.mark.parametrize("name", DRAWS)
def test_a_generator_leaves_the_global_stream_alone(name):
    tt.manual_seed(11)
    expected = _host(tt.randn(10))
    tt.manual_seed(11)
    DRAWS[name](tt.Generator().manual_seed(3), "cpu")
    np.testing.assert_array_equal(_host(tt.randn(10)), expected)


def test_a_generator_advances_between_draws():
    g = tt.Generator().manual_seed(0)
    assert not np.array_equal(_host(tt.randn(5, generator=g)), _host(tt.randn(5, generator=g)))


def test_generator_device_follows_pytorch(torch):
    assert tt.Generator().device == "cpu" and tt.Generator(device="cuda:1").device == tt.device("cuda", 1)
    assert repr(tt.Generator(device="cuda").device) == repr(torch.device("cuda"))
    # PyTorch refuses a CPU generator for a CUDA result and the other way round: so does tinytensor
    with pytest.raises(
        tt.DeviceError, match=r"randn\(\): generator is a 'cuda' generator but the result is on a 'cpu'"
    ):
        tt.randn(2, generator=tt.Generator(device="cuda"))
    with pytest.raises(tt.DeviceError, match=r"rand\(\): generator is a 'cpu' generator .* 'strict' device"):
        tt.rand(2, generator=tt.Generator(), device="strict:device1")
    with pytest.raises(tt.DeviceError, match="unknown device 'tpu'"):
        tt.Generator(device="tpu")


# ---------------------------------------------------------------------------- bad input
BAD = [
    (
        "linspace-negative-steps",
        lambda: tt.linspace(0, 1, -1),
        ValueError,
        r"linspace\(\): steps must be an int >= 0, got -1",
    ),
    (
        "linspace-float-steps",
        lambda: tt.linspace(0, 1, 2.0),
        TypeError,
        r"linspace\(\): steps must be an int >= 0, got float",
    ),
    ("linspace-str", lambda: tt.linspace("0", 1, 2), TypeError, r"linspace\(\): start must be a number, got str"),
    (
        "linspace-vector-end",
        lambda: tt.linspace(0, tt.zeros(2), 3),
        ValueError,
        r"end must be a number or a one-element",
    ),
    ("linspace-bool-dtype", lambda: tt.linspace(0, 1, 2, dtype="bool"), TypeError, r"linspace\(\): dtype bool"),
    (
        "linspace-int-nan",
        lambda: tt.linspace(0, math.nan, 2, dtype="int64"),
        ValueError,
        r"must be finite for dtype int64",
    ),
    ("linspace-int32-range", lambda: tt.linspace(0, 2**40, 2, dtype="int32"), ValueError, r"does not fit in int32"),
    (
        "linspace-int-grad",
        lambda: tt.linspace(0, 1, 2, dtype="int64", requires_grad=True),
        TypeError,
        r"floating-point",
    ),
    ("linspace-out", lambda: tt.linspace(0, 1, 2, out=tt.zeros(2)), TypeError, r"unexpected keyword argument 'out'"),
    ("eye-negative", lambda: tt.eye(-1), ValueError, r"eye\(\): n must be an int >= 0, got -1"),
    ("eye-float", lambda: tt.eye(2, 2.5), TypeError, r"eye\(\): m must be an int >= 0, got float"),
    ("randperm-negative", lambda: tt.randperm(-2), ValueError, r"randperm\(\): n must be an int >= 0, got -2"),
    ("randperm-bool", lambda: tt.randperm(2, dtype="bool"), TypeError, r"randperm\(\): dtype bool"),
    ("randperm-float16-range", lambda: tt.randperm(5000, dtype="float16"), ValueError, r"too large for dtype float16"),
    (
        "randint-int32-range",
        lambda: tt.randint(0, 2**40, (2,), dtype="int32"),
        ValueError,
        r"do not fit in dtype int32",
    ),
    ("randint-int64-range", lambda: tt.randint(0, 2**64, (2,)), ValueError, r"do not fit in dtype int64"),
    ("randint-bool-range", lambda: tt.randint(0, 3, (2,), dtype="bool"), ValueError, r"do not fit in dtype bool"),
    (
        "randn-generator-numpy",
        lambda: tt.randn(2, generator=np.random.default_rng()),
        TypeError,
        r"randn\(\): generator must be a tinytensor Generator",
    ),
    ("randperm-generator-int", lambda: tt.randperm(3, generator=1), TypeError, r"got builtins.int"),
    ("randn-out", lambda: tt.randn(2, out=tt.zeros(2)), TypeError, r"unexpected keyword argument 'out'"),
]


@pytest.mark.parametrize(("name", "call", "exc", "message"), BAD, ids=[row[0] for row in BAD])
def test_bad_input_is_named(name, call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_a_refused_draw_leaves_the_stream_alone():
    tt.manual_seed(4)
    expected = _host(tt.randn(3))
    tt.manual_seed(4)
    with pytest.raises(tt.DeviceError):
        tt.randn(3, device="tpu")
    np.testing.assert_array_equal(_host(tt.randn(3)), expected)


# ---------------------------------------------------------------------------- docstrings
# The shared parameters' descriptions are filled in at import (creation._shared_args): each
# docstring must come out listing exactly the signature's parameters, in order, as NumPy-style
# entries (a name at the section's indent, its description indented below).
DOCUMENTED = [
    "tensor", "full", "zeros", "ones", "arange", "linspace", "eye", "randn", "rand", "randint", "randperm",
    "zeros_like", "ones_like", "full_like", "randn_like", "rand_like",
]  # fmt: skip


@pytest.mark.parametrize("name", DOCUMENTED)
def test_docstring_lists_every_parameter_once_filled_in(name):
    fn = getattr(tt, name)
    doc = inspect.getdoc(fn)
    section = doc.split("Parameters\n----------\n")[1].split("\n\n")[0].splitlines()
    assert section[0] and not section[0].startswith(" ")
    entries = [line.split(" : ")[0] for line in section if not line.startswith(" ")]
    assert all(" : " in line for line in section if not line.startswith(" ")), section
    assert all(line.startswith("    ") and line.strip() for line in section if line.startswith(" ")), section
    documented = [part.lstrip("*") for entry in entries for part in entry.split(", ")]
    assert documented == list(inspect.signature(fn).parameters)


def test_shared_args_fill_only_their_own_names():
    def made(*size, dtype=None):
        """Made.

        Parameters
        ----------
        {size}
        {dtype}
            More to say.
        reduction : {'mean', 'sum'}
        """

    # cleandoc: Python 3.13+ strips the docstring's indentation when it compiles it, earlier ones keep it
    filled = inspect.cleandoc(creation._shared_args(creation._FACTORY_ARGS)(made).__doc__)
    assert "\ndtype : str or numpy dtype, optional\n    The dtype (default float32).\n    More to say.\n" in filled
    assert "\n    More to say.\nreduction : {'mean', 'sum'}" in filled
    assert "(``made(2, 3)``)" in filled  # {fn}: the function's name

    def misspelt():
        """{dtpye}"""

    with pytest.raises(KeyError, match="dtpye"):
        creation._shared_args(creation._FACTORY_ARGS)(misspelt)
