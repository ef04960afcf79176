"""The Tensor's API: properties, creation functions, conversions, DLPack and the errors that name
problems; then PyTorch's habits: Parameters anywhere, dim=/keepdim=, Tensor methods, formatting and
in-place ops.
"""

import inspect
import operator

import numpy as np
import pytest
from checkout import ROOT, from_checkout

import tinytensor as tt
from tinytensor import nn


def test_properties():
    x = tt.tensor(np.zeros((2, 3), np.float32), requires_grad=True)
    assert x.shape == (2, 3) and x.ndim == 2 and x.dtype == np.float32
    assert x.device == "cpu" and x.requires_grad and x.grad is None and x.is_leaf
    assert isinstance(x.numpy(), np.ndarray) and x.numel() == 6 and len(x) == 2
    assert x.size() == (2, 3) and x.size(1) == 3 and x.size(-2) == 2 and x.dim() == 2


def test_constructor_copies_its_input():
    arr = np.ones(3, np.float32)
    t = tt.tensor(arr)
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
    like = tt.tensor(np.zeros((2, 2)))
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
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("float64")
    assert y.dtype == np.float64
    (y * y).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad, [2.0, 4.0])
    assert tt.tensor([[3.5]]).item() == 3.5
    assert tt.tensor([1.0, 2.0]).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="one-element"):
        tt.tensor([1.0, 2.0]).item()


def test_to_same_device_returns_self_and_cpu_is_a_noop():
    x = tt.tensor([1.0])
    assert x.to("cpu") is x and x.cpu() is x


def test_unknown_device_string_is_named():
    with pytest.raises(tt.DeviceError, match="unknown device 'tpu'"):
        tt.tensor([1.0]).to("tpu")
    with pytest.raises(tt.DeviceError, match="unknown device 'cuda:x'"):
        tt.tensor([1.0]).to("cuda:x")


def test_cuda_unavailable_error_says_why(monkeypatch):
    from tinytensor.cuda.status import cuda_status

    status = cuda_status()
    if status.device_usable:
        pytest.skip(reason="a usable CUDA device exists here; the error path cannot be exercised")
    with pytest.raises(tt.CudaUnavailableError) as info:
        tt.tensor([1.0]).to("cuda")
    message = str(info.value)
    assert "cannot be used" in message and "fix:" in message
    for problem in status.problems:  # every problem is named, the extension too
        assert problem.what in message
    assert tt.HAS_CUDA is False
    assert tt.cuda_unavailable_reason()


def test_mixing_devices_names_both():
    pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    a = tt.tensor([1.0, 2.0])
    b = tt.tensor([1.0, 2.0], device="strict:device1")
    with pytest.raises(tt.DeviceError, match="cpu.*strict:device1|strict:device1.*cpu"):
        a + b
    c = tt.tensor([1.0, 2.0], device="strict:device2")
    with pytest.raises(tt.DeviceError, match="device1.*device2"):
        b * c
    with pytest.raises(tt.DeviceError):
        a @ b


def test_shape_mismatch_messages_carry_both_shapes():
    a = tt.tensor(np.ones((2, 3)))
    with pytest.raises(tt.ShapeError, match=r"\(2, 3\) and \(4,\)"):
        a + tt.tensor(np.ones(4))
    with pytest.raises(tt.ShapeError, match=r"\(2, 3\) and \(4, 5\).*\(3\).*\(4\)"):
        a @ tt.tensor(np.ones((4, 5)))
    with pytest.raises(tt.ShapeError, match=r"\(2, 3\) into \(4,\)"):
        a.reshape(4)
    with pytest.raises(tt.ShapeError, match="axis 2 is out of range"):
        a.sum(axis=2)


def test_numpy_arrays_on_the_left_give_tensors():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = np.array([2.0, 3.0], np.float32) * x
    assert isinstance(y, tt.Tensor)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, [2.0, 3.0])


