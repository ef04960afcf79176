"""Index-shaped data for the data-loading tests: a dataset whose sample i is i, and an iterable of
indices that counts how many have been read (how lazily a loader consumes its sampler)."""

from __future__ import annotations

from tinytensor.data import Dataset


class Numbers(Dataset[int]):
    """Sample i is i: a dataset of any size that holds nothing."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i


class Counted:
    """The indices 0..n-1, counting how many have been read."""

    def __init__(self, n):
        self.n, self.read = n, 0

    def __len__(self):
        return self.n

    def __iter__(self):
        for i in range(self.n):
            self.read += 1
            yield i
