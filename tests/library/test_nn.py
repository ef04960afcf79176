"""Modules: registration, traversal, modes, state dicts, fusion, and moving with .to()."""

import inspect

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn
from tinytensor.ops import nn_ops


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 8), nn.Linear(8, 4)]  # a plain list: registered as ModuleList
        self.norm = nn.LayerNorm(4)
        self.head = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Dropout(0.5))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).relu()
        return self.head(self.norm(x))


def test_registration_and_traversal():
    model = Block()
    names = [n for n, _ in model.named_parameters()]
    assert names == [
        "layers.0.weight",
        "layers.0.bias",
        "layers.1.weight",
        "layers.1.bias",
        "norm.weight",
        "norm.bias",
        "head.0.weight",
        "head.0.bias",
    ]
    assert len(list(model.modules())) == 9  # Block, ModuleList + 2, LayerNorm, Sequential + 3
    assert isinstance(model.layers, nn.ModuleList)
    model.eval()
    assert all(not m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())


def test_shared_parameter_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2


def test_forgetting_super_init_is_explained():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(np.zeros(2))

    with pytest.raises(AttributeError, match="super\\(\\).__init__"):
        Bad()


def test_zero_grad_and_state_dict_roundtrip():
    tt.manual_seed(0)
    a, b = Block(), Block()
    x = tt.randn(5, 4)
    a.eval()
    b.eval()
    a(x).sum().backward()
    assert all(p.grad is not None for p in a.parameters())
    a.zero_grad()
    assert all(p.grad is None for p in a.parameters())
    b.load_state_dict(a.state_dict())
    np.testing.assert_allclose(a(x).numpy(), b(x).numpy())
    # loading copies: changing the source afterwards leaves the target alone
    a.norm.weight.data[:] = 9.0
    assert not np.allclose(b.norm.weight.numpy(), 9.0)


def test_load_state_dict_names_bad_shapes_and_keys():
    lin = nn.Linear(2, 3)
    with pytest.raises(
        tt.ShapeError,
        match=r"size mismatch for weight: copying a param with shape \(3, 3\) from checkpoint, the shape in current model is \(3, 2\)\.",
    ):
        lin.load_state_dict({"weight": np.zeros((3, 3)), "bias": np.zeros(3)})
    with pytest.raises(KeyError, match="missing keys \\['bias'\\]"):
        lin.load_state_dict({"weight": np.zeros((3, 2))})
    result = lin.load_state_dict({"weight": np.zeros((3, 2)), "extra": np.zeros(1)}, strict=False)
    assert result.missing_keys == ["bias"] and result.unexpected_keys == ["extra"]


def _linear_node(t):
    """(parents, saved values by name) of the one linear op that produced ``t``."""
    backward, parents, *saved = t._ctx
    assert backward is nn_ops._linear_backward, f"made by {backward.__qualname__}, not by one linear op"
    names = list(inspect.signature(backward).parameters)[1:]  # after the incoming gradient
    return parents, dict(zip(names, saved, strict=True))


def test_sequential_fuses_linear_and_activation_without_changing_results():
    tt.manual_seed(1)
    seq = nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Linear(6, 5), nn.LeakyReLU(), nn.Linear(5, 2), nn.ReLU())
    x = tt.randn(3, 4, requires_grad=True)
    fused = seq(x)
    # each Linear + ReLU/GELU pair is one node of the linear op, told its activation, whose parent
    # is the pair's input: no separate activation node in between
    (leaky, w3, b3), saved = _linear_node(fused)
    assert saved["activation"] == "relu" and w3 is seq[4].weight and b3 is seq[4].bias
    # LeakyReLU has no fused kernel: its Linear runs plain and it is a node of its own
    assert leaky._ctx[0] is not nn_ops._linear_backward
    (pre_leaky,) = leaky._ctx[1]
    (hidden, w2, b2), saved = _linear_node(pre_leaky)
    assert saved["activation"] is None and w2 is seq[2].weight and b2 is seq[2].bias
    (first, w1, b1), saved = _linear_node(hidden)
    assert saved["activation"] == "gelu" and first is x and w1 is seq[0].weight and b1 is seq[0].bias

    upstream = tt.tensor(np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32))
    (fused * upstream).sum().backward()
    fused_grads = [t.grad.numpy().copy() for t in (x, *seq.parameters())]
    x.grad = None
    seq.zero_grad()
    unfused = x
    for layer in seq:
        unfused = layer(unfused)
    assert unfused._ctx[0] is not nn_ops._linear_backward  # the layers one by one: ReLU is its own node
    (unfused * upstream).sum().backward()
    np.testing.assert_allclose(fused.numpy(), unfused.numpy(), rtol=1e-6)
    for got, want in zip(fused_grads, [x.grad, *(p.grad for p in seq.parameters())], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert isinstance(seq[1:], nn.Sequential) and len(seq[1:]) == 5


def test_dropout_train_and_eval(device):
    tt.manual_seed(0)
    drop = nn.Dropout(0.25)
    x = tt.ones(20000, device=device, requires_grad=True)
    y = drop(x)
    kept = y.numpy() != 0
    assert 0.72 < kept.mean() < 0.78 and y.device == x.device
    np.testing.assert_allclose(y.numpy()[kept], 1 / 0.75, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(tt.tensor(x.grad).numpy(), y.numpy(), rtol=1e-6)
    assert tt.dropout(x, 1.0, True).numpy().sum() == 0  # the functional form; p=1 drops everything
    drop.eval()
    assert drop(x) is x


def test_embedding_layer():
    emb = nn.Embedding(5, 3)
    out = emb(np.array([[0, 4], [4, 4]]))
    assert out.shape == (2, 2, 3)
    out.sum().backward()
    np.testing.assert_allclose(emb.weight.grad[:, 0], [1, 0, 0, 0, 3])
    with pytest.raises(TypeError, match="integers"):
        emb(np.array([0.5]))


def _moved(device):
    tt.manual_seed(2)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    x = tt.randn(6, 3)
    model(x).sum().backward()
    return model, x


def test_module_to_moves_data_and_grads_recursively(device):
    model, x = _moved(device)
    before = {n: (p.numpy().copy(), p.grad.numpy().copy()) for n, p in model.named_parameters()}
    ids = [id(p) for p in model.parameters()]
    assert model.to(device) is model
    assert [id(p) for p in model.parameters()] == ids  # same Parameter objects
    for name, p in model.named_parameters():
        assert p.device == x.to(device).device

        assert p.grad.device == p.device
        np.testing.assert_array_equal(p.numpy(), before[name][0])
        np.testing.assert_array_equal(p.grad.numpy(), before[name][1])
    out = model(x.to(device))
    assert out.device == p.device


def test_module_to_dtype_converts_floats():
    model, _ = _moved("cpu")
    model.double()
    assert all(p.dtype == np.float64 and p.grad.dtype == np.float64 for p in model.parameters())
    model.to("float32")
    assert all(p.dtype == np.float32 for p in model.parameters())


def test_linear_validates_shapes_and_activation():
    lin = nn.Linear(3, 2)
    with pytest.raises(tt.ShapeError, match=r"\(4, 5\).*\(2, 3\)"):
        lin(tt.zeros(4, 5))
    with pytest.raises(ValueError, match="unknown activation"):
        nn.Linear(3, 2, activation="swish")
