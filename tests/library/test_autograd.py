"""The autograd engine: accumulation, broadcasting, graph freeing, grad mode, dtype rules."""

import gc
import sys
import warnings
import weakref

import numpy as np
import pytest

import tinytensor as tt


def test_reused_tensor_accumulates_gradient():
    x = tt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x + x * 3.0 + x  # x used four times
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 2 * x.numpy() + 4)


def test_gradients_accumulate_across_backward_calls_until_zeroed():
    x = tt.tensor([1.0, -2.0], requires_grad=True)
    (x * 2.0).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad, [5.0, 5.0])


def test_diamond_graph_and_deep_chain_without_recursion():
    x = tt.tensor(0.5, requires_grad=True)
    y = x
    for _ in range(5000):  # deeper than Python's recursion limit
        y = y * 1.0001
    y.backward()
    np.testing.assert_allclose(x.grad, 1.0001**5000, rtol=1e-4)


def test_broadcast_gradient_sums_back_to_input_shape_across_ranks():
    a = tt.tensor(np.ones((2, 3, 4)), requires_grad=True)
    b = tt.tensor(np.ones((3, 1)), requires_grad=True)
    c = tt.tensor(np.ones(()), requires_grad=True)
    (a * b + c).sum().backward()
    assert b.grad.shape == (3, 1) and c.grad.shape == ()
    np.testing.assert_allclose(b.grad, np.full((3, 1), 8.0))
    np.testing.assert_allclose(c.grad, 24.0)


def test_graph_is_freed_after_backward():
    x = tt.tensor(np.ones(1000), requires_grad=True)
    y = x.exp()
    y_data = weakref.ref(y._data)
    z = (y * 2.0).sum()
    del y
    gc.collect()
    assert y_data() is not None  # the graph keeps the intermediate alive for backward
    z.backward()
    gc.collect()
    assert y_data() is None  # ... and lets it go afterwards
    assert z._ctx is not None and z._ctx[0] == "freed"


def test_second_backward_through_freed_graph_raises_and_retain_graph_allows_it():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad, 4 * x.numpy())
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_shared_intermediate_freed_by_first_backward_raises_not_silently_drops():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    h.sum().backward()
    with pytest.raises(RuntimeError, match="freed"):
        (h * 3.0).sum().backward()


def test_non_scalar_backward_takes_ones_with_a_warning_once_and_checks_a_given_grad(monkeypatch):
    """1.x seeded a tensor of several elements with ones; PyTorch raises, so the first such call
    warns (FutureWarning), naming the shape and the portable spelling, and later ones do not."""
    # the module, not tt.tensor the function, which shadows it as an attribute of the package
    monkeypatch.setattr(sys.modules["tinytensor.tensor"], "_WARNED_IMPLICIT_ONES", [False])
    x = tt.tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.warns(FutureWarning, match=r"shape \(2, 3\).*PyTorch raises.*\.sum\(\)\.backward\(\)"):
        (x * 2.0).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x * 3.0).backward()  # once per process
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 5.0))
    with pytest.raises(tt.ShapeError, match=r"\(3,\).*\(2, 3\)"):
        (x * 2.0).backward(np.ones(3))


def test_backward_without_graph_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        tt.tensor([1.0]).sum().backward()


def test_no_grad_records_nothing_and_restores():
    x = tt.tensor([1.0], requires_grad=True)
    with tt.no_grad():
        y = x * 2.0
        with tt.enable_grad():
            z = x * 2.0
    assert not y.requires_grad and y.is_leaf
    assert z.requires_grad
    assert tt.is_grad_enabled()

    @tt.no_grad()
    def f(t):
        return t * 3.0

    assert not f(x).requires_grad


def test_leaf_grads_never_alias_each_other():
    a = tt.tensor([1.0, 2.0], requires_grad=True)
    b = tt.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()
    assert a.grad is not b.grad
    a.grad[0] = 100.0
    assert b.grad[0] == 1.0


def test_retain_grad_on_non_leaf():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    h = (x * 3.0).retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad, 2 * h.numpy())


def test_detach_cuts_the_graph():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = (x.detach() * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad, x.numpy())


PYTHON_DATA_DTYPES = [  # PyTorch's rules for Python data
    ([1, 2], np.int64),
    (3, np.int64),
    (2.5, np.float32),
    ([1, 2.5], np.float32),  # ints mixed with floats: the default float
    ([[True, False]], np.bool_),
    ([True, 2], np.int64),
    ([], np.float32),
]


@pytest.mark.parametrize("data,dtype", PYTHON_DATA_DTYPES, ids=[repr(d) for d, _ in PYTHON_DATA_DTYPES])
def test_python_data_gets_pytorchs_dtype(data, dtype):
    """tt.tensor infers as torch.tensor; tt.Tensor, the class constructor, makes float32 as
    torch.Tensor (and 1.x's Tensor) does."""
    assert tt.tensor(data).dtype == dtype
    assert tt.Tensor(data).dtype == np.float32
    torch = pytest.importorskip("torch", reason="PyTorch (the test oracle) is installed only on Python 3.11")
    assert str(torch.tensor(data).dtype).removeprefix("torch.") == np.dtype(dtype).name
    if isinstance(data, list):  # torch.Tensor(n) of a number n is an uninitialised tensor of n elements
        assert torch.Tensor(data).dtype == torch.float32


