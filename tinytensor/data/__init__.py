"""Datasets and batching, as ``torch.utils.data``: ``Dataset``, ``TensorDataset``, ``Subset``,
``ConcatDataset``, ``random_split``, ``DataLoader``, its samplers (``Sampler``,
``SequentialSampler``, ``RandomSampler``, ``SubsetRandomSampler``, ``BatchSampler``),
``default_collate`` and ``get_worker_info``.

``DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)`` yields ``[x_batch, y_batch]`` on
the data's device, in a new order each epoch; ``num_workers=4`` makes the batches in four worker
processes instead (CPU tensors, the same order), seeded per worker as PyTorch seeds them.
``train, val = random_split(dataset, [0.8, 0.2])`` splits a dataset at random.
"""

from .collate import default_collate
from .dataloader import DataLoader
from .dataset import ConcatDataset, Dataset, Subset, TensorDataset, random_split
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler
from .workers import get_worker_info

__all__ = [
    "BatchSampler",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "default_collate",
    "get_worker_info",
    "random_split",
]
