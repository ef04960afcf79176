"""Datasets and batching, as ``torch.utils.data``: ``Dataset``, ``TensorDataset``, ``Subset``,
``ConcatDataset``, ``random_split``, ``DataLoader`` and ``default_collate``.

``DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)`` yields ``[x_batch, y_batch]`` on
the data's device, in a new order each epoch; ``train, val = random_split(dataset, [0.8, 0.2])``
splits a dataset at random.
"""

from .collate import default_collate
from .dataloader import DataLoader
from .dataset import ConcatDataset, Dataset, Subset, TensorDataset, random_split

__all__ = ["ConcatDataset", "DataLoader", "Dataset", "Subset", "TensorDataset", "default_collate", "random_split"]
