"""Datasets and batching: ``Dataset``, ``TensorDataset``, ``DataLoader`` and ``default_collate``.

As in ``torch.utils.data``: ``DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)``
yields ``[x_batch, y_batch]`` on the data's device, in a new order each epoch.
"""

from .collate import default_collate
from .dataloader import DataLoader
from .dataset import Dataset, TensorDataset

__all__ = ["DataLoader", "Dataset", "TensorDataset", "default_collate"]