def test_dlpack_roundtrip_with_torch():
    torch = pytest.importorskip("torch", reason="PyTorch (DLPack peer) is installed only on Python 3.11")
    x = tt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    t = torch.from_dlpack(x)
    assert tuple(t.shape) == (2, 3)
    t[0, 0] = 42.0  # zero-copy: the same memory
    assert x.numpy()[0, 0] == 42.0
    back = tt.from_dlpack(torch.arange(4, dtype=torch.float64))
    assert back.dtype == np.float64 and back.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_setitem_refused_inside_a_graph():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place"):
        x[0] = 3.0
    with tt.no_grad():
        x[0] = 3.0
    assert x.tolist() == [3.0, 2.0]


def test_repr_mentions_device_dtype_and_grad(other_device):
    text = repr(tt.tensor(np.zeros(2), requires_grad=True))
    assert "dtype=float64" in text and "requires_grad=True" in text
    assert "device" not in text  # the CPU goes unsaid, as in PyTorch
    moved = tt.tensor(np.zeros(2, np.float32), device=other_device)
    assert f"device={str(moved.device)!r}" in repr(moved)  # as PyTorch: device='cuda:0'


def test_quickstart_from_the_readme():
    x = tt.tensor([[1.0, 2.0]])
    w = tt.tensor([[1.0], [1.0]])
    if tt.cuda_status().device_usable:
        x, w = x.to("cuda"), w.to("cuda")
        assert (x @ w).item() == 3.0
    else:
        with pytest.raises(tt.CudaUnavailableError, match="cannot be used"):
            x.to("cuda")
        assert (x @ w).item() == 3.0


def test_type_stubs_declare_exactly_the_installed_surface():
    """The stubs (py.typed is shipped) are generated from ops/surface.py: Tensor, tt and nn.functional
    have exactly the methods and functions they declare, each with the parameters its stub names.
    _activations.pyi declares the activations for all three, _surface.pyi the rest of Tensor and tt,
    nn/functional.pyi the rest of nn.functional."""
    import ast
    import inspect
    from pathlib import Path

    import tinytensor.nn.functional as F
    from tinytensor.ops import surface

    package = Path(tt.__file__).parent

    def parsed(path):
        return ast.parse((package / path).read_text()).body

    def functions(*paths):
        return {node.name: node for path in paths for node in parsed(path) if isinstance(node, ast.FunctionDef)}

    def class_methods(path, name):
        (cls,) = [node for node in parsed(path) if isinstance(node, ast.ClassDef) and node.name == name]
        return {node.name: node for node in cls.body if isinstance(node, ast.FunctionDef)}

    def names(node: ast.FunctionDef):
        a = node.args  # in inspect.signature's order
        listed = [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg]
        return [arg.arg for arg in listed if arg is not None]

    methods = class_methods("_surface.pyi", "TensorOps") | class_methods("_activations.pyi", "ActivationMethods")
    assert set(methods) == {name for op in surface.OPS for name in op.methods} | set(surface.PROPERTIES)
    for name, node in methods.items():
        if name in surface.PROPERTIES:
            assert isinstance(vars(tt.Tensor)[name], property), name
            continue
        assert names(node) == ["self", *list(inspect.signature(vars(tt.Tensor)[name]).parameters)[1:]], name

    for module, namespace, stub in ((tt, "tt", "_surface.pyi"), (F, "functional", "nn/functional.pyi")):
        declared = functions(stub, "_activations.pyi")
        assert set(declared) == {op.name for op in surface.OPS if getattr(op, namespace)}, stub
        for name, node in declared.items():
            assert name in module.__all__, (stub, name)
            assert list(inspect.signature(getattr(module, name)).parameters)[1:] == names(node)[1:], (stub, name)


def test_type_stubs_are_what_the_generator_writes():
    """The stubs beside the tinytensor under test (a checkout's, or an installed wheel's) are byte for
    byte what `python -m ci.dev.surface_stubs` writes from its surface."""
    if not (ROOT / "ci" / "dev" / "surface_stubs.py").exists():
        pytest.skip("the stub generator (ci/dev/surface_stubs.py) is not beside these tests")
    stubs = from_checkout("ci.dev.surface_stubs")
    assert not stubs.stale(stubs.stubs()), "run python -m ci.dev.surface_stubs"


