"""pytinytensor 1.x code keeps working: its quick start, its module paths, its deprecated names."""

import warnings

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
    x = tt.Tensor([-2.0, 3.0], requires_grad=True)
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
    np.testing.assert_allclose(Sigmod()(tt.Tensor([0.0])).numpy(), [0.5])


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
