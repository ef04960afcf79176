"""Fit y = sin(x) with a third-order polynomial: autograd computes the gradients, the weights are
updated by hand under torch.no_grad() (the "Learning PyTorch with Examples" autograd tutorial)."""

import math

import torch


def main():
    torch.manual_seed(0)
    dtype = torch.float
    device = torch.device("cpu")

    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)

    a = torch.randn((), device=device, dtype=dtype, requires_grad=True)
    b = torch.randn((), device=device, dtype=dtype, requires_grad=True)
    c = torch.randn((), device=device, dtype=dtype, requires_grad=True)
    d = torch.randn((), device=device, dtype=dtype, requires_grad=True)

    learning_rate = 1e-6
    initial_loss = None
    for t in range(1500):
        y_pred = a + b * x + c * x**2 + d * x**3
        loss = (y_pred - y).pow(2).sum()
        if initial_loss is None:
            initial_loss = loss.item()
        if t % 300 == 299:
            print(t, loss.item())
        loss.backward()

        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad.zero_()
            b.grad.zero_()
            c.grad.zero_()
            d.grad.zero_()

    final_loss = loss.item()
    print(f"Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
    print(f"RESULT initial_loss={initial_loss:.4f} final_loss={final_loss:.4f} b={b.item():.4f} d={d.item():.4f}")
    assert final_loss < 0.1 * initial_loss
    assert final_loss < 100.0
    assert 0.6 < b.item() < 1.1 and -0.15 < d.item() < -0.05


if __name__ == "__main__":
    main()