def test_operations_table_is_what_the_generator_writes():
    """docs/operations.md, the table of every op (with its docstring's summary: every op has one), is
    byte for byte what `python -m ci.dev.surface_stubs` writes from the surface; its --check fails
    when it is not."""
    if not (ROOT / "ci" / "dev" / "operations_doc.py").exists() or not (ROOT / "docs" / "operations.md").exists():
        pytest.skip("the table (docs/operations.md) or its generator is not beside these tests (a wheel's test folder)")
    doc = from_checkout("ci.dev.operations_doc")
    assert doc.main(["--check"]) == 0, "run python -m ci.dev.surface_stubs"
    from tinytensor.ops import surface

    table = doc.PATH.read_text()
    for op in surface.OPS:
        assert f"| {op.name.replace('|', chr(92) + '|')} |" in table, op.name
        assert inspect.getdoc(op.fn), f"{op.name} has no docstring"


def _probe_inputs():
    x = tt.tensor(np.linspace(0.25, 1.5, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    y = tt.tensor(np.linspace(0.5, 2.0, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    return x, y


# The ops that need more than one or two (3, 4) float tensors: arguments that make them run.
_LABELS = tt.tensor([0, 2, 1])
_PROBE_CALLS = {
    "clip": lambda fn, x, y: fn(x, -0.5, 0.5),
    "clamp": lambda fn, x, y: fn(x, -0.5, 0.5),
    "where": lambda fn, x, y: fn(x > 0, x, y),
    "bincount": lambda fn, x, y: fn(tt.tensor([0, 2, 2])),
    "reshape": lambda fn, x, y: fn(x, 12),
    "view": lambda fn, x, y: fn(x, 12),
    "permute": lambda fn, x, y: fn(x, 1, 0),
    "expand": lambda fn, x, y: fn(x, 2, 3, 4),
    "unsqueeze": lambda fn, x, y: fn(x, 0),
    "__getitem__": lambda fn, x, y: fn(x, 0),
    "__setitem__": lambda fn, x, y: fn(x, 0, 1.0),
    "cat": lambda fn, x, y: fn([x, y]),
    "concatenate": lambda fn, x, y: fn([x, y]),
    "stack": lambda fn, x, y: fn([x, y]),
    "chunk": lambda fn, x, y: fn(x, 2)[0],
    "split": lambda fn, x, y: fn(x, 2)[0],
    "repeat": lambda fn, x, y: fn(x, 2, 1),
    "gather": lambda fn, x, y: fn(x, 1, tt.tensor([[0], [3], [1]])),
    "masked_fill": lambda fn, x, y: fn(x, x > 0, 0.0),
    "masked_fill_": lambda fn, x, y: fn(x, x > 0, 0.0),
    "topk": lambda fn, x, y: fn(x, 2).values,
    "sort": lambda fn, x, y: fn(x).values,
    "cumsum": lambda fn, x, y: fn(x, 1),
    "mm": lambda fn, x, y: fn(x, y.T),
    "matmul": lambda fn, x, y: fn(x, y.T),
    "__matmul__": lambda fn, x, y: fn(x, y.T),
    "__rmatmul__": lambda fn, x, y: fn(x, y.T),
    "type": lambda fn, x, y: fn(x, "float64"),
    "layer_norm": lambda fn, x, y: fn(x, (4,)),
    "embedding": lambda fn, x, y: fn(_LABELS, x),
    "linear": lambda fn, x, y: fn(x, y),
    "cross_entropy": lambda fn, x, y: fn(x, _LABELS),
    "nll_loss": lambda fn, x, y: fn(x, _LABELS),
    "one_hot": lambda fn, x, y: fn(_LABELS),
    "softmax": lambda fn, x, y: fn(x, 1),
    "log_softmax": lambda fn, x, y: fn(x, 1),
    "batch_norm": lambda fn, x, y: fn(x, None, None, training=True),
    "binary_cross_entropy": lambda fn, x, y: fn(x * 0.5, y * 0.4),  # probabilities
    "fill_": lambda fn, x, y: fn(x, 1.0),
    # bool and integer tensors only: their results carry no gradient by construction
    "__and__": lambda fn, x, y: fn(x > 1, y > 1),
    "__or__": lambda fn, x, y: fn(x > 1, y > 1),
    "__xor__": lambda fn, x, y: fn(x > 1, y > 1),
    "__invert__": lambda fn, x, y: fn(x > 1),
    "clamp_": lambda fn, x, y: fn(x, -0.5, 0.5),
    # convolution, pooling and resampling: x as a batch of one image or sequence
    "group_norm": lambda fn, x, y: fn(x, 1),
    "conv1d": lambda fn, x, y: fn(x.unsqueeze(0), y[:, :2].unsqueeze(0)),
    "conv2d": lambda fn, x, y: fn(x.reshape(1, 1, 3, 4), y[:2, :2].reshape(1, 1, 2, 2)),
    "conv_transpose2d": lambda fn, x, y: fn(x.reshape(1, 1, 3, 4), y[:2, :2].reshape(1, 1, 2, 2)),
    "unfold": lambda fn, x, y: fn(x.reshape(1, 1, 3, 4), 2),
    "fold": lambda fn, x, y: fn(x.reshape(1, 4, 3), (2, 4), 2),
    **{
        name: lambda fn, x, y: fn(x.unsqueeze(0), 2)
        for name in (
            "max_pool1d",
            "max_pool2d",
            "avg_pool1d",
            "avg_pool2d",
            "adaptive_avg_pool1d",
            "adaptive_avg_pool2d",
            "adaptive_max_pool1d",
            "adaptive_max_pool2d",
        )
    },
    "pad": lambda fn, x, y: fn(x, (1, 1)),
    "interpolate": lambda fn, x, y: fn(x.unsqueeze(0), scale_factor=2),
    "dropout2d": lambda fn, x, y: fn(x.reshape(1, 3, 2, 2)),
}


def _carries_gradient(op, fn) -> bool:
    """Whether ``fn``'s result requires grad when its float inputs do (an in-place op's refusal to
    change them counts as no)."""
    x, y = _probe_inputs()
    if op.name in _PROBE_CALLS:
        calls = [lambda: _PROBE_CALLS[op.name](fn, x, y)]
    else:
        calls = [lambda: fn(x), lambda: fn(x, y)]
    for call in calls:
        try:
            result = call()
        except TypeError as exc:
            if "positional argument" in str(exc) or "were given" in str(exc):
                continue  # the wrong number of arguments: the next form
            raise
        except RuntimeError as exc:
            if "cannot be changed in place" in str(exc) or "in-place assignment" in str(exc):
                return False
            raise
        if isinstance(result, tuple):
            result = result[0]
        return isinstance(result, tt.Tensor) and result.requires_grad
    raise AssertionError(f"{op.name}: no probe call fits it; add one to _PROBE_CALLS")


def test_declared_differentiability_is_what_the_ops_do():
    """docs/operations.md says whether each op is differentiable from the surface's declaration;
    running every op on float tensors that require grad shows that declaration is true."""
    from tinytensor.ops import surface

    wrong = []
    for op in surface.OPS:
        fn = (
            getattr(tt.Tensor, op.methods[0])
            if op.methods
            else surface.functions("tt" if op.tt else "functional")[op.name]
        )
        if _carries_gradient(op, fn) != op.differentiable:
            wrong.append(op.name)
    assert not wrong, f"declared differentiable={'no' if wrong else ''} wrongly for {wrong}"


# ---------------------------------------------------------------------------- Parameters on either side
OPERATORS = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.pow,
    operator.matmul,
    operator.eq,
    operator.ne,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
]
FUNCTIONS = [
    tt.maximum,
    tt.minimum,
    tt.matmul,
    lambda a, b: tt.where(a > 1, a, b),
    lambda a, b: tt.cat([a, b]),
    lambda a, b: tt.stack([a, b], dim=1),
]


@pytest.mark.parametrize("fn", OPERATORS + FUNCTIONS, ids=lambda f: getattr(f, "__name__", "fn"))
@pytest.mark.parametrize("side", ["left", "right", "both"])
def test_a_parameter_works_on_either_side(fn, side, device):
    values = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), np.array([[0.5, 2.0], [1.5, 5.0]], np.float32)
    plain = [tt.tensor(v, device=device) for v in values]
    mixed = [nn.Parameter(tt.tensor(v, device=device)) if side in (pos, "both") else tt.tensor(v, device=device)
             for v, pos in zip(values, ("left", "right"))]  # fmt: skip
    expected = fn(*plain)
    got = fn(*mixed)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)
    assert got.device == expected.device
    if got.requires_grad:
        got.sum().backward()
        for p in mixed:
            if isinstance(p, nn.Parameter):
                assert p.grad is not None and p.grad.shape == p.shape


def test_a_custom_layer_with_parameters_on_the_right():
    class Affine(nn.Module):
        def __init__(self):
            super().__init__()
            self.W = nn.Parameter(np.ones((3, 2), np.float32))
            self.b = nn.Parameter(np.zeros(2, np.float32))

        def forward(self, x):
            return x @ self.W + self.b

    layer = Affine()
    out = layer(tt.ones(4, 3))
    out.sum().backward()
    np.testing.assert_allclose(out.numpy(), 3.0)
    np.testing.assert_allclose(layer.W.grad, 4.0)
    np.testing.assert_allclose(layer.b.grad, 4.0)


REFLECTED = [
    ("2 @ t", lambda t: 2 @ t, r"unsupported operand type\(s\) for @: 'int' and 'Tensor'"),
    ("t @ 2", lambda t: t @ 2, r"unsupported operand type\(s\) for @: 'Tensor' and 'int'"),
    ("None + t", lambda t: None + t, r"unsupported operand type\(s\) for \+: 'NoneType' and 'Tensor'"),
    ("t - 'a'", lambda t: t - "a", r"unsupported operand type\(s\) for -: 'Tensor' and 'str'"),
    ("'a' * t", lambda t: "a" * t, r"only one-element integer tensors can be used as an index"),
    ("[1] / t", lambda t: [1.0] / t, r"unsupported operand type\(s\) for /: 'list' and 'Tensor'"),
    ("t ** None", lambda t: t**None, r"unsupported operand type\(s\) for \*\* or pow\(\)"),
    ("object() < t", lambda t: object() < t, r"'<' not supported between instances of 'object' and 'Tensor'"),
    ("1j + t", lambda t: 1j + t, r"unsupported operand type\(s\) for \+: 'complex' and 'Tensor'"),
]


@pytest.mark.parametrize("expr,fn,message", REFLECTED, ids=[r[0] for r in REFLECTED])
def test_unsupported_operands_raise_type_error_like_pytorch(expr, fn, message):
    t = tt.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=message):
        fn(t)


