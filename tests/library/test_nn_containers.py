"""Module.apply and the containers ModuleDict, ParameterList, ParameterDict: what parameters(),
state_dict() (keys and order against torch.nn's), load_state_dict() and to() see, and bad keys."""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn


def _make(lib, tensor):
    """The same layout built from either library's nn (ours or torch.nn), with every container."""

    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.blocks = lib.ModuleDict({"enc": lib.Linear(3, 4), "dec": lib.Linear(4, 2)})
            self.params = lib.ParameterList([lib.Parameter(tensor(np.ones(2))), tensor(np.full(3, 2.0))])
            self.pd = lib.ParameterDict({"scale": tensor(np.full((2, 2), 3.0)), "shift": tensor(np.zeros(1))})
            self.norm = lib.BatchNorm1d(2)

        def forward(self, x):
            h = self.blocks["dec"](self.blocks["enc"](x))
            return self.norm(h * self.pd["scale"][0] + self.params[0])

    return Net()


def _torch_net(torch):
    return _make(torch.nn, lambda a: torch.tensor(a, dtype=torch.float32))


def _net():
    return _make(nn, lambda a: tt.tensor(a, dtype="float32"))


def test_state_dict_keys_and_order_match_torch(torch):
    ours, theirs = _net(), _torch_net(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values(), strict=True):
        assert a.shape == tuple(b.shape), name
        assert str(a.dtype) == str(b.dtype).removeprefix("torch."), name


def test_load_state_dict_from_torch_and_forward_matches(torch):
    ours, theirs = _net().double(), _torch_net(torch).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3))
    out = ours(tt.tensor(x))
    ref = theirs(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    out.sum().backward()
    ref.sum().backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        if q.grad is None:  # params.1 and pd.shift take no part in forward
            assert p.grad is None, name
        else:
            np.testing.assert_allclose(p.grad, q.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_to_moves_and_casts_container_state(device):
    net = _net().to(device).double()
    target = tt.zeros(1, device=device).device
    for name, t in net.state_dict().items():
        assert t.device == target, name
        expected = np.int64 if name.endswith("num_batches_tracked") else np.float64
        assert t.dtype == tt.zeros(1, dtype=expected, device=device).dtype, name


def test_apply_visits_children_first_and_returns_self(torch):
    def order(model):
        seen = []
        assert model.apply(lambda m: seen.append(type(m).__name__)) is model
        return seen

    ours = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU(), nn.Tanh()), nn.ModuleDict({"a": nn.Sigmoid()}))
    theirs = torch.nn.Sequential(
        torch.nn.Linear(1, 1),
        torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Tanh()),
        torch.nn.ModuleDict({"a": torch.nn.Sigmoid()}),
    )
    assert order(ours) == order(theirs)


def test_module_dict_behaves_like_a_dict():
    d = nn.ModuleDict([("a", nn.Linear(2, 2)), ("b", nn.ReLU())])
    assert list(d) == list(d.keys()) == ["a", "b"] and len(d) == 2 and "a" in d
    d["c"] = nn.Linear(2, 1)
    d.update({"a": nn.Linear(2, 3)})  # replaces, keeping its place
    assert list(d.keys()) == ["a", "b", "c"] and d["a"].out_features == 3 and d.a is d["a"]
    assert isinstance(d.pop("b"), nn.ReLU) and list(d) == ["a", "c"]
    del d["c"]
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias"]
    d["keys"] = nn.Identity()  # a key named like a method does not hide the method
    assert list(d.keys()) == ["a", "keys"]
    d.clear()
    assert len(d) == 0 and list(d.parameters()) == []


def test_parameter_list_behaves_like_a_list():
    pl = nn.ParameterList()
    pl.append(tt.ones(2))  # a plain tensor becomes a Parameter that requires grad
    pl.extend([nn.Parameter(tt.zeros(3)), tt.ones(1)])
    pl += [tt.zeros(4)]
    assert len(pl) == 4 and all(isinstance(p, nn.Parameter) and p.requires_grad for p in pl)
    assert [p.shape for p in pl] == [(2,), (3,), (1,), (4,)] and pl[-1] is pl[3]
    pl[1] = tt.full((5,), 2.0)
    assert pl[1].shape == (5,) and list(nn.Module.state_dict(pl)) == ["0", "1", "2", "3"]
    assert [p.shape for p in pl[1:3]] == [(5,), (1,)]


