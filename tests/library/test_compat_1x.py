"""pytinytensor 1.x code keeps working: its quick start, its module paths, its deprecated names."""

import hashlib
import warnings
from pathlib import Path

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn, optim

# The quick start of pytinytensor 0.2.0's README (the 1.x API), verbatim.
QUICKSTART = """
from tinytensor.core.tensor import Tensor
from tinytensor.nn import Linear, MSELoss
from tinytensor.optim import SGD

model = Linear(in_features=1, out_features=1)
loss_fn = MSELoss()
optimizer = SGD(model.parameters(), lr=0.01)

x = Tensor([[1.0], [2.0], [3.0]])
y = Tensor([[3.0], [5.0], [7.0]])   # y = 2x + 1

for epoch in range(100):
    optimizer.zero_grad()
    pred = model(x)
    loss = loss_fn(pred, y)
    loss.backward()
    optimizer.step()

print(model.weight.data, model.bias.data)  # ~2.0, ~1.0
"""

# The same README's next snippet: moving the model to the GPU.
QUICKSTART_GPU = """
model.cuda()               # or model.to("cuda")
x = x.cuda()
pred = model(x)             # runs on cupy-backed tensors, gradients too
"""


class _RecordingMSELoss(nn.MSELoss):
    """MSELoss that keeps every loss it returns, so the verbatim loop can be watched."""

    seen: list = []

    def forward(self, input, target):  # noqa: A002
        loss = super().forward(input, target)
        self.seen.append(loss.item())
        return loss


def _run_quickstart(monkeypatch, seed):
    tt.manual_seed(seed)
    _RecordingMSELoss.seen = []
    monkeypatch.setattr(nn, "MSELoss", _RecordingMSELoss)
    namespace = {}
    exec(compile(QUICKSTART, "<1.x quick start>", "exec"), namespace)
    return namespace, _RecordingMSELoss.seen


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quickstart_fits_a_line(monkeypatch, capsys, seed):
    namespace, losses = _run_quickstart(monkeypatch, seed)
    assert len(losses) == 100
    assert losses[-1] < losses[0] / 100, f"the loss fell only from {losses[0]:.4g} to {losses[-1]:.4g}"
    assert losses[-1] < 0.1
    model = namespace["model"]
    assert abs(model.weight.item() - 2.0) < 0.5 and abs(model.bias.item() - 1.0) < 0.6
    assert capsys.readouterr().out.strip()  # the final print ran


def test_quickstart_gpu_snippet(monkeypatch, capsys, gpu):
    namespace, _ = _run_quickstart(monkeypatch, 0)
    exec(compile(QUICKSTART_GPU, "<1.x quick start, GPU>", "exec"), namespace)
    assert namespace["pred"].device.startswith("cuda")
    assert namespace["model"].weight.device.startswith("cuda")


def test_module_paths_give_the_same_objects():
    from tinytensor.core import Tensor as core_tensor
    from tinytensor.core.tensor import Tensor
    from tinytensor.nn.activations import GELU, ReLU, Sigmoid, Softmax, Tanh
    from tinytensor.nn.linear import Linear
    from tinytensor.nn.losses import CrossEntropyLoss, MSELoss
    from tinytensor.nn.modules import Module, Sequential
    from tinytensor.optim import SGD, AdamW

    assert Tensor is core_tensor is tt.Tensor
    assert (Module, Sequential, Linear) == (nn.Module, nn.Sequential, nn.Linear)
    assert (MSELoss, CrossEntropyLoss) == (nn.MSELoss, nn.CrossEntropyLoss)
    assert (ReLU, Sigmoid, Tanh, GELU, Softmax) == (nn.ReLU, nn.Sigmoid, nn.Tanh, nn.GELU, nn.Softmax)
    assert (SGD, AdamW) == (optim.SGD, optim.AdamW)


def _warned_here(record):
    """The deprecation points at the line in this file that used the old name."""
    assert [w.filename for w in record] == [__file__], [str(w.message) for w in record]


