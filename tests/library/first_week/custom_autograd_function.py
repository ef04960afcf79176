"""Custom torch.autograd.Function subclasses in the style of the "Extending PyTorch" notes:
MyReLU and LinearFunction with ctx.save_for_backward, ctx.saved_tensors and
ctx.needs_input_grad, checked against the built-in ops and then trained in a small model."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Function


class MyReLU(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[x < 0] = 0
        return grad_input


class LinearFunction(Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight, bias)
        return x.mm(weight.t()) + bias.unsqueeze(0).expand(x.size(0), -1)

    @staticmethod
    def backward(ctx, grad_output):
        x, weight, bias = ctx.saved_tensors
        grad_x = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(x)
        if ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_x, grad_weight, grad_bias


class MyLinear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) / in_features**0.5)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        return LinearFunction.apply(x, self.weight, self.bias)


def main():
    torch.manual_seed(0)
    x = torch.randn(8, 5)
    w = torch.randn(3, 5, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    MyReLU.apply(LinearFunction.apply(x, w, b)).pow(2).sum().backward()
    mine = (w.grad.clone(), b.grad.clone())
    w.grad, b.grad = None, None
    F.relu(F.linear(x, w, b)).pow(2).sum().backward()
    grad_diff = max((mine[0] - w.grad).abs().max().item(), (mine[1] - b.grad).abs().max().item())
    assert x.grad is None and grad_diff < 1e-5

    layer1, layer2 = MyLinear(1, 32), MyLinear(32, 1)
    inputs = torch.linspace(-2, 2, 128).unsqueeze(1)
    targets = inputs.abs()
    optimizer = torch.optim.Adam(list(layer1.parameters()) + list(layer2.parameters()), lr=0.02)
    for step in range(200):
        optimizer.zero_grad()
        loss = F.mse_loss(layer2(MyReLU.apply(layer1(inputs))), targets)
        if step == 0:
            initial_loss = loss.item()
        loss.backward()
        optimizer.step()
    print(f"RESULT grad_diff={grad_diff:.2e} initial_loss={initial_loss:.4f} final_loss={loss.item():.5f}")
    assert loss.item() < 0.05 * initial_loss


if __name__ == "__main__":
    main()
