"""Checkpointing in memory: a model with a BatchNorm buffer and its Adam optimizer are saved with
torch.save into a BytesIO, loaded into fresh copies, and the copies then train in lock step with
the originals; copy.deepcopy(state_dict()) keeps a best-so-far snapshot."""

import copy
import io

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.bn = nn.BatchNorm1d(16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.bn(self.fc1(x))))


def train_steps(model, optimizer, x, y, steps):
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    return loss.item()


def main():
    torch.manual_seed(0)
    x = torch.randn(64, 6)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    train_steps(model, optimizer, x, y, 20)

    state = model.state_dict()
    assert "bn.running_mean" in state and "fc1.weight" in state and not state["fc1.weight"].requires_grad
    best = copy.deepcopy(model.state_dict())

    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 20}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer)
    clone = Net()
    clone.load_state_dict(checkpoint["model"])
    clone_optimizer = torch.optim.Adam(clone.parameters(), lr=0.01)
    clone_optimizer.load_state_dict(checkpoint["optimizer"])
    assert checkpoint["epoch"] == 20

    model.eval()
    clone.eval()
    with torch.no_grad():
        assert torch.equal(model(x), clone(x))

    loss_a = train_steps(model, optimizer, x, y, 30)
    loss_b = train_steps(clone, clone_optimizer, x, y, 30)
    diff = max((p - q).abs().max().item() for p, q in zip(model.parameters(), clone.parameters()))
    assert diff < 1e-5 and abs(loss_a - loss_b) < 1e-5
    assert not torch.equal(best["fc1.weight"], model.state_dict()["fc1.weight"])

    model.load_state_dict(best)
    assert torch.equal(model.fc1.weight, best["fc1.weight"])
    print(f"RESULT loss={loss_a:.4f} param_diff={diff:.2e} keys={len(state)}")
    assert loss_a < 0.5


if __name__ == "__main__":
    main()
