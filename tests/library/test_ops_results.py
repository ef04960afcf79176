"""What the ops beyond op_cases.py's gradients return, against PyTorch on every device: result dtypes
of integer and bool inputs, sort and topk's (values, indices) with ties and NaN, pieces of chunk and
split, cumsum, one_hot, the predicates (allclose, equal, is_tensor) and type(); then their bad input,
as a table (each error names the function and the problem).
"""

import math

import numpy as np
import pytest

import tinytensor as tt
from tinytensor.dtypes import numpy_dtype
from tinytensor.nn import functional as F


def _on(device, data, dtype=None):
    return tt.tensor(np.asarray(data, dtype=dtype), device=device)


def _same(ours, ref):
    """Our tensor equals PyTorch's: dtype name, shape and values (NaN where NaN)."""
    assert str(ours.numpy().dtype) == str(ref.dtype).removeprefix("torch."), (ours.dtype, ref.dtype)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6, equal_nan=True)


MATH = ["sin", "cos", "tan", "log1p", "expm1", "log2", "log10", "exp2", "reciprocal", "rsqrt"]
MATH += ["square", "sign", "floor", "ceil", "round", "neg", "cumsum", "exp", "log", "sqrt", "abs"]


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
@pytest.mark.parametrize("name", MATH)
def test_math_result_dtypes_of_integers_and_bools_are_pytorchs(torch, device, name, dtype):
    data = np.array([[1, 0, 3], [2, 1, 5]])
    if name in ("log", "log2", "log10", "reciprocal", "rsqrt"):
        data = data + 1  # no zeros: numpy warns where PyTorch silently gives inf
    data = data.astype(dtype)
    ref_input = torch.tensor(data)
    args = (1,) if name == "cumsum" else ()
    if dtype == "bool" and name in ("neg", "floor", "ceil", "round", "abs"):  # PyTorch refuses these too
        with pytest.raises(TypeError):
            getattr(tt, name)(_on(device, data))
        return
    ours = getattr(tt, name)(_on(device, data), *args)
    assert ours.device == device
    _same(ours, getattr(torch, name)(ref_input, *args))


def test_round_with_decimals_and_halves_to_even(torch, device):
    data = np.array([0.5, 1.5, 2.5, -0.5, 1.2345, -7.25], np.float32)
    _same(tt.round(_on(device, data)), torch.round(torch.tensor(data)))
    _same(_on(device, data).round(decimals=2), torch.tensor(data).round(decimals=2))


SORT_DATA = [
    np.array([[3.0, 1.0, 2.0, 1.0, 3.0], [0.0, -1.0, 0.0, 5.0, -1.0]], np.float32),  # ties
    np.array([1.0, math.nan, -2.0, math.inf, 0.5, math.nan], np.float64),  # NaN sorts as the largest
    np.array([[4, 1, 4], [2, 2, 9]], np.int32),
    np.array([True, False, True, False]),
]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("data", SORT_DATA, ids=["ties", "nan", "int32", "bool"])
def test_sort_and_argsort_are_stable_as_pytorchs(torch, device, data, descending):
    result = tt.sort(_on(device, data), dim=-1, descending=descending, stable=True)
    ref = torch.sort(torch.tensor(data), stable=True, dim=-1, descending=descending)
    values, indices = result  # a (values, indices) pair, with the names too
    assert values is result.values and indices is result.indices
    _same(values, ref.values)
    _same(indices, ref.indices)
    _same(_on(device, data).argsort(descending=descending), ref.indices)
    if data.ndim == 2:
        ref0 = torch.sort(torch.tensor(data), stable=True, dim=0, descending=descending)
        _same(_on(device, data).sort(0, descending).indices, ref0.indices)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_values_and_indices_are_pytorchs(torch, device, largest):
    data = np.array([[0.3, -1.0, 2.5, 0.1], [5.0, 4.0, -3.0, 4.5], [1.0, 2.0, 3.0, 4.0]], np.float32)
    for k, dim in ((2, -1), (0, 1), (4, 1), (3, 0)):
        ours = _on(device, data).topk(k, dim=dim, largest=largest)
        ref = torch.tensor(data).topk(k, dim=dim, largest=largest)
        _same(ours.values, ref.values)
        _same(ours.indices, ref.indices)
    ints = np.array([3, 1, 2])
    _same(tt.topk(_on(device, ints), 2).values, torch.topk(torch.tensor(ints), 2).values)


