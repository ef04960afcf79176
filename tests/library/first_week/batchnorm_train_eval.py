"""nn.BatchNorm1d in train() and eval() mode: the batch statistics and running averages PyTorch
documents, and a classifier on unnormalised features that is evaluated in eval mode."""

import torch
import torch.nn as nn


def main():
    torch.manual_seed(0)

    bn = nn.BatchNorm1d(3)
    x = torch.randn(64, 3) * 2.0 + 1.0
    out = bn(x)
    assert torch.allclose(out.mean(dim=0), torch.zeros(3), atol=1e-5)
    assert torch.allclose(out.var(dim=0, unbiased=False), torch.ones(3), atol=1e-3)
    assert torch.allclose(bn.running_mean, 0.1 * x.mean(dim=0), atol=1e-5)
    assert torch.allclose(bn.running_var, 0.9 + 0.1 * x.var(dim=0), atol=1e-4)
    assert bn.num_batches_tracked.item() == 1

    bn.eval()
    before = bn.running_mean.clone()
    single = bn(x[:1])
    assert torch.equal(bn.running_mean, before)
    assert torch.allclose(single, bn(x)[:1])

    X = torch.randn(512, 10) * 3.0 + 5.0
    y = (X[:, 0] - X[:, 1] > 0).long()
    model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for _ in range(10):
        model.train()
        perm = torch.randperm(X.size(0))
        for i in range(0, X.size(0), 64):
            idx = perm[i : i + 64]
            optimizer.zero_grad()
            loss = criterion(model(X[idx]), y[idx])
            loss.backward()
            optimizer.step()

    model.eval()
    assert not model.training and not model[1].training
    with torch.no_grad():
        logits = model(X)
        accuracy = (logits.argmax(dim=1) == y).float().mean().item()
        assert torch.allclose(model(X[:5]), logits[:5], atol=1e-5)
    print(f"RESULT accuracy={accuracy:.4f} loss={loss.item():.4f} batches={model[1].num_batches_tracked.item()}")
    assert accuracy >= 0.9
    assert model[1].num_batches_tracked.item() == 80


if __name__ == "__main__":
    main()
