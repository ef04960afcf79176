"""Train a small CNN on scikit-learn's bundled 8x8 digits (no download) with tinytensor.

Needs scikit-learn besides tinytensor: `pip install scikit-learn`, or in a checkout
`pip install --group examples` (pip 25.1 or newer).

    python examples/train_digits_cnn.py                 # CPU, a few seconds, ~98% test accuracy
    python examples/train_digits_cnn.py --device cuda   # on a GPU

Prints a progress line per epoch and, last, "test accuracy: 0.xxxx".
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

try:  # the one need beyond tinytensor: said plainly, not as a traceback
    from sklearn.datasets import load_digits
except ImportError:
    sys.exit(f"{__file__}: needs scikit-learn (its bundled digits): pip install scikit-learn")

import tinytensor as tt
from tinytensor import nn, optim
from tinytensor.nn import functional as F


def split(x, y, test_fraction, rng):
    """A stratified split: the same share of every class goes to the test set."""
    test = np.zeros(len(y), bool)
    for label in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == label))
        test[members[: int(round(len(members) * test_fraction))]] = True
    return x[~test], y[~test], x[test], y[test]


def progress(epoch, epochs, loss, accuracy, seconds, width=30):
    done = int(width * epoch / epochs)
    bar = "#" * done + "." * (width - done)
    print(
        f"\repoch {epoch:3d}/{epochs} [{bar}] loss {loss:.4f} train acc {accuracy:.3f} {seconds:5.1f}s",
        end="" if epoch < epochs else "\n",
        flush=True,
    )


class DigitsCNN(nn.Module):
    """Two 3x3 convolutions (8x8 kept by padding), one 2x2 max pool, two linear layers."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.dropout = nn.Dropout(0.25)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):  # x: (N, 1, 8, 8)
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)  # (N, 32, 4, 4)
        x = tt.flatten(x, 1)
        x = self.dropout(F.relu(self.fc1(x)))
        return self.fc2(x)


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    tt.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # (N, 1, 8, 8); pixel values are 0..16
    x_train, y_train, x_test, y_test = split(x, digits.target.astype(np.int64), 0.2, rng)
    print(f"digits: {len(y_train)} train, {len(y_test)} test, device {args.device}")

    model = DigitsCNN().to(args.device)
    opt = optim.Adam(model.parameters(), lr=args.lr)
    train_x = tt.tensor(x_train, device=args.device)
    train_y = tt.tensor(y_train, device=args.device)

    started = time.monotonic()
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = tt.tensor(rng.permutation(len(y_train)), device=args.device)
        total, correct = 0.0, 0
        for start in range(0, len(y_train), args.batch_size):
            idx = order[start : start + args.batch_size]
            xb, yb = train_x[idx], train_y[idx]
            logits = model(xb)
            loss = nn.cross_entropy(logits, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            correct += int((logits.numpy().argmax(axis=1) == yb.numpy()).sum())
        progress(epoch, args.epochs, total / len(y_train), correct / len(y_train), time.monotonic() - started)

    model.eval()
    with tt.no_grad():
        predictions = model(tt.tensor(x_test, device=args.device)).numpy().argmax(axis=1)
    accuracy = float((predictions == y_test).mean())
    print(f"trained in {time.monotonic() - started:.1f}s")
    print(f"test accuracy: {accuracy:.4f}")
    return accuracy


if __name__ == "__main__":
    sys.exit(0 if main() >= 0.97 else 1)
