"""Optimizer steps against torch.optim, and state that follows a module moved with .to()."""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn, optim

torch = pytest.importorskip("torch", reason="PyTorch (the test oracle) is installed only on Python 3.11")

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.5, dampening=0.3, weight_decay=0.1)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.05)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.3, eps=1e-6)),
]


def _pair(seed=0):
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
def test_steps_match_torch(name, kwargs):
    ours, theirs, rng = _pair()
    opt = getattr(optim, name)(ours.parameters(), **kwargs)
    topt = getattr(torch.optim, name)(theirs.parameters(), **kwargs)
    for _ in range(6):
        x = rng.standard_normal((8, 4))
        y = rng.integers(0, 3, 8)
        opt.zero_grad()
        nn.cross_entropy(ours(tt.Tensor(x)), y).backward()
        opt.step()
        topt.zero_grad()
        torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y)).backward()
        topt.step()
    for (name_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=False):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=name_)


def test_bad_hyperparameters_are_named():
    p = [nn.Parameter(np.zeros(2))]
    with pytest.raises(ValueError, match="lr"):
        optim.SGD(p, lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="betas"):
        optim.Adam(p, betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="empty"):
        optim.Adam([])