def test_sort_and_topk_of_a_0d_tensor(device):
    x = _on(device, 2.5, np.float32)
    for result in (x.sort(), x.topk(1), x.topk(0)):
        assert result.values.item() == 2.5 and result.indices.item() == 0 and result.indices.numpy().dtype == np.int64


@pytest.mark.parametrize("n", [0, 1, 5, 6, 7])
def test_chunk_and_split_give_pytorchs_pieces(torch, device, n):
    data = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
    ref = torch.tensor(data)
    for chunks in (1, 2, 3, 4):
        pieces = _on(device, data).chunk(chunks)
        assert [p.shape for p in pieces] == [tuple(r.shape) for r in ref.chunk(chunks)]
        for ours, theirs in zip(pieces, ref.chunk(chunks), strict=True):
            _same(ours, theirs)
    for size in (1, 2, 5):
        assert [p.shape for p in tt.split(_on(device, data), size)] == [tuple(r.shape) for r in ref.split(size)]
    sizes = [n // 2, 0, n - n // 2]
    assert [p.shape for p in _on(device, data).split(sizes)] == [tuple(r.shape) for r in ref.split(sizes)]
    assert [p.shape for p in tt.split(_on(device, data.T), 1, dim=1)] == [tuple(r.shape) for r in ref.T.split(1, 1)]


def test_split_pieces_are_views_of_the_input():
    x = tt.zeros(4, 3)
    first, second = x.split(2)
    second.add_(1.0)
    assert x.numpy()[2:].sum() == 6 and x.numpy()[:2].sum() == 0
    (piece,) = x.chunk(1, dim=1)
    piece.fill_(7.0)
    assert (x.numpy() == 7).all()


def test_repeat_shapes_and_values_are_pytorchs(torch, device):
    data = np.arange(6).reshape(2, 3)
    for reps in ((1, 1), (2, 3), (2, 1, 2), ((3, 1),), (0, 2)):
        _same(_on(device, data).repeat(*reps), torch.tensor(data).repeat(*reps))
    _same(_on(device, 5.0, np.float32).repeat(2, 2), torch.tensor(5.0).repeat(2, 2))


def test_cumsum_dtypes_are_pytorchs(torch, device):
    data = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    _same(_on(device, data).cumsum(0), torch.tensor(data).cumsum(0))
    _same(tt.cumsum(_on(device, data), -1, dtype=tt.float64), torch.cumsum(torch.tensor(data), -1, dtype=torch.float64))
    _same(_on(device, [True, True, False]).cumsum(0), torch.tensor([True, True, False]).cumsum(0))
    _same(_on(device, 3.5, np.float32).cumsum(0), torch.tensor(3.5).cumsum(0))
    x = _on(device, [1.0, 2.0, 3.0], np.float32).requires_grad_()
    y = x.cumsum(0, dtype="float64")
    assert y.numpy().dtype == np.float64
    y.sum().backward()
    assert x.grad.numpy().dtype == np.float32 and x.grad.tolist() == [3.0, 2.0, 1.0]


def test_gather_of_a_0d_tensor_and_integer_values(torch, device):
    _same(
        tt.gather(_on(device, 5.0, np.float32), 0, _on(device, 0)), torch.gather(torch.tensor(5.0), 0, torch.tensor(0))
    )
    data, index = np.array([[1, 2, 3], [4, 5, 6]]), np.array([[2, 2], [0, 1]])
    _same(_on(device, data).gather(1, _on(device, index)), torch.tensor(data).gather(1, torch.tensor(index)))


def test_masked_fill_keeps_the_dtype_and_broadcasts(torch, device):
    data = np.arange(6).reshape(2, 3)
    mask = np.array([True, False, True])
    _same(_on(device, data).masked_fill(_on(device, mask), -1), torch.tensor(data).masked_fill(torch.tensor(mask), -1))
    floats = data.astype(np.float32)
    value = _on(device, 2.5, np.float64)  # a 0-d tensor of another dtype: its value, in the tensor's dtype
    _same(
        tt.masked_fill(_on(device, floats), _on(device, mask), value),
        torch.tensor(floats).masked_fill(torch.tensor(mask), 2.5),
    )
    wide = tt.masked_fill(_on(device, floats[0]), _on(device, np.ones((2, 3), bool)), 0.0)
    assert wide.shape == (2, 3)  # the result broadcasts, as PyTorch's


def test_masked_fill_in_place(device):
    x = _on(device, np.zeros((2, 3), np.float32))
    assert x.masked_fill_(_on(device, [False, True, False]), 4.0) is x
    assert x.tolist() == [[0.0, 4.0, 0.0], [0.0, 4.0, 0.0]]
    w = _on(device, [1.0, 2.0], np.float32).requires_grad_()
    with pytest.raises(RuntimeError, match="masked_fill_: a leaf tensor that requires grad"):
        w.masked_fill_(_on(device, [True, False]), 0.0)
    with tt.no_grad():
        w.masked_fill_(_on(device, [True, False]), 0.0)
    assert w.tolist() == [0.0, 2.0]


def test_masked_fill_value_tensor_gets_the_gradient_of_the_filled_places(device):
    x = _on(device, [1.0, 2.0, 3.0], np.float32).requires_grad_()
    v = _on(device, 0.5, np.float32).requires_grad_()
    out = x.masked_fill(_on(device, [True, False, True]), v)
    (out * _on(device, [1.0, 10.0, 100.0], np.float32)).sum().backward()
    assert x.grad.tolist() == [0.0, 10.0, 0.0] and v.grad.item() == 101.0


def test_norm_of_order_zero_has_no_gradient_and_dtype_casts(torch, device):
    x = _on(device, [[0.0, 2.0], [-3.0, 0.0]], np.float32).requires_grad_()
    count = x.norm(p=0)
    assert count.item() == 2.0
    count.backward()
    assert x.grad is None  # as PyTorch: the count of nonzeros has no gradient
    wide = x.norm(dtype=tt.float64)
    assert wide.numpy().dtype == np.float64
    _same(wide.detach(), torch.norm(torch.tensor([[0.0, 2.0], [-3.0, 0.0]]), dtype=torch.float64))
    wide.backward()
    assert x.grad.numpy().dtype == np.float32
    np.testing.assert_allclose(x.grad.numpy(), np.array([[0.0, 2.0], [-3.0, 0.0]]) / math.sqrt(13), rtol=1e-6)


def test_norm_gradient_at_zero_is_zero(torch, device):
    for p in (2, 1, 3, 0.5):
        x = _on(device, [0.0, 0.0], np.float32).requires_grad_()
        x.norm(p=p).backward()
        ref = torch.zeros(2, requires_grad=True)
        torch.norm(ref, p=p).backward()
        _same(x.grad, ref.grad)


def test_mm_and_matmul_take_pytorchs_keywords(device):
    a = _on(device, [[1.0, 2.0]], np.float32)
    b = _on(device, [[3.0], [4.0]], np.float32)
    assert tt.matmul(input=a, other=b).item() == 11.0 and a.matmul(other=b).item() == 11.0
    assert tt.mm(a, b).item() == 11.0 and a.mm(mat2=b).item() == 11.0


PAIRS = [
    ([1.0, 2.0], [1.0, 2.0 + 1e-6]),
    ([1.0, 2.0], [1.0, 2.1]),
    ([1e-9, 0.0], [0.0, 1e-9]),
    ([math.inf, -math.inf], [math.inf, -math.inf]),
    ([math.inf], [-math.inf]),
    ([math.nan, 1.0], [math.nan, 1.0]),
    ([[1.0, 2.0]], [1.0, 2.0]),  # broadcasting
]


@pytest.mark.parametrize("a,b", PAIRS)
def test_allclose_and_equal_are_pytorchs(torch, device, a, b):
    x, y = _on(device, a, np.float32), _on(device, b, np.float32)
    tx, ty = torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32)
    for equal_nan in (False, True):
        assert tt.allclose(x, y, equal_nan=equal_nan) is torch.allclose(tx, ty, equal_nan=equal_nan)
    assert x.allclose(y, rtol=0.1) is torch.allclose(tx, ty, rtol=0.1)
    assert x.allclose(y, atol=1.0) is torch.allclose(tx, ty, atol=1.0)
    assert tt.equal(x, y) is torch.equal(tx, ty) and x.equal(y) is torch.equal(tx, ty)


