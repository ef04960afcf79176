"""A custom Dataset of variable-length sequences, a padding collate_fn that also returns the
lengths, a DataLoader with two worker processes, and a classifier that pools over the padded
batch with a length mask (masked mean and masked_fill before max)."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class SequenceDataset(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        direction = torch.tensor([1.0, 0.0, 0.0, 0.0])
        self.items = []
        for i in range(n):
            length = int(torch.randint(3, 12, (1,), generator=g))
            label = i % 2
            seq = torch.randn(length, 4, generator=g) + (1.0 if label else -1.0) * direction
            self.items.append((seq, label))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return self.items[idx]


def pad_collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = torch.zeros(len(seqs), int(lengths.max()), seqs[0].size(1))
    for i, s in enumerate(seqs):
        padded[i, : len(s)] = s
    return padded, lengths, torch.tensor(labels)


class PoolClassifier(nn.Module):
    def __init__(self, features=4, classes=2):
        super().__init__()
        self.fc = nn.Linear(2 * features, classes)

    def forward(self, padded, lengths):
        mask = torch.arange(padded.size(1))[None, :] < lengths[:, None]
        mean = (padded * mask.unsqueeze(-1)).sum(dim=1) / lengths.unsqueeze(1)
        biggest = padded.masked_fill(~mask.unsqueeze(-1), float("-inf")).max(dim=1).values
        return self.fc(torch.cat([mean, biggest], dim=1))


def main():
    torch.manual_seed(0)
    train_loader = DataLoader(
        SequenceDataset(256, seed=1), batch_size=16, shuffle=True, collate_fn=pad_collate, num_workers=2
    )
    test_loader = DataLoader(SequenceDataset(128, seed=2), batch_size=32, collate_fn=pad_collate)

    model = PoolClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(4):
        for padded, lengths, labels in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(padded, lengths), labels)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")

    model.eval()
    correct = total = 0
    with torch.no_grad():
        for padded, lengths, labels in test_loader:
            assert padded.shape[0] == lengths.shape[0] == labels.shape[0]
            correct += (model(padded, lengths).argmax(dim=1) == labels).sum().item()
            total += labels.numel()
    accuracy = correct / total
    print(f"RESULT accuracy={accuracy:.4f} total={total}")
    assert total == 128 and accuracy >= 0.9


if __name__ == "__main__":
    main()
