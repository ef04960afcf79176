"""Tensor properties, creation functions, conversions, DLPack and the errors that name problems."""

import numpy as np
import pytest

import tinytensor as tt


def test_properties():
    x = tt.Tensor(np.zeros((2, 3), np.float32), requires_grad=True)
    assert x.shape == (2, 3) and x.ndim == 2 and x.dtype == np.float32
    assert x.device == "cpu" and x.requires_grad and x.grad is None and x.is_leaf
    assert isinstance(x.data, np.ndarray) and x.numel() == 6 and len(x) == 2
    assert x.size() == (2, 3) and x.size(1) == 3 and x.size(-2) == 2 and x.dim() == 2


def test_constructor_copies_its_input():
    arr = np.ones(3, np.float32)
    t = tt.Tensor(arr)
    arr[0] = 5
    assert t.numpy()[0] == 1
    shared = tt.from_numpy(arr)
    arr[1] = 7
    assert shared.numpy()[1] == 7


def test_creation_functions():
    tt.manual_seed(0)
    assert tt.zeros(2, 3).shape == (2, 3) and tt.zeros((2, 3)).numpy().sum() == 0
    assert tt.ones(4, dtype="float64").dtype == np.float64
    np.testing.assert_array_equal(tt.full((2,), 7.0).numpy(), [7.0, 7.0])
    assert tt.arange(5).dtype == np.int64 and tt.arange(0.0, 1.0, 0.25).dtype == np.float32
    r = tt.randn(1000)
    assert r.dtype == np.float32 and abs(float(r.mean().item())) < 0.15 and 0.8 < float(r.var().item()) < 1.2
    u = tt.rand(1000)
    assert 0.0 <= float(u.min().item()) and float(u.max().item()) < 1.0
    like = tt.Tensor(np.zeros((2, 2)))
    for made in (
        tt.zeros_like(like),
        tt.ones_like(like),
        tt.full_like(like, 2.0),
        tt.randn_like(like),
        tt.rand_like(like),
    ):
        assert made.shape == (2, 2) and made.dtype == np.float64
    assert tt.zeros(2, requires_grad=True).requires_grad


def test_manual_seed_repeats_values():
    tt.manual_seed(3)
    a = tt.randn(5).numpy()
    tt.manual_seed(3)
    np.testing.assert_array_equal(a, tt.randn(5).numpy())


def test_to_dtype_is_differentiable_and_numpy_item_tolist():
    x = tt.Tensor([1.0, 2.0], requires_grad=True)
    y = x.to("float64")
    assert y.dtype == np.float64
    (y * y).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad, [2.0, 4.0])
    assert tt.Tensor([[3.5]]).item() == 3.5
    assert tt.Tensor([1.0, 2.0]).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="one-element"):
        tt.Tensor([1.0, 2.0]).item()


def test_to_same_device_returns_self_and_cpu_is_a_noop():
    x = tt.Tensor([1.0])
    assert x.to("cpu") is x and x.cpu() is x


def test_unknown_device_string_is_named():
    with pytest.raises(tt.DeviceError, match="unknown device 'tpu'"):
        tt.Tensor([1.0]).to("tpu")
    with pytest.raises(tt.DeviceError, match="unknown device 'cuda:x'"):
        tt.Tensor([1.0]).to("cuda:x")


def test_cuda_unavailable_error_says_why(monkeypatch):
    from tinytensor.cuda_status import cuda_status

    status = cuda_status()
    if status.device_usable:
        pytest.skip(reason="a usable CUDA device exists here; the error path cannot be exercised")
    with pytest.raises(tt.CudaUnavailableError) as info:
        tt.Tensor([1.0]).to("cuda")
    message = str(info.value)
    assert "cannot be used" in message and "fix:" in message
    for problem in status.problems:  # every problem is named, the extension too
        assert problem.what in message
    assert tt.HAS_CUDA is False
    assert tt.cuda_unavailable_reason()


def test_mixing_devices_names_both():
    pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    a = tt.Tensor([1.0, 2.0])
    b = tt.Tensor([1.0, 2.0], device="strict:device1")
    with pytest.raises(tt.DeviceError, match="cpu.*strict:device1|strict:device1.*cpu"):
        a + b
    c = tt.Tensor([1.0, 2.0], device="strict:device2")
    with pytest.raises(tt.DeviceError, match="device1.*device2"):
        b * c
    with pytest.raises(tt.DeviceError):
        a @ b


