"""PyTorch's type promotion (bool < int < float, 0-d tensors like numbers, float32 default) and the
augmented assignments (``+= -= *= /=``) that change a tensor in place, checked against PyTorch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn

DTYPES = ["bool", "int32", "int64", "float16", "float32", "float64"]
SHAPES = {"vector": (3,), "0-d": ()}


def _values(dtype, shape):
    data = np.array([1, 2, 3][: int(np.prod(shape))]).reshape(shape)
    return data.astype(dtype) if dtype != "bool" else data > 0


@pytest.mark.parametrize("op", ["add", "mul", "sub", "div", "maximum"])
@pytest.mark.parametrize("left,right", list(itertools.product(DTYPES, DTYPES)))
@pytest.mark.parametrize("shapes", [("vector", "vector"), ("vector", "0-d"), ("0-d", "vector")])
def test_tensor_tensor_result_dtype_is_pytorchs(torch, op, left, right, shapes):
    if op == "sub" and "bool" in (left, right):
        pytest.skip("PyTorch refuses - on bool tensors")
    xs = [_values(d, SHAPES[s]) for d, s in zip((left, right), shapes, strict=True)]
    want = getattr(torch, op)(*(torch.from_numpy(np.asarray(x)) for x in xs))
    got = (
        getattr(tt, op)(*(tt.tensor(x) for x in xs))
        if op == "maximum"
        else getattr(tt.tensor(xs[0]), op)(tt.tensor(xs[1]))
    )
    assert str(got.dtype) == str(want.dtype).removeprefix("torch."), (left, right, shapes)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy().astype(np.float64), rtol=1e-3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", [True, 2, 2.5])
def test_tensor_number_result_dtype_is_pytorchs(torch, dtype, scalar):
    x = _values(dtype, (3,))
    for fn in (lambda a: a + scalar, lambda a: scalar * a, lambda a: a / scalar):
        want = fn(torch.from_numpy(x))
        got = fn(tt.tensor(x))
        assert str(got.dtype) == str(want.dtype).removeprefix("torch."), (dtype, scalar)


def test_mixed_gradients_arrive_in_each_inputs_dtype():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    s = tt.tensor(3.0, dtype="float64", requires_grad=True)
    y = x * s
    assert y.dtype == np.float32  # the 0-d float64 acts like a number
    y.sum().backward()
    assert x.grad.dtype == np.float32 and s.grad.dtype == np.float64
    np.testing.assert_allclose(s.grad.numpy(), 3.0)


def test_linear_and_matmul_refuse_mixed_dtypes_as_pytorch_does(torch):
    layer = nn.Linear(2, 3)
    with pytest.raises(RuntimeError, match="linear: weight has dtype float32 but input has dtype int64"):
        layer(tt.tensor([[1, 2]]))
    with pytest.raises(RuntimeError):
        torch.nn.Linear(2, 3)(torch.tensor([[1, 2]]))
    with pytest.raises(RuntimeError, match="matmul: input has dtype float64 but other has dtype float32"):
        tt.ones(2, 2, dtype="float64") @ tt.ones(2, 2)
    assert layer(tt.tensor([[1, 2]]).float()).dtype == np.float32


def test_where_promotes_like_pytorch(torch):
    cond = np.array([True, False])
    got = tt.where(tt.tensor(cond), tt.tensor([1, 2]), tt.tensor([1.5, 2.5]))
    want = torch.where(torch.from_numpy(cond), torch.tensor([1, 2]), torch.tensor([1.5, 2.5]))
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")


# ---------------------------------------------------------------------- augmented assignment
def test_augmented_assignment_changes_the_tensor_itself(device):
    x = tt.tensor([1.0, 2.0, 3.0], device=device)
    alias = x
    x += 1
    x -= tt.tensor([1.0, 1.0, 1.0], device=device)
    x *= 2
    x /= 4
    assert x is alias
    np.testing.assert_allclose(alias.numpy(), [0.5, 1.0, 1.5])


def test_a_parameter_updated_with_minus_equals_under_no_grad_trains(torch):
    """The loop of PyTorch's polynomial-fit tutorial: without an in-place -= it trains nothing."""
    init = np.random.default_rng(0).standard_normal(4)
    xs = np.linspace(-1, 1, 200).astype(np.float32)
    ys = (0.5 + 2 * xs - xs**3).astype(np.float32)
    results = []
    for lib in (tt, torch):
        x, y = lib.tensor(xs), lib.tensor(ys)
        coeffs = [lib.tensor(float(v), requires_grad=True) for v in init]
        for _ in range(1000):
            pred = coeffs[0] + coeffs[1] * x + coeffs[2] * x**2 + coeffs[3] * x**3
            loss = ((pred - y) ** 2).sum()
            loss.backward()
            with lib.no_grad():
                for c in coeffs:
                    c -= 2e-3 * c.grad
                    c.grad = None
        results.append(loss.item())
    assert results[0] < 0.1
    np.testing.assert_allclose(results[0], results[1], rtol=1e-2, atol=1e-5)


def test_augmented_assignment_on_a_leaf_that_requires_grad_is_refused_while_recording():
    w = tt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\+=: a leaf tensor that requires grad cannot be changed in place"):
        w += 1
    acc = tt.zeros(3)
    with pytest.raises(RuntimeError, match=r"\*=: the operand requires grad"):
        acc *= w
    with tt.no_grad():
        w -= 0.5
    np.testing.assert_array_equal(w.numpy(), [0.5, 0.5, 0.5])
    assert w.requires_grad and w.is_leaf


def test_augmented_assignment_bumps_the_version_so_stale_graphs_raise():
    w = tt.ones(3, requires_grad=True)
    y = (w * w).sum()
    with tt.no_grad():
        w += 1
    with pytest.raises(RuntimeError, match="modified in place after the forward pass"):
        y.backward()


def test_augmented_assignment_through_a_view_changes_the_base(device):
    base = tt.zeros(2, 3, device=device)
    row = base[1]
    row += 5
    col = base[:, 0]
    col *= 2
    np.testing.assert_array_equal(base.numpy(), [[0, 0, 0], [10, 5, 5]])


def test_augmented_assignment_keeps_the_dtype_or_refuses(torch):
    i = tt.tensor([1, 2])
    with pytest.raises(TypeError, match=r"\+=: a floating-point result cannot be stored in a tensor of dtype int64"):
        i += 1.5
    with pytest.raises(RuntimeError, match="can't be cast"):
        t = torch.tensor([1, 2])
        t += 1.5
    f = tt.tensor([1.0, 2.0])
    f += tt.tensor([1.0, 1.0], dtype="float64")
    assert f.dtype == np.float32
    with pytest.raises(TypeError, match="/=: true division cannot be stored"):
        i /= 2
