"""A tour of everyday tensor operations on small fixed inputs, each checked against the value
worked out by hand: view, type, cat, chunk, split, cumsum, sort, topk, gather, masked_fill,
F.one_hot, argmax, eye, norm, allclose, equal, is_tensor, nelement."""

import torch
import torch.nn.functional as F


def main():
    x = torch.arange(12).view(3, 4).type(torch.float32)
    assert torch.is_tensor(x) and not torch.is_tensor([1, 2]) and x.nelement() == 12
    assert x.dtype == torch.float32 and x.shape == (3, 4) and x.view(-1, 2).shape == (6, 2)

    left, right = x.chunk(2, dim=1)
    top, rest = x.split([1, 2], dim=0)
    assert torch.equal(torch.cat([left, right], dim=1), x) and rest.shape == (2, 4)
    assert torch.equal(torch.cat([top, rest]), x)

    cs = x.cumsum(dim=1)
    assert cs[0].tolist() == [0.0, 1.0, 3.0, 6.0] and cs[:, -1].tolist() == [6.0, 22.0, 38.0]

    v = torch.tensor([3.0, 1.0, 2.0, 5.0, 4.0])
    values, indices = torch.sort(v, descending=True)
    assert values.tolist() == [5.0, 4.0, 3.0, 2.0, 1.0] and indices.tolist() == [3, 4, 0, 2, 1]
    best = torch.topk(v, k=2)
    assert best.values.tolist() == [5.0, 4.0] and best.indices.tolist() == [3, 4]

    picked = torch.gather(x, 1, torch.tensor([[0], [2], [3]]))
    assert picked.squeeze(1).tolist() == [0.0, 6.0, 11.0]
    masked = x.masked_fill(x > 6, -1.0)
    assert masked.sum().item() == 21.0 - 5.0

    labels = torch.tensor([0, 2, 1])
    one_hot = F.one_hot(labels, num_classes=3)
    assert one_hot.shape == (3, 3) and torch.equal(one_hot.float()[[0, 2, 1]], torch.eye(3))
    assert torch.equal(one_hot.argmax(dim=1), labels)
    assert x.argmax().item() == 11 and x.argmax(dim=0).tolist() == [2, 2, 2, 2]
    row_max, row_arg = x.max(dim=1)
    assert row_max.tolist() == [3.0, 7.0, 11.0] and row_arg.tolist() == [3, 3, 3]

    assert torch.norm(torch.tensor([3.0, 4.0])).item() == 5.0
    assert torch.allclose(x.softmax(dim=1).sum(dim=1), torch.ones(3))
    assert torch.allclose(x.norm(dim=1), (x**2).sum(dim=1).sqrt())
    assert torch.equal(x.t().t(), x) and not torch.equal(x, x + 1)

    y = torch.stack([x, -x]).permute(1, 0, 2).reshape(3, -1)
    assert y.shape == (3, 8) and y.sum().item() == 0.0
    z = torch.where(x % 2 == 0, x, torch.zeros_like(x))
    assert z.sum().item() == 30.0
    m = x.mean(dim=0, keepdim=True)
    assert m.shape == (1, 4) and m.tolist() == [[4.0, 5.0, 6.0, 7.0]]
    assert (x @ torch.ones(4, 1)).flatten().tolist() == [6.0, 22.0, 38.0]
    assert x.unsqueeze(0).transpose(1, 2).shape == (1, 4, 3)

    checksum = cs.sum().item() + picked.sum().item() + masked.sum().item() + y.abs().sum().item()
    print(
        f"RESULT checksum={checksum:.1f} norm={torch.norm(x).item():.4f} softmax00={x.softmax(dim=1)[0, 0].item():.6f}"
    )


if __name__ == "__main__":
    main()
