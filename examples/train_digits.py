"""Train an MLP on scikit-learn's bundled 8x8 digits (no download) with tinytensor.

Needs scikit-learn besides tinytensor: `pip install scikit-learn`, or in a checkout
`pip install --group examples` (pip 25.1 or newer).

    python examples/train_digits.py                 # CPU, about 10 s, ~97% test accuracy
    python examples/train_digits.py --device cuda   # on a GPU

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


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    tt.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)  # pixel values are 0..16
    x_train, y_train, x_test, y_test = split(x, digits.target.astype(np.int64), 0.2, rng)
    print(f"digits: {len(y_train)} train, {len(y_test)} test, device {args.device}")

    model = nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 64), nn.GELU(), nn.Linear(64, 10)
    ).to(args.device)
    opt = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
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
    sys.exit(0 if main() >= 0.95 else 1)
