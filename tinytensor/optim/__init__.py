"""Optimizers (SGD, Adam, AdamW, Adadelta) and learning-rate schedulers (``optim.lr_scheduler``)."""

from __future__ import annotations

from . import lr_scheduler
from .adadelta import Adadelta
from .adam import Adam, AdamW
from .lr_scheduler import CosineAnnealingLR, LRScheduler, StepLR
from .optimizer import Optimizer
from .sgd import SGD

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "Adadelta",
    "lr_scheduler",
    "LRScheduler",
    "StepLR",
    "CosineAnnealingLR",
]
