"""The data utilities around a training loop: TensorDataset, random_split with a generator,
Subset, DataLoader (shuffle, drop_last, len), and a StepLR schedule with a validation pass."""

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, Subset, TensorDataset, random_split


def main():
    torch.manual_seed(0)
    X = torch.randn(500, 3)
    true_w = torch.tensor([[1.5], [-2.0], [0.5]])
    y = X @ true_w + 0.1 * torch.randn(500, 1)

    dataset = TensorDataset(X, y)
    features, target = dataset[0]
    assert features.shape == (3,) and target.shape == (1,)
    train_set, val_set = random_split(dataset, [400, 100], generator=torch.Generator().manual_seed(42))
    assert len(train_set) == 400 and len(val_set) == 100
    assert set(train_set.indices).isdisjoint(val_set.indices)
    first_ten = Subset(dataset, list(range(10)))
    assert len(first_ten) == 10 and torch.equal(first_ten[3][0], X[3])

    train_loader = DataLoader(train_set, batch_size=32, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=50)
    assert len(train_loader) == 13 and len(DataLoader(train_set, batch_size=32, drop_last=True)) == 12

    seen = torch.cat([batch for (batch,) in DataLoader(TensorDataset(torch.arange(10)), batch_size=4, shuffle=True)])
    assert sorted(seen.tolist()) == list(range(10))

    model = nn.Linear(3, 1)
    criterion = nn.MSELoss()
    optimizer = optim.SGD(model.parameters(), lr=0.05)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
    for epoch in range(15):
        model.train()
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            val_loss = sum(criterion(model(xb), yb).item() * len(xb) for xb, yb in val_loader) / len(val_set)
        print(f"epoch {epoch + 1:2d}  lr {scheduler.get_last_lr()[0]:.5f}  val_loss {val_loss:.5f}")

    lr = optimizer.param_groups[0]["lr"]
    print(f"RESULT val_loss={val_loss:.5f} lr={lr:.5f} batches={len(train_loader)}")
    assert abs(lr - 0.05 * 0.5**3) < 1e-9
    assert val_loss < 0.02
    assert torch.allclose(model.weight.detach().t(), true_w, atol=0.05)


if __name__ == "__main__":
    main()
