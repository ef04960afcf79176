"""``EarlyStopping``: stop when the validation loss stops improving, and bring back the best weights."""

from __future__ import annotations

import copy
import math
import numbers
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..argcheck import int_at_least
from ..devices import backend_of
from ..tensor import Tensor, wrap

if TYPE_CHECKING:
    from ..nn import Module


class EarlyStopping:
    """Call once per epoch with the validation loss; returns True when training should stop.

    An epoch improves when its loss is lower than the best so far by more than ``min_delta`` (a NaN
    loss never does). After ``patience`` epochs in a row without an improvement, ``early_stop``
    becomes True (and stays True), and with ``restore_best_weights`` the model gets back the
    weights of its best epoch. PyTorch has no such class; this is pytinytensor 1.x's.

    Parameters
    ----------
    model : nn.Module
        The model trained: anything with ``state_dict()``, and ``load_state_dict()`` when
        ``restore_best_weights`` is True.
    patience : int, default 5
        Epochs in a row without an improvement before stopping (0: stop at the first epoch that
        does not improve).
    min_delta : float, default 0.0
        How much lower than the best loss so far a loss must be to count as an improvement.
    restore_best_weights : bool, default True
        On stopping, load the best epoch's weights into the model (see ``restore()``).

    Raises
    ------
    TypeError
        A model without ``state_dict()`` (or without ``load_state_dict()`` while
        ``restore_best_weights`` is True), or an argument of the wrong type.
    ValueError
        A negative ``patience``, or a ``min_delta`` that is negative or not finite.

    Notes
    -----
    The attributes are pytinytensor 1.x's: ``best_loss``, ``counter`` (epochs since the last
    improvement), ``early_stop``, ``best_state_dict`` (a copy of the model's state at its best
    epoch, kept on the parameters' devices); ``best_epoch`` counts calls from 0.

    Examples
    --------
    ::

        stopper = EarlyStopping(model, patience=7, min_delta=0.01)
        for epoch in range(100):
            train_one_epoch(model)
            if stopper(evaluate(model)):
                break
    """

    def __init__(self, model: Module, patience: int = 5, min_delta: float = 0.0, restore_best_weights: bool = True):
        if not callable(getattr(model, "state_dict", None)):
            raise TypeError(
                f"EarlyStopping: model must have a state_dict() method (an nn.Module), got {type(model).__name__}"
            )
        if not isinstance(restore_best_weights, (bool, np.bool_)):
            raise TypeError(
                f"EarlyStopping: restore_best_weights must be True or False, got {type(restore_best_weights).__name__}"
            )
        if restore_best_weights and not callable(getattr(model, "load_state_dict", None)):
            raise TypeError(
                f"EarlyStopping: restore_best_weights=True needs a model with load_state_dict(); "
                f"{type(model).__name__} has none"
            )
        self.model = model
        self.patience = int_at_least("EarlyStopping", "patience", patience, 0)
        self.min_delta = _check_min_delta(min_delta)
        self.restore_best_weights = bool(restore_best_weights)
        self.counter = 0
        self.best_loss: float | None = None
        self.best_epoch: int | None = None  # 0-based count of calls at the best loss
        self.early_stop = False
        self.best_state_dict: OrderedDict[str, object] | None = None
        self._epochs = 0

    def __call__(self, val_loss: float | np.number[Any] | Tensor | np.ndarray) -> bool:
        """Record this epoch's validation loss (a number or a one-element Tensor or array); returns
        ``early_stop``, True once ``patience`` epochs in a row have not improved on the best."""
        loss = _as_float(val_loss)
        epoch, self._epochs = self._epochs, self._epochs + 1
        improved = not math.isnan(loss) and (self.best_loss is None or loss < self.best_loss - self.min_delta)
        if improved:
            self.best_loss, self.best_epoch, self.counter = loss, epoch, 0
            if self.restore_best_weights:
                self.best_state_dict = _copy_state(self.model.state_dict())
        else:
            self.counter += 1
            if self.counter >= self.patience and not self.early_stop:
                self.early_stop = True
                if self.restore_best_weights:
                    self.restore()
        return self.early_stop

    def restore(self) -> None:
        """Load the best epoch's weights into the model (done on stopping with restore_best_weights).

        Useful when training ends without stopping early; does nothing before a first finite loss.
        """
        if self.best_state_dict is None:
            return
        # load_state_dict copies values into the parameters, so best_state_dict stays intact.
        self.model.load_state_dict(self.best_state_dict)

    def __repr__(self) -> str:
        return (
            f"EarlyStopping(patience={self.patience}, min_delta={self.min_delta}, best_loss={self.best_loss}, "
            f"counter={self.counter}, early_stop={self.early_stop})"
        )


def _copy_state(state: Mapping[str, object]) -> OrderedDict[str, object]:
    # state_dict() tensors share storage with the parameters: without a copy, the "best" weights
    # would follow every later optimizer step.
    out: OrderedDict[str, object] = OrderedDict()
    for name, value in state.items():
        if isinstance(value, Tensor):
            data = value._data
            out[name] = wrap(backend_of(data).copy(data))
        else:
            out[name] = copy.deepcopy(value)
    return out


def _as_float(val_loss: object) -> float:
    if isinstance(val_loss, (bool, np.bool_)):
        raise TypeError("EarlyStopping: val_loss must be a number or a one-element Tensor, got a bool")
    if isinstance(val_loss, numbers.Real):
        return float(val_loss)
    if isinstance(val_loss, (Tensor, np.ndarray)):
        shape = tuple(val_loss.shape)
        if math.prod(shape) != 1:
            raise ValueError(
                f"EarlyStopping: val_loss must hold one number, got a {type(val_loss).__name__} of shape {shape}"
            )
        return float(val_loss.item())
    raise TypeError(f"EarlyStopping: val_loss must be a number or a one-element Tensor, got {type(val_loss).__name__}")


def _check_min_delta(min_delta: object) -> float:
    if isinstance(min_delta, (bool, np.bool_)) or not isinstance(min_delta, numbers.Real):
        raise TypeError(f"EarlyStopping: min_delta must be a number >= 0, got {type(min_delta).__name__}")
    value = float(min_delta)
    if not value >= 0 or math.isinf(value):
        raise ValueError(f"EarlyStopping: min_delta must be a finite number >= 0, got {value}")
    return value
