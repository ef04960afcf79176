"""The optimizers' update rules: steps against torch.optim, and on every device, a module moved
with .to() after its optimizer made state keeps training exactly as before.

Construction, parameter groups and step()'s checks are in test_optimizer_api.py, state dicts in
test_optimizer_state.py.
"""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn, optim

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.5, dampening=0.3, weight_decay=0.1)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.05)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, eps=1e-6)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1)),
    ("Adadelta", dict(rho=0.0)),  # each average holds only the latest value
    ("Adadelta", dict(lr=2.0, rho=1.0)),  # both averages stay zero: delta = g, plain SGD
]


def _pair(torch, seed=0):
    rng = np.random.default_rng(seed)
    w1, b1 = rng.standard_normal((5, 4)), rng.standard_normal(5)
    w2, b2 = rng.standard_normal((3, 5)), rng.standard_normal(3)
    ours = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).double()
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).double()
    ours.load_state_dict({"0.weight": w1, "0.bias": b1, "2.weight": w2, "2.bias": b2})
    theirs.load_state_dict(
        {k: torch.tensor(v) for k, v in {"0.weight": w1, "0.bias": b1, "2.weight": w2, "2.bias": b2}.items()}
    )
    return ours, theirs, rng


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_steps_match_torch(torch, name, kwargs):
    ours, theirs, rng = _pair(torch)
    opt = getattr(optim, name)(ours.parameters(), **kwargs)
    topt = getattr(torch.optim, name)(theirs.parameters(), **kwargs)
    for _ in range(6):
        x = rng.standard_normal((8, 4))
        y = rng.integers(0, 3, 8)
        opt.zero_grad()
        nn.cross_entropy(ours(tt.tensor(x)), y).backward()
        opt.step()
        topt.zero_grad()
        torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y)).backward()
        topt.step()
    for (name_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=False):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=name_)


def _run(device_after_two_steps, opt_name):
    tt.manual_seed(5)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = getattr(optim, opt_name)(model.parameters(), lr=0.05, **({"momentum": 0.9} if opt_name == "SGD" else {}))
    rng = np.random.default_rng(0)
    device = "cpu"
    for step in range(5):
        if step == 2:
            device = device_after_two_steps
            model.to(device)
        x = tt.tensor(rng.standard_normal((6, 4)).astype(np.float32), device=device)
        y = tt.tensor(rng.integers(0, 3, 6), device=device)
        opt.zero_grad()
        nn.cross_entropy(model(x), y).backward()
        opt.step()
    for p in model.parameters():
        assert p.device == x.device
        for value in opt.state[id(p)].values():
            if hasattr(value, "shape"):
                assert tt.tensor(value).device == p.device
    return [p.numpy() for p in model.parameters()]


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW", "Adadelta"])
def test_optimizer_state_follows_module_to(device, opt_name):
    reference = _run("cpu", opt_name)
    moved = _run(device, opt_name)
    for a, b in zip(reference, moved, strict=False):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adadelta"])
def test_defaults_match_torch(torch, name):
    """A group given no hyperparameters gets PyTorch's defaults (SGD has none for lr here)."""
    ours = getattr(optim, name)([nn.Parameter(np.zeros(2))]).param_groups[0]
    theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))]).param_groups[0]
    assert {k: v for k, v in ours.items() if k != "params"} == {k: theirs[k] for k in ours if k != "params"}