def test_allclose_and_equal_of_integers_and_bools(torch, device):
    ints = np.array([1, 2, 3])
    assert tt.allclose(_on(device, ints), _on(device, ints + 0)) is True
    assert tt.allclose(_on(device, [True]), _on(device, [False])) is False
    # equal promotes as PyTorch does: an int64 tensor equals a float tensor of its values
    assert tt.equal(_on(device, ints), _on(device, ints, np.float32)) is torch.equal(
        torch.tensor(ints), torch.tensor(ints, dtype=torch.float32)
    )
    assert tt.equal(_on(device, [True, False]), _on(device, [1, 0])) is True


def test_is_tensor_nelement_and_type(device):
    x = _on(device, np.zeros((2, 3), np.float32))
    assert tt.is_tensor(x) and tt.is_tensor(tt.nn.Parameter(tt.zeros(1)))
    assert not tt.is_tensor(np.zeros(2)) and not tt.is_tensor([1.0])
    assert x.nelement() == 6 == x.numel()
    prefix = {"cpu": "tinytensor.", "strict": "tinytensor.strict.", "cuda": "tinytensor.cuda."}[device.split(":")[0]]
    names = {
        "float16": "Half",
        "float32": "Float",
        "float64": "Double",
        "int32": "Int",
        "int64": "Long",
        "bool": "Bool",
    }
    if device.startswith("strict"):
        del names["float16"]  # array_api_strict has no float16
    for dtype, name in names.items():
        assert x.to(dtype).type() == f"{prefix}{name}Tensor"
    assert x.type(tt.float64).numpy().dtype == np.float64 and x.type("float64").device == device
    assert x.type("torch.LongTensor").type() == f"{prefix}LongTensor"
    assert x.type("tinytensor.IntTensor").numpy().dtype == np.int32
    assert x.type(tt.float32) is x  # already that dtype: the tensor itself, as PyTorch


