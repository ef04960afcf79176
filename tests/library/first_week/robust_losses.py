"""Choosing a loss: a line fitted to data with outliers under F.mse_loss and under
F.smooth_l1_loss, and an imbalanced two-class problem under nn.CrossEntropyLoss with and without
class weights (the minority class's recall)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def fit_line(x, y, loss_fn, steps=300):
    model = nn.Linear(1, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(steps):
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    return model.weight.item(), model.bias.item()


def minority_recall(X, y, criterion, steps=300):
    model = nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(steps):
        optimizer.zero_grad()
        criterion(model(X), y).backward()
        optimizer.step()
    with torch.no_grad():
        pred = model(X).argmax(dim=1)
    return (pred[y == 1] == 1).float().mean().item()


def main():
    torch.manual_seed(0)
    x = torch.linspace(-1, 1, 100).unsqueeze(1)
    y = 2 * x + 1 + 0.05 * torch.randn(100, 1)
    y[::10] += 8.0  # every tenth point is an outlier
    mse_w, mse_b = fit_line(x, y, F.mse_loss)
    huber_w, huber_b = fit_line(x, y, F.smooth_l1_loss)
    mse_err = abs(mse_w - 2) + abs(mse_b - 1)
    huber_err = abs(huber_w - 2) + abs(huber_b - 1)
    print(f"mse: w={mse_w:.3f} b={mse_b:.3f}   smooth_l1: w={huber_w:.3f} b={huber_b:.3f}")

    n_major, n_minor = 450, 50
    X = torch.cat([torch.randn(n_major, 2), torch.randn(n_minor, 2) + 1.5])
    labels = torch.cat([torch.zeros(n_major, dtype=torch.long), torch.ones(n_minor, dtype=torch.long)])
    plain = minority_recall(X, labels, nn.CrossEntropyLoss())
    weighted = minority_recall(X, labels, nn.CrossEntropyLoss(weight=torch.tensor([1.0, 9.0])))
    print(
        f"RESULT mse_err={mse_err:.4f} huber_err={huber_err:.4f} recall_plain={plain:.3f} recall_weighted={weighted:.3f}"
    )
    assert huber_err < 0.5 * mse_err and huber_err < 0.3
    assert weighted > plain + 0.2


if __name__ == "__main__":
    main()
