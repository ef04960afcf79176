"""Gradient modes and evaluation: torch.no_grad() as a block and as a decorator,
torch.set_grad_enabled as a block and a switch, torch.inference_mode(), detach(), gradient
accumulation across backward calls, and Dropout under model.train() / model.eval()."""

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@torch.no_grad()
def evaluate(model, x):
    return model(x)


def main():
    torch.manual_seed(0)
    w = torch.ones(3, requires_grad=True, device=device)

    with torch.no_grad():
        assert not (w * 2).requires_grad and not torch.is_grad_enabled()
    assert torch.is_grad_enabled()
    is_train = False
    with torch.set_grad_enabled(is_train):
        assert not (w * 2).requires_grad
    torch.set_grad_enabled(False)
    frozen = w * 2
    torch.set_grad_enabled(True)
    assert not frozen.requires_grad and (w * 2).requires_grad
    with torch.inference_mode():
        assert not (w * 2).requires_grad
    assert not (w * 2).detach().requires_grad

    for _ in range(2):  # gradients add up until they are zeroed
        (w * torch.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0, 6.0]
    grad_sum = w.grad.sum().item()
    w.grad.zero_()
    assert w.grad.sum().item() == 0.0

    model = nn.Sequential(nn.Linear(100, 100), nn.Dropout(p=0.5)).to(device)
    x = torch.randn(8, 100, device=device)
    model.train()
    a, b = model(x), model(x)
    dense = model[0](x)
    zero_fraction = (a == 0).float().mean().item()
    kept = a != 0
    assert torch.allclose(a[kept], 2 * dense[kept], atol=1e-5)
    assert not torch.equal(a, b) and 0.4 < zero_fraction < 0.6

    model.eval()
    assert not model.training and not model[1].training
    out = evaluate(model, x)
    assert not out.requires_grad and torch.allclose(out, dense)
    with torch.inference_mode():
        assert torch.equal(model(x), out)
    print(f"RESULT zero_fraction={zero_fraction:.3f} grad_sum={grad_sum:.1f}")


if __name__ == "__main__":
    main()
