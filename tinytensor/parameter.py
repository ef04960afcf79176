"""Parameter: a tensor that a Module registers and optimizers update (``tt.nn.Parameter``).

It lives below ``nn`` and ``serialization`` so that both can name it: a saved Parameter loads back
as one.
"""

from __future__ import annotations

from .tensor import Tensor


class Parameter(Tensor):
    """A tensor that a Module registers and optimizers update; requires grad by default."""

    __slots__ = ()

    def __init__(self, data: object, requires_grad: bool = True) -> None:
        # a tensor's or array's dtype is kept (a float64 parameter stays float64); numbers become float32
        super().__init__(data, dtype=getattr(data, "dtype", None))
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter(" + super().__repr__()[len("Tensor(") :]