def test_negative_gather_indices_keep_their_gradient_rows(device):
    w = tt.tensor(np.arange(8.0).reshape(4, 2), device=device, requires_grad=True)
    idx = tt.tensor(np.array([-1, 0, -1, -4]), device=device)
    out = w[idx]
    np.testing.assert_array_equal(out.numpy(), np.arange(8.0).reshape(4, 2)[[-1, 0, -1, -4]])
    out.sum().backward()
    np.testing.assert_array_equal(tt.tensor(w.grad).numpy()[:, 0], [2.0, 0.0, 0.0, 2.0])


# ---------------------------------------------------------------------------- dim= and axis=
DIM_CALLS = [
    ("sum", lambda x, k: x.sum(dim=1, keepdim=k), lambda x, k: x.sum(axis=1, keepdims=k)),
    ("mean", lambda x, k: x.mean(dim=(0, 2), keepdim=k), lambda x, k: x.mean(axis=(0, 2), keepdims=k)),
    ("amax", lambda x, k: x.amax(dim=-1, keepdim=k), lambda x, k: x.max(axis=-1, keepdims=k)),
    ("max", lambda x, k: x.max(dim=-1, keepdim=k).values, lambda x, k: x.max(axis=-1, keepdims=k)),
    ("min", lambda x, k: x.min(dim=0, keepdim=k).values, lambda x, k: x.min(axis=0, keepdims=k)),
    ("var", lambda x, k: x.var(dim=1, keepdim=k), lambda x, k: x.var(axis=1, keepdims=k)),
    ("std", lambda x, k: x.std(dim=1, keepdim=k), lambda x, k: x.var(axis=1, keepdims=k).sqrt()),
    ("logsumexp", lambda x, k: x.logsumexp(dim=2, keepdim=k), lambda x, k: x.logsumexp(axis=2, keepdims=k)),
    ("argmax", lambda x, k: x.argmax(dim=1, keepdim=k), lambda x, k: x.argmax(axis=1, keepdims=k)),
    ("argmin", lambda x, k: x.argmin(dim=1, keepdim=k), lambda x, k: x.argmin(axis=1, keepdims=k)),
    ("all", lambda x, k: (x > -9).all(dim=1, keepdim=k), lambda x, k: (x > -9).all(axis=1, keepdims=k)),
    ("any", lambda x, k: (x > 1).any(dim=1, keepdim=k), lambda x, k: (x > 1).any(axis=1, keepdims=k)),
    ("softmax", lambda x, k: x.softmax(dim=1), lambda x, k: x.softmax(axis=1)),
    ("log_softmax", lambda x, k: tt.log_softmax(x, dim=0), lambda x, k: tt.log_softmax(x, axis=0)),
    ("cat", lambda x, k: tt.cat([x, x], dim=2), lambda x, k: tt.cat([x, x], axis=2)),
    ("stack", lambda x, k: tt.stack([x, x], dim=1), lambda x, k: tt.stack([x, x], axis=1)),
    ("squeeze", lambda x, k: x[:, :1].squeeze(dim=1), lambda x, k: x[:, :1].squeeze(axis=1)),
    ("unsqueeze", lambda x, k: x.unsqueeze(dim=0), lambda x, k: x.unsqueeze(axis=0)),
    ("flatten", lambda x, k: x.flatten(start_dim=1), lambda x, k: x.flatten(start_axis=1)),
    ("transpose", lambda x, k: x.transpose(dim0=0, dim1=2), lambda x, k: x.transpose(axis0=0, axis1=2)),
]


