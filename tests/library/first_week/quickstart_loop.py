"""The Quickstart's training loop (train() and test() over DataLoaders, nn.Flatten, a device,
SGD) on small synthetic 8x8 "images" of 10 classes instead of FashionMNIST."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


def make_images(n, prototypes, g):
    labels = torch.randint(0, 10, (n,), generator=g)
    images = prototypes[labels] + 0.5 * torch.randn(n, 1, 8, 8, generator=g)
    return images, labels


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(8 * 8, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def train(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if batch % 10 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100 * correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return correct, test_loss


def main():
    g = torch.Generator().manual_seed(0)
    prototypes = torch.rand(10, 1, 8, 8, generator=g).round()
    training_data = TensorDataset(*make_images(600, prototypes, g))
    test_data = TensorDataset(*make_images(200, prototypes, g))
    train_dataloader = DataLoader(training_data, batch_size=32, shuffle=True)
    test_dataloader = DataLoader(test_data, batch_size=64)

    torch.manual_seed(0)
    model = NeuralNetwork().to(device)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-1)

    _, first_loss = test(test_dataloader, model, loss_fn)
    epochs = 5
    for t in range(epochs):
        print(f"Epoch {t + 1}\n-------------------------------")
        train(train_dataloader, model, loss_fn, optimizer)
        accuracy, test_loss = test(test_dataloader, model, loss_fn)
    print("Done!")
    print(f"RESULT accuracy={accuracy:.4f} test_loss={test_loss:.4f} first_loss={first_loss:.4f}")
    assert accuracy >= 0.9
    assert test_loss < 0.5 * first_loss


if __name__ == "__main__":
    main()