def test_lerelu_warns_and_is_a_leaky_relu():
    with pytest.warns(DeprecationWarning, match=r"nn\.LeReLU .*use tinytensor\.nn\.LeakyReLU") as record:
        LeReLU = nn.LeReLU
    _warned_here(record)
    with pytest.warns(DeprecationWarning, match=r"activations\.LeReLU .*LeakyReLU") as record:
        from tinytensor.nn.activations import LeReLU as from_activations
    _warned_here(record)
    assert from_activations is LeReLU
    layer = LeReLU(alpha=0.2)  # 1.x's signature
    assert isinstance(layer, nn.LeakyReLU) and layer.alpha == layer.negative_slope == 0.2
    assert repr(layer) == "LeReLU(alpha=0.2)"
    x = tt.tensor([-2.0, 3.0], requires_grad=True)
    out = layer(x)
    np.testing.assert_allclose(out.numpy(), [-0.4, 3.0], rtol=1e-6)  # 1.x's own test
    out.sum().backward()
    np.testing.assert_allclose(x.grad, [0.2, 1.0], rtol=1e-6)
    np.testing.assert_allclose(LeReLU()(x).numpy(), nn.LeakyReLU()(x).numpy())


def test_sigmod_warns_and_is_sigmoid():
    with pytest.warns(DeprecationWarning, match=r"nn\.Sigmod .*use tinytensor\.nn\.Sigmoid") as record:
        Sigmod = nn.Sigmod
    _warned_here(record)
    with pytest.warns(DeprecationWarning, match=r"activations\.Sigmod .*Sigmoid") as record:
        from tinytensor.nn.activations import Sigmod as from_activations
    _warned_here(record)
    assert Sigmod is from_activations is nn.Sigmoid
    np.testing.assert_allclose(Sigmod()(tt.tensor([0.0])).numpy(), [0.5])


def test_current_names_do_not_warn_and_unknown_names_still_fail():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec("from tinytensor.nn import *", {})  # `import *` reads __all__, which leaves the old names out
        from tinytensor.nn.activations import LeakyReLU, Sigmoid  # noqa: F401
    with pytest.raises(AttributeError, match="has no attribute 'LeakyRelu'"):
        _ = nn.LeakyRelu
    with pytest.raises(ImportError):
        from tinytensor.nn.activations import Sigmoidd  # noqa: F401


# ---------------------------------------------------------------------------- 1.x's top-level names
def test_set_seed_and_cuda_available_warn_and_resolve():
    with pytest.warns(
        DeprecationWarning, match=r"tinytensor\.set_seed is a deprecated 1.x name: use tinytensor\.manual_seed\(seed\)"
    ) as record:
        set_seed = tt.set_seed
    _warned_here(record)
    assert set_seed is tt.manual_seed
    set_seed(9)
    first = tt.randn(3).numpy()
    tt.manual_seed(9)
    np.testing.assert_array_equal(tt.randn(3).numpy(), first)
    with pytest.warns(
        DeprecationWarning, match=r"tinytensor\.cuda_available .*use tinytensor\.cuda\.is_available\(\)"
    ) as record:
        from tinytensor import cuda_available
    # importlib's from-list check of a package reads the name once more: both warnings point here,
    # and Python's default filter shows a warning once per line
    assert {w.filename for w in record} == {__file__}
    assert cuda_available is tt.cuda.is_available and cuda_available() is tt.cuda.is_available()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "set_device",
            r"tinytensor\.set_device was removed in 2\.0: there is no global device: create tensors with device=",
        ),
        ("get_device", r"tinytensor\.get_device was removed in 2\.0: .*x\.device says where a tensor is"),
        ("config", r"tinytensor\.config was removed in 2\.0: seed with tinytensor\.manual_seed\(seed\)"),
    ],
)
def test_removed_names_say_what_replaces_them(name, message):
    with pytest.raises(AttributeError, match=message):
        getattr(tt, name)
    assert not hasattr(tt, name)
    with pytest.raises(ImportError):  # `from tinytensor import name`: Python's own message
        exec(f"from tinytensor import {name}", {})