@pytest.mark.parametrize("name,dim_form,axis_form", DIM_CALLS, ids=[c[0] for c in DIM_CALLS])
@pytest.mark.parametrize("keep", [False, True])
def test_dim_and_axis_spellings_agree(name, dim_form, axis_form, keep, device):
    x = tt.tensor(np.random.default_rng(0).standard_normal((2, 3, 4)), device=device)
    a, b = dim_form(x, keep), axis_form(x, keep)
    assert a.shape == b.shape and a.dtype == b.dtype and a.device == b.device
    np.testing.assert_allclose(a.numpy(), b.numpy())


def test_both_spellings_at_once_are_refused():
    x = tt.ones(2, 3)
    with pytest.raises(TypeError, match=r"sum\(\): got both dim=0 and axis=1"):
        x.sum(dim=0, axis=1)
    with pytest.raises(TypeError, match=r"keepdim and keepdims"):
        x.mean(dim=0, keepdim=True, keepdims=True)


def test_max_with_dim_returns_values_and_indices_like_pytorch():
    x = tt.tensor([[1.0, 5.0, 5.0], [7.0, 2.0, 3.0]], requires_grad=True)
    values, indices = x.max(dim=1)
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0] and indices.dtype == np.int64
    values.sum().backward()  # the gradient goes to the first maximum only, as in PyTorch
    np.testing.assert_array_equal(x.grad, [[0, 1, 0], [1, 0, 0]])
    assert x.max(1).indices.tolist() == [1, 0]  # positional dim: PyTorch's form too
    assert x.max().item() == 7.0 and x.max(axis=1).tolist() == [5.0, 7.0]  # numpy's spelling: values
    assert tt.max(x, tt.tensor([[2.0] * 3] * 2)).tolist() == [[2, 5, 5], [7, 2, 3]]  # torch.max(a, b)
    assert x.min(dim=0, keepdim=True).values.shape == (1, 3)


