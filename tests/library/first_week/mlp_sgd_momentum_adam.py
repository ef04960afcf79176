"""An nn.Module MLP on the three-arm spiral (CS231n's toy data, built with torch.linspace,
sin and cos), trained with nn.CrossEntropyLoss under SGD with momentum and under Adam."""

import torch
import torch.nn as nn
import torch.optim as optim


def spiral(points_per_class=100, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    xs, ys = [], []
    for j in range(classes):
        r = torch.linspace(0.0, 1.0, points_per_class)
        t = torch.linspace(j * 4.0, (j + 1) * 4.0, points_per_class) + torch.randn(points_per_class, generator=g) * 0.2
        xs.append(torch.stack([r * torch.sin(t), r * torch.cos(t)], dim=1))
        ys.append(torch.full((points_per_class,), j, dtype=torch.long))
    return torch.cat(xs), torch.cat(ys)


class MLP(nn.Module):
    def __init__(self, in_features=2, hidden=64, classes=3):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, classes)
        self.act = nn.ReLU()

    def forward(self, x):
        x = self.act(self.fc1(x))
        x = self.act(self.fc2(x))
        return self.out(x)


def train(model, optimizer, X, y, steps=400):
    criterion = nn.CrossEntropyLoss()
    model.train()
    for step in range(steps):
        optimizer.zero_grad()
        loss = criterion(model(X), y)
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        pred = model(X).argmax(dim=1)
    return loss.item(), (pred == y).float().mean().item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(42)
    X, y = spiral()
    X, y = X.to(device), y.to(device)

    sgd_model = MLP().to(device)
    sgd_loss, sgd_acc = train(sgd_model, optim.SGD(sgd_model.parameters(), lr=0.1, momentum=0.9), X, y)
    adam_model = MLP().to(device)
    adam_loss, adam_acc = train(adam_model, optim.Adam(adam_model.parameters(), lr=0.01), X, y)

    print(f"RESULT sgd_acc={sgd_acc:.4f} adam_acc={adam_acc:.4f} sgd_loss={sgd_loss:.4f} adam_loss={adam_loss:.4f}")
    assert sgd_acc >= 0.9 and adam_acc >= 0.9


if __name__ == "__main__":
    main()