def test_type_cast_is_differentiable():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    (x.type("torch.DoubleTensor") * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0] and x.grad.dtype == np.float32


def test_one_hot_is_pytorchs(torch, device):
    for data, n in (([0, 2, 1], -1), ([[0, 3], [1, 1]], 5), (2, 3), ([], 4)):
        ours = F.one_hot(_on(device, data, np.int64), n)
        assert ours.device == device
        _same(ours, torch.nn.functional.one_hot(torch.tensor(data, dtype=torch.int64), n))
    assert F.one_hot(tensor=_on(device, [1], np.int64), num_classes=2).tolist() == [[0, 1]]


def _i(*values):
    return tt.tensor(list(values))


def _f(*shape):
    return tt.zeros(*shape)


BAD = [
    (
        "gather-int32-index",
        lambda: _f(2, 3).gather(1, _i(0).int().reshape(1, 1)),
        TypeError,
        r"gather\(\): index must be an int64",
    ),
    (
        "gather-negative",
        lambda: _f(2, 3).gather(1, _i(-1).reshape(1, 1)),
        IndexError,
        r"index -1 is out of range for dim 1",
    ),
    ("gather-too-large", lambda: _f(2, 3).gather(1, _i(3).reshape(1, 1)), IndexError, r"index 3 is out of range"),
    ("gather-ndim", lambda: _f(2, 3).gather(1, _i(0, 1)), tt.ShapeError, r"gather\(\): index must have as many axes"),
    (
        "gather-larger",
        lambda: _f(2, 3).gather(1, tt.zeros(3, 1, dtype="int64")),
        tt.ShapeError,
        r"larger than the input",
    ),
    (
        "gather-dim",
        lambda: _f(2, 3).gather(2, tt.zeros(2, 1, dtype="int64")),
        IndexError,
        r"gather\(\): dim 2 is out of range",
    ),
    ("gather-dim-float", lambda: _f(2, 3).gather(1.0, tt.zeros(2, 1, dtype="int64")), TypeError, r"dim must be an int"),
    ("gather-list", lambda: _f(2, 3).gather(1, [[0]]), TypeError, r"gather\(\): argument 'index' must be a Tensor"),
    (
        "masked_fill-int-mask",
        lambda: _f(3).masked_fill(_i(1, 0, 1), 0.0),
        TypeError,
        r"masked_fill\(\): mask must be a bool",
    ),
    (
        "masked_fill-shape",
        lambda: _f(3).masked_fill(tt.ones(2, dtype="bool"), 0.0),
        tt.ShapeError,
        r"cannot be broadcast",
    ),
    (
        "masked_fill-value-1d",
        lambda: _f(3).masked_fill(tt.ones(3, dtype="bool"), _f(3)),
        tt.ShapeError,
        r"value must be a number or a 0-d",
    ),
    (
        "masked_fill-float-into-int",
        lambda: _i(1, 2).masked_fill(tt.ones(2, dtype="bool"), 0.5),
        TypeError,
        r"value 0.5 cannot be stored.*int64",
    ),
    (
        "masked_fill-int-into-bool",
        lambda: tt.ones(2, dtype="bool").masked_fill(tt.ones(2, dtype="bool"), 2),
        TypeError,
        r"value 2 cannot be stored",
    ),
    ("masked_fill-str", lambda: _f(2).masked_fill(tt.ones(2, dtype="bool"), "x"), TypeError, r"value must be a number"),
    (
        "masked_fill_-grows",
        lambda: _f(3).masked_fill_(tt.ones(2, 3, dtype="bool"), 1.0),
        tt.ShapeError,
        r"masked_fill_\(\): mask of shape \(2, 3\)",
    ),
    ("chunk-zero", lambda: _f(4).chunk(0), ValueError, r"chunk: chunks must be an int >= 1, got 0"),
    ("chunk-0d", lambda: _f().chunk(2), tt.ShapeError, r"chunk\(\): needs a tensor with at least one axis"),
    ("split-sum", lambda: _f(5).split([1, 3]), ValueError, r"split\(\): split sizes \[1, 3\] must sum exactly to 5"),
    ("split-zero", lambda: _f(5).split(0), ValueError, r"split size 0 is only valid for a dimension of length 0"),
    ("split-negative", lambda: tt.split(_f(5), -1), ValueError, r"split: split_size_or_sections must be an int >= 0"),
    ("split-float", lambda: tt.split(_f(5), 2.5), TypeError, r"split_size_or_sections must be an int or a list"),
    (
        "repeat-too-few",
        lambda: _f(2, 3).repeat(2),
        tt.ShapeError,
        r"repeat\(\): 1 repeat counts for a tensor with 2 axes",
    ),
    ("repeat-negative", lambda: _f(2).repeat(-1), ValueError, r"repeat: repeats must be an int >= 0, got -1"),
    ("cumsum-no-dim", lambda: _f(2).cumsum(), TypeError, r"dim"),
    ("cumsum-dim", lambda: _f(2).cumsum(1), IndexError, r"cumsum\(\): dim 1 is out of range"),
    ("cumsum-dtype", lambda: _f(2).cumsum(0, dtype="complex64"), TypeError, r"cumsum\(\): unknown dtype"),
    ("sort-descending-str", lambda: _f(2).sort(descending="yes"), TypeError, r"sort\(\): descending must be a bool"),
    ("topk-k-large", lambda: _f(3).topk(4), IndexError, r"topk\(\): k=4 is out of range for dim -1 of size 3"),
    ("topk-k-negative", lambda: _f(3).topk(-1), IndexError, r"k=-1 is out of range"),
    ("topk-k-float", lambda: _f(3).topk(1.0), TypeError, r"topk\(\): k must be an int"),
    ("norm-int", lambda: _i(1, 2).norm(), TypeError, r"norm\(\): needs a floating-point tensor"),
    ("norm-nuc", lambda: _f(2, 2).norm(p="nuc"), ValueError, r"nuclear norm .* not supported"),
    ("norm-unknown", lambda: _f(2).norm(p="abc"), ValueError, r"norm\(\): unknown order p='abc'"),
    ("norm-negative", lambda: _f(2).norm(p=-1), ValueError, r"norm\(\): p=-1.0 is not supported"),
    ("norm-bool-p", lambda: _f(2).norm(p=True), TypeError, r"norm\(\): p must be a number"),
    ("norm-fro-3-dims", lambda: _f(2, 2, 2).norm(p="fro", dim=(0, 1, 2)), ValueError, r"p='fro' takes at most 2 dims"),
    ("norm-inf-empty", lambda: _f(0, 3).norm(p=math.inf), tt.ShapeError, r"norm\(\): the inf norm of an empty tensor"),
    ("norm-dim", lambda: _f(2).norm(dim=1), tt.ShapeError, r"axis 1 is out of range"),
    ("norm-int-dtype", lambda: _f(2).norm(dtype="int64"), TypeError, r"norm\(\): dtype must be a floating-point dtype"),
    (
        "mm-1d",
        lambda: tt.mm(_f(3), _f(3, 2)),
        tt.ShapeError,
        r"mm\(\): self must be a matrix \(2-D\), got shape \(3,\)",
    ),
    ("mm-3d", lambda: _f(2, 3).mm(_f(2, 3, 2)), tt.ShapeError, r"mm\(\): mat2 must be a matrix"),
    (
        "mm-shapes",
        lambda: _f(2, 3).mm(_f(4, 5)),
        tt.ShapeError,
        r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)",
    ),
    ("mm-number", lambda: _f(2, 3).mm(2.0), TypeError, r"mm\(\): argument 'mat2' must be a Tensor"),
    ("allclose-number", lambda: tt.allclose(_f(2), 1.0), TypeError, r"allclose\(\): argument 'other' must be a Tensor"),
    ("allclose-dtypes", lambda: tt.allclose(_f(2), _f(2).double()), TypeError, r"allclose\(\): .*different dtypes"),
    ("allclose-shapes", lambda: tt.allclose(_f(2), _f(3)), tt.ShapeError, r"allclose\(\): shapes \(2,\) and \(3,\)"),
    ("equal-number", lambda: tt.equal(_f(2), 0), TypeError, r"equal\(\): argument 'other' must be a Tensor"),
    (
        "type-unknown",
        lambda: _f(2).type("torch.ComplexTensor"),
        ValueError,
        r"type\(\): invalid type 'torch.ComplexTensor'",
    ),
    ("type-device", lambda: _f(2).type("torch.cuda.FloatTensor"), ValueError, r"sets the dtype only.*\.to\(\)"),
    ("type-dtype", lambda: _f(2).type("complex64"), TypeError, r"type\(\): unknown dtype 'complex64'"),
    (
        "one_hot-negative",
        lambda: F.one_hot(_i(0, -1), 3),
        ValueError,
        r"one_hot\(\): class values must be non-negative",
    ),
    (
        "one_hot-too-large",
        lambda: F.one_hot(_i(0, 3), 3),
        ValueError,
        r"class values must be smaller than num_classes \(3\)",
    ),
    (
        "one_hot-int32",
        lambda: F.one_hot(_i(0, 1).int(), 3),
        TypeError,
        r"one_hot\(\): tensor must hold int64 class indices",
    ),
    ("one_hot-float", lambda: F.one_hot(_f(2), 3), TypeError, r"int64 class indices, got dtype float32"),
    (
        "one_hot-empty",
        lambda: F.one_hot(tt.zeros(0, dtype="int64")),
        ValueError,
        r"cannot infer num_classes from an empty",
    ),
    ("one_hot-num-classes", lambda: F.one_hot(_i(0), -2), ValueError, r"one_hot: num_classes must be an int >= -1"),
]


