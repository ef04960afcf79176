"""Linear regression with nn.Linear and the old hand-written update loops over
model.parameters(): p.data.add_(...), p.data -= ..., and `p -= ...` under torch.no_grad()."""

import torch
import torch.nn as nn


def make_data(n=200):
    x = torch.rand(n, 1) * 4 - 2
    noise = torch.normal(mean=0.0, std=0.1, size=(n, 1))
    y = 3.0 * x - 2.0 + noise
    return x, y


def fit(x, y, update, epochs=150, lr=0.1):
    model = nn.Linear(1, 1)
    criterion = nn.MSELoss()
    for _ in range(epochs):
        model.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        update(model, lr)
    return model, loss.item()


def update_add_(model, lr):
    for p in model.parameters():
        p.data.add_(p.grad.data, alpha=-lr)


def update_isub(model, lr):
    for p in model.parameters():
        p.data -= lr * p.grad.data


def update_no_grad(model, lr):
    with torch.no_grad():
        for p in model.parameters():
            p -= p.grad * lr


def main():
    torch.manual_seed(0)
    x, y = make_data()
    results = []
    for update in (update_add_, update_isub, update_no_grad):
        model, loss = fit(x, y, update)
        w, b = model.weight.item(), model.bias.item()
        print(f"{update.__name__}: w={w:.3f} b={b:.3f} loss={loss:.5f}")
        results.append((w, b, loss))
        assert abs(w - 3.0) < 0.05 and abs(b + 2.0) < 0.05, (w, b)
        assert loss < 0.02
    # the three loops are the same update: all reach the least-squares line
    w, b, loss = results[0]
    assert all(abs(r[0] - w) < 1e-3 and abs(r[1] - b) < 1e-3 for r in results), results
    print(f"RESULT weight={w:.4f} bias={b:.4f} loss={loss:.5f}")


if __name__ == "__main__":
    main()
