"""Learning-rate schedulers with PyTorch's semantics: ``StepLR`` and ``CosineAnnealingLR``.

A scheduler records each group's starting rate as ``group["initial_lr"]`` and performs its first
step in the constructor (``last_epoch`` goes from -1 to 0), so ``get_last_lr()`` is the rate of
epoch 0. Call ``scheduler.step()`` after ``optimizer.step()``, once per epoch (or iteration).
"""

from __future__ import annotations

import math
from typing import Any

from ..argcheck import is_integral, is_real
from .optimizer import Optimizer


class LRScheduler:
    """Base class of the learning-rate schedulers, as PyTorch's ``torch.optim.lr_scheduler.LRScheduler``.

    Subclasses implement ``get_lr()``, the rates for ``self.last_epoch``.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose groups' ``"lr"`` the scheduler sets.
    last_epoch : int, default -1
        -1 to start: each group's current lr is recorded as its ``"initial_lr"``. To resume, the
        index of the last epoch done; the groups must then have ``"initial_lr"`` (load the
        optimizer's state dict first).

    Attributes
    ----------
    last_epoch : int
        The epoch whose rates are set now (0 after the constructor).
    base_lrs : list of float
        Each group's ``"initial_lr"``.
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        name = type(self).__name__
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{name}: {type(optimizer).__name__} is not an Optimizer")
        invalid = f"{name}: invalid last_epoch {last_epoch!r}: must be an int >= -1"
        if isinstance(last_epoch, bool) or not isinstance(last_epoch, int):
            raise ValueError(invalid)
        if last_epoch < -1:
            raise ValueError(invalid)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"{name}: param group {i} has no 'initial_lr', which resuming with last_epoch="
                        f"{last_epoch} needs: load the optimizer's state dict first, or use last_epoch=-1"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True  # the constructor's step keeps the groups' current rates
        self.step()
        self._is_initial = False

    def get_lr(self) -> list[float]:
        """The rates for epoch ``self.last_epoch``, one per parameter group (``step()`` sets
        them; call ``get_last_lr()`` to read the current ones)."""
        raise NotImplementedError(f"{type(self).__name__} does not define get_lr()")

    def step(self) -> None:
        """Advance one epoch and set every group's lr; call it after ``optimizer.step()``.
        PyTorch's deprecated ``epoch`` argument does not exist here."""
        self._step_count += 1
        self.last_epoch += 1
        values = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The rates the last ``step()`` set, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's attributes but the optimizer (save that with its own ``state_dict()``)."""
        return {k: list(v) if isinstance(v, list) else v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a ``state_dict()``; the optimizer stays the one this scheduler was made with."""
        self.__dict__.update(
            {k: list(v) if isinstance(v, list) else v for k, v in state_dict.items() if k != "optimizer"}
        )

    def _current_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]


class StepLR(LRScheduler):
    """Multiply every group's lr by ``gamma`` every ``step_size`` epochs, as PyTorch's.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer to schedule.
    step_size : int
        The number of epochs between decays, > 0.
    gamma : float, default 0.1
        The factor applied at each decay.
    last_epoch : int, default -1
        As in ``LRScheduler``.

    Examples
    --------
    >>> import tinytensor as tt
    >>> opt = tt.optim.SGD(tt.nn.Linear(2, 1).parameters(), lr=1.0)
    >>> sched = tt.optim.StepLR(opt, step_size=2, gamma=0.5)
    >>> rates = []
    >>> for epoch in range(5):
    ...     rates.append(sched.get_last_lr()[0])
    ...     opt.step()
    ...     sched.step()
    >>> rates
    [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        if not is_integral(step_size) or step_size <= 0:
            raise ValueError(f"StepLR: invalid step_size {step_size!r}: must be an int > 0")
        if not is_real(gamma):
            raise ValueError(f"StepLR: invalid gamma {gamma!r}: must be a number")
        self.step_size: int = int(step_size)
        self.gamma: float = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The rates for epoch ``last_epoch``: the current ones, times ``gamma`` when the epoch
        is a multiple of ``step_size`` (relative, as in PyTorch, so changes made to a group's lr
        by others compose)."""
        if self._is_initial or self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]


class CosineAnnealingLR(LRScheduler):
    """Anneal every group's lr from its initial value to ``eta_min`` along a half cosine over
    ``T_max`` epochs (and back up after, without restarts), as PyTorch does:
    ``eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``, computed from the
    previous epoch's rate as PyTorch computes it.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer to schedule.
    T_max : float
        The number of epochs from the initial rate down to ``eta_min``, > 0 (an int usually;
        PyTorch annotates it int, and a float works in both).
    eta_min : float, default 0
        The lowest rate, >= 0.
    last_epoch : int, default -1
        As in ``LRScheduler``.
    """

    def __init__(self, optimizer: Optimizer, T_max: float, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        if not is_real(T_max) or not T_max > 0:
            raise ValueError(f"CosineAnnealingLR: invalid T_max {T_max!r}: must be a number > 0")
        if not is_real(eta_min) or not eta_min >= 0:
            raise ValueError(f"CosineAnnealingLR: invalid eta_min {eta_min!r}: must be a number >= 0")
        self.T_max: float = T_max
        self.eta_min: float = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The rates for epoch ``last_epoch`` on the cosine (from the previous rates, or from
        ``base_lrs`` in closed form right after resuming)."""
        # PyTorch's recursive form (each rate from the previous one), so the sequences agree to
        # the last bit and an lr changed by the user mid-way is annealed from where it is.
        t, T, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and t > 0:  # resumed: the closed form
            return [eta_min + (base - eta_min) * (1 + math.cos(t * math.pi / T)) / 2 for base in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:  # the bottom of the cosine: step back up
            return [
                lr + (base - eta_min) * (1 - math.cos(math.pi / T)) / 2
                for lr, base in zip(self._current_lrs(), self.base_lrs, strict=True)
            ]
        return [
            (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T)) * (lr - eta_min) + eta_min
            for lr in self._current_lrs()
        ]