@pytest.mark.parametrize("call,error,pattern", [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_bad_input_is_named(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_ops_refuse_tensors_of_another_device():
    pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    x = tt.zeros(2, 3)
    there = "strict:device1"
    with pytest.raises(tt.DeviceError, match="gather.*different devices"):
        x.gather(1, tt.zeros(2, 1, dtype="int64", device=there))
    with pytest.raises(tt.DeviceError, match="masked_fill.*different devices"):
        x.masked_fill(tt.ones(3, dtype="bool", device=there), 0.0)
    with pytest.raises(tt.DeviceError, match="equal.*different devices"):
        tt.equal(x, x.to(there))


@pytest.mark.parametrize(
    "values,weights,minlength",
    [([1, 1, 3], None, 0), ([1, 1, 3], [0.5, 1.0, 2.0], 6), ([], None, 2), ([0, 4, 4, 4], [1.0, 2.0, 3.0, 4.0], 0)],
)
def test_bincount_matches_torch(torch, device, values, weights, minlength):
    x = tt.tensor(values, dtype="int64", device=device)
    w = None if weights is None else tt.tensor(weights, device=device)
    got = tt.bincount(x, weights=w, minlength=minlength)
    want = torch.bincount(
        torch.tensor(values, dtype=torch.int64),
        weights=None if weights is None else torch.tensor(weights),
        minlength=minlength,
    )
    assert got.device == x.device and str(numpy_dtype(got.dtype)) == str(want.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_bincount_refuses_what_torch_refuses():
    with pytest.raises(ValueError, match="non-negative"):
        tt.bincount(tt.tensor([-1]))
    with pytest.raises(TypeError, match="1-D integer tensor"):
        tt.bincount(tt.tensor([1.5]))
    with pytest.raises(TypeError, match="1-D integer tensor"):
        tt.bincount(tt.tensor([[1]]))