def test_squeeze_of_a_dim_that_is_not_one_is_a_no_op_like_pytorch():
    x = tt.zeros(2, 1, 3)
    assert x.squeeze(0).shape == (2, 1, 3) and x.squeeze(1).shape == (2, 3) and x.squeeze().shape == (2, 3)


# ---------------------------------------------------------------------------- methods
def test_tensor_methods_a_pytorch_user_reaches_for():
    x = tt.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    assert x.argmax().item() == 4 and x.argmin().item() == 5 and x.argmax(dim=1).tolist() == [2, 1]
    assert x.view(3, 2).shape == (3, 2) and x.view(-1).shape == (6,)
    assert x.t().shape == (3, 2) and x.T.shape == (3, 2) and x.mT.shape == (3, 2)
    assert tt.tensor([1.0, 2.0]).t().shape == (2,)
    assert x.long().dtype == np.int64 and x.int().dtype == np.int32 and x.bool().dtype == np.bool_
    assert x.long().float().dtype == np.float32 and x.double().dtype == np.float64 and x.half().dtype == np.float16
    assert (x > 0).all().item() is False and (x > 0).any().item() is True
    assert (x > 0).all(dim=0).tolist() == [True, False, False]
    assert x.tolist() == [[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]] and x[1, 1].item() == 5.0
    c = x.clone()
    c[0, 0] = 100.0
    assert x[0, 0].item() == 1.0
    with pytest.raises(tt.ShapeError, match="at most 2 axes"):
        tt.zeros(2, 2, 2).t()


