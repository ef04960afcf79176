"""A two-layer ReLU network on random data, written with tensors and autograd only: x.mm(w),
clamp(min=0), a summed squared error, and `w -= lr * w.grad` / `w.grad.zero_()` by hand."""

import torch


def main():
    dtype = torch.float
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(1)

    # N is batch size; D_in is input dimension; H is hidden dimension; D_out is output dimension.
    N, D_in, H, D_out = 64, 100, 50, 10

    x = torch.randn(N, D_in, device=device, dtype=dtype)
    y = torch.randn(N, D_out, device=device, dtype=dtype)

    w1 = torch.randn(D_in, H, device=device, dtype=dtype, requires_grad=True)
    w2 = torch.randn(H, D_out, device=device, dtype=dtype, requires_grad=True)

    learning_rate = 1e-5
    losses = []
    for t in range(300):
        y_pred = x.mm(w1).clamp(min=0).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        if t % 100 == 99:
            print(t, loss.item())

        loss.backward()
        with torch.no_grad():
            w1 -= learning_rate * w1.grad
            w2 -= learning_rate * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()

    ratio = losses[-1] / losses[0]
    print(f"RESULT initial_loss={losses[0]:.2f} final_loss={losses[-1]:.4f} ratio={ratio:.6f}")
    assert ratio < 1e-2
    assert w1.grad is not None and float(w1.grad.abs().sum()) == 0.0


if __name__ == "__main__":
    main()