def test_shape_mismatch_messages_carry_both_shapes():
    a = tt.Tensor(np.ones((2, 3)))
    with pytest.raises(tt.ShapeError, match=r"\(2, 3\) and \(4,\)"):
        a + tt.Tensor(np.ones(4))
    with pytest.raises(tt.ShapeError, match=r"\(2, 3\) and \(4, 5\).*\(3\).*\(4\)"):
        a @ tt.Tensor(np.ones((4, 5)))
    with pytest.raises(tt.ShapeError, match=r"\(2, 3\) into \(4,\)"):
        a.reshape(4)
    with pytest.raises(tt.ShapeError, match="axis 2 is out of range"):
        a.sum(axis=2)


def test_numpy_arrays_on_the_left_give_tensors():
    x = tt.Tensor([1.0, 2.0], requires_grad=True)
    y = np.array([2.0, 3.0], np.float32) * x
    assert isinstance(y, tt.Tensor)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, [2.0, 3.0])


def test_dlpack_roundtrip_with_torch():
    torch = pytest.importorskip("torch", reason="PyTorch (DLPack peer) is installed only on Python 3.11")
    x = tt.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    t = torch.from_dlpack(x)
    assert tuple(t.shape) == (2, 3)
    t[0, 0] = 42.0  # zero-copy: the same memory
    assert x.numpy()[0, 0] == 42.0
    back = tt.from_dlpack(torch.arange(4, dtype=torch.float64))
    assert back.dtype == np.float64 and back.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_from_dlpack_rejects_non_producers():
    with pytest.raises(TypeError, match="DLPack"):
        tt.from_dlpack([1, 2, 3])


def test_setitem_refused_inside_a_graph():
    x = tt.Tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place"):
        x[0] = 3.0
    with tt.no_grad():
        x[0] = 3.0
    assert x.tolist() == [3.0, 2.0]


def test_repr_mentions_device_dtype_and_grad():
    text = repr(tt.Tensor(np.zeros(2), requires_grad=True))
    assert "dtype=float64" in text and "requires_grad=True" in text


def test_quickstart_from_the_readme():
    x = tt.Tensor([[1.0, 2.0]])
    w = tt.Tensor([[1.0], [1.0]])
    if tt.cuda_status().device_usable:
        x, w = x.to("cuda"), w.to("cuda")
        assert (x @ w).item() == 3.0
    else:
        with pytest.raises(tt.CudaUnavailableError, match="cannot be used"):
            x.to("cuda")
        assert (x @ w).item() == 3.0


def test_class_targets_out_of_range_are_named():
    from tinytensor.nn import functional as F

    logits = tt.Tensor(np.zeros((3, 4)))
    for bad in ([0, 4, 1], [0, -1, 1]):
        with pytest.raises(IndexError, match=f"index {bad[1]} is out of range for cross_entropy: classes are 0..3"):
            F.cross_entropy(logits, np.array(bad))
    with pytest.raises(TypeError, match="integer class indices"):
        F.cross_entropy(logits, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(tt.ShapeError, match=r"\(3, 4\) and \(2,\)"):
        F.nll_loss(logits, np.array([0, 1]))


def test_type_checker_declarations_match_the_installed_ops():
    """Tensor's `if TYPE_CHECKING:` block spells out for type checkers (py.typed is shipped) what
    ops.install attaches at import: the same names, bound to the same functions."""
    import ast
    import inspect
    import sys

    from tinytensor import ops

    class Blank:
        pass

    before = set(vars(Blank))  # a class's own entries differ by Python version (3.13 adds two)
    ops.install(Blank)
    installed = set(vars(Blank)) - before

    tree = ast.parse(inspect.getsource(sys.modules[tt.Tensor.__module__]))  # tt.tensor is the function
    (cls,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Tensor"]
    (block,) = [node for node in cls.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    declared = {}
    for node in block.body:
        if isinstance(node, ast.Assign):
            (target,) = node.targets
            declared[target.id] = node.value
        elif isinstance(node, ast.FunctionDef):
            declared[node.name] = None
    assert set(declared) == installed

    modules = {"arith": ops.arith, "elementwise": ops.elementwise, "inplace": ops.inplace}
    modules.update(nn_ops=ops.nn_ops, reduce=ops.reduce, shape_ops=ops.shape)
    for name, value in declared.items():
        if isinstance(value, ast.Call):  # property(module.fn)
            (value,) = value.args
            assert getattr(tt.Tensor, name).fget is getattr(modules[value.value.id], value.attr), name
        elif value is not None:
            assert vars(tt.Tensor)[name] is getattr(modules[value.value.id], value.attr), name