def test_format_and_iteration():
    loss = tt.tensor(0.123456)
    assert f"{loss:.4f}" == "0.1235" and f"{tt.tensor([2.5]):.1f}" == "2.5" and f"{tt.tensor(3):d}" == "3"
    assert f"{tt.tensor([1.0, 2.0])}" == repr(tt.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="only one-element tensors format as numbers"):
        _ = f"{tt.tensor([1.0, 2.0]):.2f}"
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(loss)
    rows = list(tt.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0]]
    assert [int(v) for v in tt.arange(3)] == [0, 1, 2]


def test_logical_operators_on_masks():
    a = tt.tensor([1.0, 2.0, 3.0])
    assert ((a > 1) & (a < 3)).tolist() == [False, True, False]
    assert ((a < 2) | (a > 2)).tolist() == [True, False, True]
    assert (~(a > 1)).tolist() == [True, False, False]
    with pytest.raises(TypeError, match="invert"):
        _ = ~a


def test_in_place_ops(device):
    x = tt.tensor([1.0, 2.0, 3.0], device=device)
    assert x.add_(1.0) is x and x.tolist() == [2.0, 3.0, 4.0]
    x.sub_(tt.tensor([1.0, 1.0, 1.0], device=device), alpha=2)
    assert x.tolist() == [0.0, 1.0, 2.0]
    x.mul_(3).div_(2)
    assert x.tolist() == [0.0, 1.5, 3.0]
    x.clamp_(min=0.5, max=2.0)
    assert x.tolist() == [0.5, 1.5, 2.0]
    x.fill_(7)
    assert x.tolist() == [7.0, 7.0, 7.0]
    x.copy_(tt.tensor([1.0, 2.0, 3.0], device=device))
    assert x.tolist() == [1.0, 2.0, 3.0]
    assert x.zero_().tolist() == [0.0, 0.0, 0.0]
    view = x[1:]
    view.fill_(5.0)  # a view writes through to its base
    assert x.tolist() == [0.0, 5.0, 5.0]


def test_in_place_ops_keep_dtype_and_shape():
    i = tt.tensor([1, 2, 3])
    with pytest.raises(TypeError, match="cannot be stored in a tensor of dtype int64"):
        i.add_(0.5)
    with pytest.raises(TypeError, match="int64"):
        i.div_(2)
    with pytest.raises(tt.ShapeError, match=r"shape \(3,\)"):
        i.add_(tt.tensor([[1, 2, 3], [4, 5, 6]]))
    with pytest.raises(RuntimeError, match="broadcast view"):
        tt.ones(3).expand(2, 3).mul_(2.0)
    assert i.tolist() == [1, 2, 3]


def test_floor_division_modulo_and_randint():
    a = tt.tensor([7, -7, 5])
    assert (a // 2).tolist() == [3, -4, 2] and (a % 3).tolist() == [1, 2, 2]
    assert not (tt.tensor([1.5], requires_grad=True) % 1.0).requires_grad  # no gradient, as torch's
    tt.manual_seed(0)
    r = tt.randint(3, 7, (1000,))
    assert r.dtype == np.int64 and r.shape == (1000,) and set(r.tolist()) == {3, 4, 5, 6}
    assert tt.randint(5, size=(2, 2)).shape == (2, 2)
    with pytest.raises(ValueError, match=r"randint\(\): high \(3\) must be greater than low \(3\)"):
        tt.randint(3, 3)
