"""Train a digits classifier the PyTorch way, then save it, reload it and check the reload.

Needs scikit-learn besides tinytensor: `pip install scikit-learn`, or in a checkout
`pip install --group examples` (pip 25.1 or newer).

Uses scikit-learn's bundled 8x8 digits (no download) and tinytensor's training toolkit: a
DataLoader over a TensorDataset, CrossEntropyLoss with label smoothing, AdamW with a cosine
learning-rate schedule, early stopping on a validation split, a progress bar, and a checkpoint.

    python examples/train_digits_loader.py                  # CPU, a few seconds, ~97% test accuracy
    python examples/train_digits_loader.py --device cuda    # on a GPU
    python examples/train_digits_loader.py --out ckpt/      # keep the checkpoint (else a temporary folder)

The last lines are "test accuracy: 0.xxxx" and "reload check passed: ..."; the exit status is
non-zero if the reloaded model predicts differently or the accuracy is below 0.9.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

try:  # the one need beyond tinytensor: said plainly, not as a traceback
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
except ImportError:
    sys.exit(f"{__file__}: needs scikit-learn (its bundled digits): pip install scikit-learn")

import tinytensor as tt
from tinytensor import nn, optim
from tinytensor.data import DataLoader, TensorDataset
from tinytensor.utils import EarlyStopping, progress_bar


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 10))


def evaluate(model, loss_fn, x, y):
    """(loss, accuracy) on a whole split, without building a graph."""
    model.eval()
    with tt.no_grad():
        logits = model(x)
        loss = loss_fn(logits, y).item()
    accuracy = (logits.argmax(dim=1) == y).float().mean().item()
    return loss, accuracy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--out", help="folder for the checkpoint (default: a temporary folder)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    device = args.device
    tt.manual_seed(args.seed)  # weights and dropout

    # 1797 images of 64 pixels (0..16): 60% train, 20% validation, 20% test, stratified by class.
    digits = load_digits()
    x, y = (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, stratify=y, random_state=args.seed)
    x_train, x_val, y_train, y_val = train_test_split(
        x_train, y_train, test_size=0.25, stratify=y_train, random_state=args.seed
    )
    # Everything lives on the device from the start; the loader gathers batches there, in a new
    # order every epoch, repeatable from its own generator's seed.
    x_val, y_val = tt.tensor(x_val, device=device), tt.tensor(y_val, device=device)
    x_test, y_test = tt.tensor(x_test, device=device), tt.tensor(y_test, device=device)
    train_set = TensorDataset(tt.tensor(x_train, device=device), tt.tensor(y_train, device=device))
    loader = DataLoader(train_set, batch_size=64, shuffle=True, generator=tt.Generator().manual_seed(args.seed))
    print(f"digits: {len(train_set)} train, {len(y_val)} validation, {len(y_test)} test, device {device}")

    model = make_model().to(device)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
    optimizer = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    stopper = EarlyStopping(model, patience=3, min_delta=1e-3)  # keeps the best epoch's weights

    started = time.monotonic()
    for epoch in range(1, args.epochs + 1):
        model.train()
        # The bar is drawn only on a terminal (quiet in logs); leave=False clears it after the epoch.
        for xb, yb in progress_bar(loader, prefix=f"epoch {epoch}", leave=False):
            loss = loss_fn(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()  # once per epoch, after the optimizer

        val_loss, val_acc = evaluate(model, loss_fn, x_val, y_val)
        print(f"epoch {epoch:2d}  lr {scheduler.get_last_lr()[0]:.5f}  val loss {val_loss:.4f}  val acc {val_acc:.3f}")
        if stopper(val_loss):
            best = stopper.best_epoch  # None when no epoch had a finite loss
            where = "no epoch had a finite loss" if best is None else f"back to epoch {best + 1}"
            print(f"early stop: no improvement for {stopper.patience} epochs; {where}")
            break
    stopper.restore()  # the best epoch's weights, also when all the epochs ran
    print(f"trained in {time.monotonic() - started:.1f}s")

    _, test_acc = evaluate(model, loss_fn, x_test, y_test)
    print(f"test accuracy: {test_acc:.4f}")

    # Save, then load into a freshly built model (new random weights) and compare on the test set.
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.out or tmp) / "digits_mlp.tt"
        path.parent.mkdir(parents=True, exist_ok=True)
        model.save(path)
        print(f"saved {path} ({path.stat().st_size} bytes)")

        fresh = make_model().to(device)
        fresh.load(path)  # onto fresh's device, in its dtype
        fresh.eval()

    model.eval()
    with tt.no_grad():
        expected = model(x_test).argmax(dim=1).numpy()
        got = fresh(x_test).argmax(dim=1).numpy()
    same_weights = all(
        np.array_equal(a.numpy(), b.numpy())
        for a, b in zip(model.state_dict().values(), fresh.state_dict().values(), strict=True)
    )
    if not same_weights or not np.array_equal(expected, got):
        print(
            f"reload check FAILED: weights identical: {same_weights}, "
            f"{int((expected != got).sum())} of {len(got)} test predictions differ",
            file=sys.stderr,
        )
        return 1
    print(
        f"reload check passed: {len(model.state_dict())} tensors identical, all {len(got)} test predictions identical"
    )
    if test_acc < 0.9:
        print(f"test accuracy {test_acc:.4f} is below 0.9", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
