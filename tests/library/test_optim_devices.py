"""A module moved with .to() after its optimizer made state keeps training exactly as before."""

import numpy as np
import pytest

import tinytensor as tt
from tinytensor import nn, optim


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
        x = tt.Tensor(rng.standard_normal((6, 4)).astype(np.float32), device=device)
        y = tt.Tensor(rng.integers(0, 3, 6), device=device)
        opt.zero_grad()
        nn.cross_entropy(model(x), y).backward()
        opt.step()
    for p in model.parameters():
        assert p.device == x.device
        for value in opt.state[id(p)].values():
            if hasattr(value, "shape"):
                assert tt.Tensor(value).device == p.device
    return [p.numpy() for p in model.parameters()]


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW"])
def test_optimizer_state_follows_module_to(device, opt_name):
    reference = _run("cpu", opt_name)
    moved = _run(device, opt_name)
    for a, b in zip(reference, moved, strict=False):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
