"""Logistic regression on two Gaussian blobs, twice from the same start: nn.BCEWithLogitsLoss on
the logits, and nn.BCELoss on torch.sigmoid outputs; both must follow the same path."""

import torch
import torch.nn as nn


class LogisticRegression(nn.Module):
    def __init__(self, n_inputs):
        super().__init__()
        self.linear = nn.Linear(n_inputs, 1)

    def forward(self, x):
        return torch.sigmoid(self.linear(x))


def main():
    torch.manual_seed(0)
    n = 200
    x0 = torch.randn(n, 2) + torch.tensor([-1.5, -1.5])
    x1 = torch.randn(n, 2) + torch.tensor([1.5, 1.5])
    X = torch.cat([x0, x1], dim=0)
    y = torch.cat([torch.zeros(n), torch.ones(n)]).unsqueeze(1)

    logit_model = nn.Linear(2, 1)
    prob_model = LogisticRegression(2)
    prob_model.linear.load_state_dict(logit_model.state_dict())

    runs = [
        (logit_model, nn.BCEWithLogitsLoss()),
        (prob_model, nn.BCELoss()),
    ]
    accuracies = []
    for model, criterion in runs:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        for _ in range(100):
            optimizer.zero_grad()
            loss = criterion(model(X), y)
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            out = model(X)
            predicted = (out > 0).float() if isinstance(model, nn.Linear) else out.round()
            accuracies.append((predicted == y).float().mean().item())
        print(f"{type(criterion).__name__}: loss {loss.item():.4f}, accuracy {accuracies[-1]:.3f}")

    diff = (logit_model.weight - prob_model.linear.weight).abs().max().item()
    print(f"RESULT acc_logits={accuracies[0]:.4f} acc_sigmoid={accuracies[1]:.4f} weight_diff={diff:.2e}")
    assert min(accuracies) >= 0.95
    assert diff < 1e-3
    assert torch.allclose(logit_model.bias, prob_model.linear.bias, atol=1e-3)


if __name__ == "__main__":
    main()
