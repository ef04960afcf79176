"""Datasets: anything with ``__len__`` and ``__getitem__``; ``TensorDataset`` over arrays."""

from __future__ import annotations

from ..devices import backend_of
from ..dtypes import numpy_dtype
from ..errors import ShapeError
from ..tensor import Tensor, is_array, wrap


class Dataset:
    """Base class of map-style datasets: ``dataset[i]`` is sample ``i`` for ``0 <= i < len(dataset)``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__()")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} does not define __len__()")


class TensorDataset(Dataset):
    """Samples are rows of tensors of equal length: ``dataset[i] == (t[i] for t in tensors)``.

    Takes Tensors or numpy / CuPy / array_api_strict arrays; arrays are wrapped without a copy, so
    the dataset reads them where they are (on their device). A ``DataLoader`` gathers whole batches
    from ``.tensors`` with one indexed copy per tensor.
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor, got none")
        self.tensors = tuple(_as_tensor(t, k) for k, t in enumerate(tensors))
        lengths = [t.shape[0] for t in self.tensors]
        if len(set(lengths)) > 1:
            raise ShapeError(
                f"TensorDataset: every tensor needs the same length along axis 0, got lengths {lengths} "
                f"(shapes {[t.shape for t in self.tensors]})"
            )

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __repr__(self) -> str:
        parts = ", ".join(f"{t.shape} {t.dtype} on {t.device}" for t in self.tensors)
        return f"TensorDataset({len(self)} samples: {parts})"


def _as_tensor(value, position: int) -> Tensor:
    where = f"TensorDataset: argument {position}"
    if isinstance(value, Tensor):
        tensor = value
    elif is_array(value):
        try:
            backend_of(value)
        except TypeError as exc:
            raise TypeError(f"{where}: {exc}") from None
        tensor = wrap(value)
    else:
        hint = " (tt.tensor(...) converts Python lists)" if isinstance(value, (list, tuple)) else ""
        raise TypeError(
            f"{where} must be a Tensor or a numpy / CuPy / array_api_strict array, got {_type_name(value)}{hint}"
        )
    dtype = numpy_dtype(tensor.dtype)
    if dtype.kind not in "biuf":
        raise TypeError(f"{where} has dtype {dtype}: a TensorDataset holds numbers (bool, int or float)")
    if tensor.ndim == 0:
        raise ShapeError(f"{where} is 0-d: a dataset indexes its samples along axis 0, so it needs at least one axis")
    return tensor


def _type_name(value) -> str:
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