def test_parameter_dict_behaves_like_a_dict():
    pd = nn.ParameterDict({"w": tt.ones(2)})
    pd["b"] = nn.Parameter(tt.zeros(2))
    pd.update([("w", tt.full((3,), 2.0))])
    assert list(pd) == ["w", "b"] and pd["w"].shape == (3,) and pd.w is pd["w"]
    assert pd.get("missing") is None and "b" in pd
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]
    assert pd.pop("w").shape == (3,) and list(pd.keys()) == ["b"]


def test_optimizer_trains_container_parameters():
    model = nn.Module()
    model.pd = nn.ParameterDict({"w": tt.tensor([1.0, -2.0])})
    model.pl = nn.ParameterList([tt.tensor([3.0])])
    opt = tt.optim.SGD(model.parameters(), lr=0.5)
    loss = (model.pd["w"] ** 2).sum() + (model.pl[0] ** 2).sum()
    loss.backward()
    opt.step()
    np.testing.assert_allclose(model.pd["w"].numpy(), [0.0, 0.0])
    np.testing.assert_allclose(model.pl[0].numpy(), [0.0])


def test_reprs_match_torch(torch):
    assert repr(nn.ModuleDict({"x": nn.Linear(2, 2)})) == repr(torch.nn.ModuleDict({"x": torch.nn.Linear(2, 2)}))
    assert repr(nn.ParameterList([tt.ones(2), tt.zeros(3, 4, dtype="float64")])) == (
        "ParameterList(\n"
        "    (0): Parameter containing: [float32 of size 2]\n"
        "    (1): Parameter containing: [float64 of size 3x4]\n"
        ")"
    )
    assert repr(nn.ParameterDict()) == repr(torch.nn.ParameterDict()) == "ParameterDict()"


BAD = [
    (lambda: nn.ModuleDict({"a.b": nn.ReLU()}), KeyError, r"ModuleDict: module name cannot contain \"\.\", got a\.b"),
    (lambda: nn.ModuleDict({"": nn.ReLU()}), KeyError, r"cannot be an empty string"),
    (lambda: nn.ModuleDict({1: nn.ReLU()}), TypeError, r"module name must be a string, got int"),
    (lambda: nn.ModuleDict({"a": 3}), TypeError, r"ModuleDict: 'a' must be a Module, got int"),
    (lambda: nn.ModuleDict([("a",)]), ValueError, r"element #0 .* \(key, value\) pair"),
    (lambda: nn.ParameterDict({"a.b": tt.ones(1)}), KeyError, r"ParameterDict: parameter name cannot contain"),
    (lambda: nn.ParameterDict({"a": 1.0}), TypeError, r"'a' must be a Parameter or a Tensor, got float"),
    (lambda: nn.ParameterList([np.ones(2)]), TypeError, r"ParameterList: 0 must be a Parameter or a Tensor"),
    (lambda: nn.ParameterList([tt.ones(1)])[1], IndexError, r"index 1 is out of range \(length 1\)"),
    (lambda: nn.ParameterList(tt.ones(3)), TypeError, r"iterable of parameters, got Tensor"),
    (lambda: nn.ModuleDict().missing, AttributeError, r"no attribute or key 'missing'"),
    (lambda: nn.Module().register_parameter("w", tt.ones(1)), TypeError, r"cannot assign Tensor as parameter"),
    (lambda: nn.Module().add_module("x.y", nn.ReLU()), KeyError, r"Module: module name cannot contain"),
]


@pytest.mark.parametrize("call,exc,message", BAD, ids=[str(k) for k in range(len(BAD))])
def test_bad_keys_and_values_are_named(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_register_parameter_and_add_module():
    m = nn.Module()
    m.register_parameter("w", nn.Parameter(tt.ones(2)))
    m.register_parameter("unused", None)
    m.add_module("child", nn.Linear(2, 1))
    assert list(m.state_dict()) == ["w", "child.weight", "child.bias"]
    assert m.unused is None