def test_unknown_top_level_names_still_fail_plainly():
    with pytest.raises(AttributeError, match=r"^module 'tinytensor' has no attribute 'set_seeds'$"):
        _ = tt.set_seeds


# ---------------------------------------------------------------------------- where 1.x and PyTorch meet
COMPAT_SUITE = Path(__file__).resolve().parents[1] / "compat_1x"


def test_the_1x_suite_is_1x_s_own_files_unchanged():
    """tests/compat_1x holds 1.0.4's tests byte for byte (SHA256SUMS, taken from its sdist)."""
    listed = {}
    for line in (COMPAT_SUITE / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        listed[name] = digest
    assert sorted(listed) == sorted(p.name for p in COMPAT_SUITE.glob("test_*.py"))
    assert len(listed) == 6
    for name, digest in listed.items():
        assert hashlib.sha256((COMPAT_SUITE / name).read_bytes()).hexdigest() == digest, name
    assert "MIT License" in (COMPAT_SUITE / "LICENSE").read_text()


@pytest.mark.parametrize(
    "data",
    [[1, 2, 3], [True, False], 3, np.array([1, 2], np.int32), np.arange(3), np.zeros(2), [[1.5, 2]]],
    ids=["ints", "bools", "int", "int32-array", "int64-array", "float64-array", "floats"],
)
def test_tensor_class_makes_float32_as_torch_tensor_does(data):
    t = tt.Tensor(data)
    assert t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), np.asarray(data, np.float32))  # a number is a 0-d tensor, as 1.x
    assert tt.Tensor(data, dtype=tt.float64).dtype == np.float64  # dtype= still casts
    torch = pytest.importorskip("torch", reason="PyTorch (the test oracle) is installed only on Python 3.11")
    if not isinstance(data, int):  # torch.Tensor(3) is an uninitialised tensor of 3 elements
        torch_t = torch.Tensor(data)
        assert torch_t.dtype == torch.float32
        np.testing.assert_array_equal(t.numpy(), torch_t.numpy())


def test_tensor_class_keeps_a_tensors_dtype_and_parameters_keep_theirs():
    assert tt.Tensor(tt.tensor([1, 2])).dtype == np.int64  # as torch.Tensor(int_tensor)
    assert nn.Parameter(tt.tensor([1.0], dtype=tt.float64)).dtype == np.float64
    assert nn.Parameter(np.zeros(2)).dtype == np.float64
    module = nn.Module()
    module.register_buffer("count", np.array(3))
    assert module.count.dtype == np.int64


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_sum_and_mean_take_dtype_as_torch(reduction):
    x = tt.tensor([1.5, 2.25, 4.0], dtype=tt.float16, requires_grad=True)
    out = getattr(x, reduction)(dtype=tt.float64)
    assert out.dtype == np.float64
    out.backward()
    assert x.grad.dtype == np.float16  # the gradient comes back through the cast
    counts = getattr(tt.tensor([1, 2, 4]), reduction)(dtype="float32")
    assert counts.dtype == np.float32
    torch = pytest.importorskip("torch", reason="PyTorch (the test oracle) is installed only on Python 3.11")
    expected = getattr(torch.tensor([1.5, 2.25, 4.0], dtype=torch.float16), reduction)(dtype=torch.float64)
    assert float(out) == float(expected)
    assert float(counts) == float(getattr(torch.tensor([1, 2, 4]), reduction)(dtype=torch.float32))


def test_mean_refuses_an_integer_dtype_and_out_is_refused():
    with pytest.raises(TypeError, match=r"mean\(\): dtype must be a floating-point dtype, got int64"):
        tt.tensor([1.0, 2.0]).mean(dtype=tt.int64)
    with pytest.raises(TypeError, match=r"sum\(\): out= is not supported"):
        tt.tensor([1.0, 2.0]).sum(out=tt.zeros(()))


def test_numpy_reductions_of_a_tensor_work_as_on_1x_arrays():
    x = tt.tensor([[1.0, 2.0], [3.0, 5.0]])
    assert float(np.mean(x)) == 2.75 and float(np.sum(x)) == 11.0
    np.testing.assert_array_equal(np.sum(x, axis=0).numpy(), [4.0, 7.0])