def test_integer_tensors_with_floats_give_the_default_float():
    i = tt.tensor([1, 2, 3])
    for y in (i * 0.5, i + 1.5, i / 2, 2 / i, 1.0 - i):
        assert y.dtype == np.float32, y
    assert (i * 2).dtype == np.int64 and (i // 1 if hasattr(i, "__floordiv__") else i).dtype == np.int64


def test_arrays_keep_their_dtype():
    assert tt.tensor(np.zeros(2)).dtype == np.float64
    assert tt.tensor(np.zeros(2, np.int64)).dtype == np.int64
    x = tt.tensor([1.0, 2.0])
    for y in (x * 2.5, x + np.float64(1.0), x / 3, x**2.0, 1.0 - x, x.mean(), x.exp(), x.var()):
        assert y.dtype == np.float32, y


def test_gradient_dtype_follows_the_leaf_under_mixed_precision():
    a = tt.tensor([1.0, 2.0], requires_grad=True)  # float32
    b = tt.tensor(np.array([3.0, 4.0]), requires_grad=True)  # float64
    out = (a * b).sum()
    assert out.dtype == np.float64  # promotion as in PyTorch
    out.backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64


def test_requires_grad_only_for_floats():
    with pytest.raises(TypeError, match="floating-point"):
        tt.tensor(np.arange(3), requires_grad=True)


def test_gather_backward_adds_repeated_indices():
    w = tt.tensor(np.zeros((4, 2)), requires_grad=True)
    idx = np.array([1, 1, 3, 1])
    w[idx].sum().backward()
    np.testing.assert_allclose(w.grad[:, 0], [0.0, 3.0, 0.0, 1.0])


# ---------------------------------------------------------------------- .data and .grad are Tensors
def test_data_is_a_detached_tensor_sharing_storage(device):
    w = tt.tensor([1.0, 2.0], requires_grad=True, device=device)
    d = w.data
    assert isinstance(d, tt.Tensor) and not d.requires_grad and d.is_leaf and d.device == w.device
    d.add_(1.0)  # allowed while recording: .data is cut from the graph
    d[0] = 7.0
    np.testing.assert_array_equal(w.numpy(), [7.0, 3.0])
    w.data = tt.tensor([5.0, 6.0], device=device)
    assert w.requires_grad and w.is_leaf
    np.testing.assert_array_equal(w.numpy(), [5.0, 6.0])
    with pytest.raises(TypeError, match="data must be set to a Tensor"):
        w.data = [1.0, 2.0]


def test_a_change_through_data_is_an_in_place_change_for_backward():
    w = tt.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    w.data.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.backward()


def test_grad_is_a_tensor_on_the_parameters_device_that_accumulates(device, torch):
    w = tt.tensor([1.0, 2.0], requires_grad=True, device=device)
    (w * 3).sum().backward()
    g = w.grad
    assert isinstance(g, tt.Tensor) and g.device == w.device and g.dtype == w.dtype and not g.requires_grad
    assert w.grad is g  # the same Tensor each time it is read
    (w * 2).sum().backward()
    assert w.grad is g  # later gradients accumulate into it
    np.testing.assert_array_equal(g.numpy(), [5.0, 5.0])
    w.grad.zero_()
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])
    tw = torch.tensor([1.0, 2.0], requires_grad=True)
    (tw * 3).sum().backward()
    tg = tw.grad
    (tw * 2).sum().backward()
    assert tw.grad is tg  # PyTorch's behaviour, matched above


def test_assigned_grad_must_be_a_tensor_or_none():
    w = tt.tensor([1.0, 2.0], requires_grad=True)
    w.grad = tt.tensor([0.5, 0.5])
    assert isinstance(w.grad, tt.Tensor)
    w.grad = None
    assert w.grad is None
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None, got list"):
        w.grad = [1.0, 2.0]


@pytest.mark.parametrize("kwargs", [{}, {"weight_decay": 0.1, "nesterov": True}, {"dampening": 0.1}])
def test_sgd_with_momentum_steps_a_0d_parameter_as_pytorch(torch, kwargs):
    results = []
    for lib in (tt, torch):
        w = lib.nn.Parameter(lib.tensor(1.0))
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9, **kwargs)
        for _ in range(3):
            opt.zero_grad()
            (w * w).backward()
            opt.step()
        results.append(float(w.item()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_zero_dim_leaves_fed_by_a_broadcast_get_array_gradients_of_their_dtype():
    # numpy sums a broadcast gradient down to a scalar, not a 0-d array
    a = tt.tensor(0.0, requires_grad=True)  # float32, added to float64 values
    b = tt.tensor(np.float64(1.0), requires_grad=True)
    c = tt.tensor(np.float64(1.0), requires_grad=True)
    ((a + tt.tensor(np.ones(3))) + (b + c)).sum().backward()
    assert a.grad.dtype == np.float32 and a.grad.tolist() == 3.0
    assert b.grad.tolist() == c.grad.tolist() == 3.0 and b.grad._data is not c.grad._data


def test_a_0d_gradient_accumulates_as_an_array_that_changes_in_place():
    w = tt.tensor(1.0, requires_grad=True)
    for _ in range(2):
        (w * 3).backward()
        w.grad  # noqa: B018 - reading .grad makes the Tensor the next backward accumulates into
    assert w.grad.item() == 6.0
    w.grad.zero_()
    assert w.grad.item() == 0.0
