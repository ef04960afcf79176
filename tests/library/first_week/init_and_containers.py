"""Module containers and weight initialisation: nn.Sequential, nn.ModuleDict and nn.ParameterList
in one model, model.apply(init_fn) with nn.init.xavier_uniform_, kaiming_normal_ and zeros_,
then a short Adam run that must train every part."""

import math

import torch
import torch.nn as nn


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU())
        self.heads = nn.ModuleDict({"sum": nn.Linear(32, 1), "prod": nn.Linear(32, 1)})
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(1)) for _ in range(2)])

    def forward(self, x):
        h = self.trunk(x)
        outs = [self.heads[name](h) * scale for name, scale in zip(self.heads.keys(), self.scales)]
        return torch.cat(outs, dim=1)


def init_weights(m):
    if isinstance(m, nn.Linear):
        if m.out_features == 1:
            nn.init.xavier_uniform_(m.weight)
        else:
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
        nn.init.zeros_(m.bias)


def main():
    torch.manual_seed(0)
    model = MultiHead()
    model.apply(init_weights)

    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    names = [name for name, _ in model.named_parameters()]
    print(n_params, names)
    assert n_params == 4 * 32 + 32 + 32 * 32 + 32 + 2 * 33 + 2
    assert "heads.sum.weight" in names and "scales.1" in names and "trunk.2.bias" in names
    assert all(torch.equal(m.bias, torch.zeros_like(m.bias)) for m in model.modules() if isinstance(m, nn.Linear))
    bound = math.sqrt(6.0 / (32 + 1))
    assert model.heads["prod"].weight.abs().max().item() <= bound

    big = nn.Linear(400, 300)
    big.apply(init_weights)
    std = big.weight.std().item()
    assert abs(std - math.sqrt(2.0 / 400)) < 0.1 * math.sqrt(2.0 / 400), std

    x = torch.randn(256, 4)
    target = torch.stack([x.sum(dim=1), x[:, 0] * x[:, 1]], dim=1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    for step in range(300):
        optimizer.zero_grad()
        loss = criterion(model(x), target)
        if step == 0:
            initial_loss = loss.item()
        loss.backward()
        optimizer.step()
    assert all(p.grad is not None for p in model.parameters())
    print(
        f"RESULT n_params={n_params} initial_loss={initial_loss:.4f} final_loss={loss.item():.4f} kaiming_std={std:.4f}"
    )
    assert loss.item() < 0.1 * initial_loss


if __name__ == "__main__":
    main()