def test_parameters_is_an_iterator_and_a_list():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    params = model.parameters()
    assert len(params) == 4 and params[0] is model[0].weight and params[-1] is model[1].bias
    assert next(params) is model[0].weight and next(params) is model[0].bias
    assert [p.shape for p in params] == [(2, 3), (2,), (1, 2), (1,)]  # a loop sees every one
    assert next(params) is model[1].weight and next(params) is model[1].bias
    with pytest.raises(StopIteration):
        next(params)
    assert next(iter(model.parameters())) is model[0].weight


def test_size_is_the_element_count_and_called_pytorchs_size():
    x = tt.zeros(2, 3)
    assert x.size == 6 and isinstance(x.size, int)
    assert x.size() == (2, 3) and x.size(1) == 3 and x.size(-2) == 2
    np.testing.assert_array_equal((tt.ones(2, 3) * 6 / x.size).numpy(), np.ones((2, 3)))
    with pytest.raises(IndexError, match="out of range"):
        x.size(2)
    with pytest.raises(TypeError, match="dim must be an int"):
        x.size("0")


def test_copy_and_flat_as_on_1x_arrays():
    w = tt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    c = w.data.copy()
    c.add_(1.0)
    np.testing.assert_array_equal(w.detach().numpy(), [[1.0, 2.0], [3.0, 4.0]])  # a copy, not a view
    (w.copy() * 2.0).sum().backward()  # in the graph, as clone()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 2), 2.0))
    assert [float(v) for v in w.detach().flat] == [1.0, 2.0, 3.0, 4.0]
    assert [float(v) for v in tt.tensor(7.0).flat] == [7.0]


def test_leaky_relu_method_takes_1x_alpha_and_pytorchs_negative_slope():
    x = tt.tensor([-2.0, 3.0])
    np.testing.assert_allclose(x.leaky_relu(alpha=0.1).numpy(), [-0.2, 3.0])
    np.testing.assert_allclose(x.leaky_relu(0.5).numpy(), [-1.0, 3.0])
    np.testing.assert_allclose(nn.functional.leaky_relu(x, negative_slope=0.5).numpy(), [-1.0, 3.0])
    with pytest.raises(TypeError, match="not both"):
        x.leaky_relu(0.2, alpha=0.1)


def test_the_tensor_backward_starts_from_keeps_its_gradient():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    assert loss.grad is not None and float(loss.grad) == 1.0
    y = x * 3.0
    seed = tt.tensor([0.5, 2.0])
    y.backward(seed)
    np.testing.assert_array_equal(y.grad.numpy(), [0.5, 2.0])
    seed.add_(1.0)  # the kept gradient is a copy of the one passed
    np.testing.assert_array_equal(y.grad.numpy(), [0.5, 2.0])
    h = x * 2.0  # not the root: as in PyTorch, no .grad without retain_grad()
    (h * h).sum().backward()
    assert h.grad is None


def test_1x_backward_hook_replaces_a_nodes_step():
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    mid = x * 3.0
    original = mid._backward
    calls = []

    def counted():
        calls.append(1)
        original()

    mid._backward = counted
    (mid * mid).sum().backward()
    assert calls == [1]
    np.testing.assert_allclose(x.grad.numpy(), 18.0 * x.detach().numpy())  # d(9x^2)/dx

    skipped = x * 2.0
    skipped._backward = lambda: None  # a replacement that does not call the step: nothing flows
    x.grad = None
    (skipped + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])

    with pytest.raises(RuntimeError, match="while backward\\(\\) runs"):
        original()
    with pytest.raises(RuntimeError, match="leaf tensor has no backward step"):
        x._backward = counted
    with pytest.raises(TypeError, match="function of no arguments"):
        mid._backward = 3


def test_adamw_counts_its_steps_as_1x_t():
    p = nn.Parameter(tt.tensor([1.0, -1.0]))
    opt = optim.AdamW([p], lr=0.1)
    assert opt.t == 0
    for _ in range(3):
        p.grad = tt.tensor([0.5, -0.5])
        opt.step()
    assert opt.t == 3
