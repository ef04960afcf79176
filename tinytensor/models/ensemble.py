"""``Ensemble``: several classifiers that vote, as pytinytensor 1.x's (here also a Module)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import IO, Any

import numpy as np

from .. import creation, serialization
from ..argcheck import is_integral
from ..autograd import no_grad
from ..nn import legacy_state
from ..nn.base import Module, ModuleList
from ..ops import indexing
from ..tensor import Tensor

_VOTING = ("soft", "hard")


class Ensemble(Module):
    """Classifiers that vote, as pytinytensor 1.x's ``Ensemble``: each model maps a batch to
    (N, num_classes) logits; ``"soft"`` voting averages their softmax probabilities, ``"hard"``
    voting takes the class most models predict (a tie goes to the smallest class).

    The models are the children ``models.0``, ``models.1``, ... (a ModuleList), so ``to()``,
    ``parameters()``, ``state_dict()`` and ``train()``/``eval()`` reach them all.

    Parameters
    ----------
    models : iterable of Module
        The classifiers (LeNet, ResNet, a Sequential, ...), at least one, all with the same classes.
    voting_type : str
        ``"soft"`` (default) or ``"hard"``.

    Examples
    --------
    >>> import tinytensor as tt
    >>> from tinytensor import models
    >>> ens = models.Ensemble([tt.nn.Linear(4, 3), tt.nn.Linear(4, 3)])
    >>> ens(tt.randn(5, 4)).shape  # the averaged probabilities
    (5, 3)
    >>> ens.predict(tt.randn(5, 4).numpy()).shape
    (5,)
    >>> len(ens)
    2
    """

    models: ModuleList

    def __init__(self, models: Iterable[Module], voting_type: str = "soft") -> None:
        super().__init__()
        if voting_type not in _VOTING:
            raise ValueError(f"Ensemble(): voting_type must be 'soft' or 'hard', got {voting_type!r}")
        self.models = ModuleList(models)
        if not len(self.models):
            raise ValueError("Ensemble(): models must hold at least one model")
        self.voting_type = voting_type

    def forward(self, x: Tensor) -> Tensor:
        """(N, num_classes): with ``"soft"`` voting the models' mean softmax probabilities
        (differentiable: the ensemble can be trained as one model); with ``"hard"`` voting the share
        of the models that predict each class (no gradient)."""
        if self.voting_type == "soft":
            return self._mean_probabilities(x)
        votes: Tensor | None = None
        for model in self.models:
            logits: Tensor = model(x)
            vote = indexing.one_hot(logits.argmax(dim=1), logits.shape[1]).to(logits.dtype)
            votes = vote if votes is None else votes + vote
        assert votes is not None  # __init__ refuses an empty ensemble
        return votes / len(self.models)

    def _mean_probabilities(self, x: Tensor) -> Tensor:
        total: Tensor | None = None
        for model in self.models:
            logits: Tensor = model(x)
            probs = logits.softmax(dim=1)
            total = probs if total is None else total + probs
        assert total is not None  # __init__ refuses an empty ensemble
        return total / len(self.models)

    def _batches(self, x: object, batch_size: int) -> Iterator[Tensor]:
        """``x`` (a Tensor, an array or nested lists of samples) in batches, on the models' device
        and, for floating-point data, in their dtype (a float64 numpy array feeds a float32 model)."""
        if not is_integral(batch_size) or batch_size < 1:
            raise ValueError(f"Ensemble: batch_size must be a positive int, got {batch_size!r}")
        first = next(self.parameters(), None)
        data = x if isinstance(x, Tensor) else np.asarray(x)
        for start in range(0, len(data), batch_size):
            batch = data[start : start + batch_size]
            if isinstance(batch, Tensor):
                yield batch if first is None else batch.to(first.device)
            else:
                floating = batch.dtype.kind == "f" and first is not None
                yield creation.tensor(
                    batch,
                    dtype=first.dtype if floating and first is not None else None,
                    device=first.device if first is not None else None,
                )

    def _predict_with(self, x: object, batch_size: int, voting: bool) -> np.ndarray[Any, Any]:
        """The models' mean probabilities (``voting=False``) or ``forward``'s output, over ``x`` in
        batches, in eval mode and without a graph; each model's mode is restored afterwards."""
        modes = [m.training for m in self.modules()]
        self.eval()
        try:
            with no_grad():
                parts = [
                    (self(batch) if voting else self._mean_probabilities(batch)).numpy()
                    for batch in self._batches(x, batch_size)
                ]
        finally:
            for module, mode in zip(self.modules(), modes, strict=True):
                object.__setattr__(module, "training", mode)
        return np.concatenate(parts, axis=0) if parts else np.zeros((0, 0))

    def predict_proba(self, x: object, batch_size: int = 32) -> np.ndarray[Any, Any]:
        """The models' mean class probabilities, a numpy array (N, num_classes), whatever the
        voting type (as 1.x's). ``x``: a Tensor or an array of N samples, run in batches of
        ``batch_size`` on the models' device, in eval mode."""
        return self._predict_with(x, batch_size, voting=False)

    def predict(self, x: object, batch_size: int = 32) -> np.ndarray[Any, Any]:
        """The predicted class of each sample, a numpy array (N,): the most probable class of the
        mean probabilities (``"soft"``), or the class most models predict, ties to the smallest
        (``"hard"``)."""
        classes: np.ndarray[Any, Any] = np.argmax(self._predict_with(x, batch_size, voting=True), axis=1)
        return classes

    def evaluate(self, x: object, y: object, batch_size: int = 32) -> float:
        """The ensemble's accuracy on ``x``: the fraction of ``predict(x)`` equal to the labels
        ``y`` (class indices, or one-hot rows)."""
        labels = y.numpy() if isinstance(y, Tensor) else np.asarray(y)
        if labels.ndim > 1:
            labels = np.argmax(labels, axis=1)
        return float(np.mean(self.predict(x, batch_size=batch_size) == labels))

    def compile(self, optimizer: Any, loss: Any) -> Ensemble:
        """1.x's ``compile``: each model's ``compile(optimizer, loss)`` (``optimizer`` best a factory
        such as ``lambda p: AdamW(p)``, so that each model gets its own). It needs ``Module.compile``,
        1.x's Keras-style training API, which this version does not have yet: NotImplementedError."""
        _needs_training_api("compile")
        for model in self.models:
            getattr(model, "compile")(optimizer, loss)  # noqa: B009 - Module.compile comes with the training API
        return self

    def fit(self, x: Any, y: Any = None, **kwargs: Any) -> list[Any]:
        """1.x's ``fit``: each model's ``fit(x, y, **kwargs)`` in turn; returns their histories.
        It needs ``Module.fit``, 1.x's Keras-style training API, which this version does not have
        yet: NotImplementedError (train each model with a loop meanwhile)."""
        _needs_training_api("fit")
        histories = []
        for i, model in enumerate(self.models):
            print(f"=== training model {i + 1}/{len(self.models)} ({type(model).__name__}) ===")
            histories.append(getattr(model, "fit")(x, y, **kwargs))  # noqa: B009 - as compile
        self.histories = histories
        return histories

    def __len__(self) -> int:
        return len(self.models)

    def save(self, path: str | os.PathLike[str] | IO[bytes]) -> None:
        """Write the voting type and every model's state dict to ``path``, a ``.tt`` file
        (``tt.save``: data only, never a pickle); ``load`` reads it back."""
        serialization.save({"voting_type": self.voting_type, "states": [m.state_dict() for m in self.models]}, path)

    def load(self, path: str | os.PathLike[str] | IO[bytes], strict: bool = True) -> Ensemble:  # type: ignore[override]
        """Read a file written by ``save`` (or by pytinytensor 1.x's ``Ensemble.save``, whose models'
        1.x state dicts are converted) into these models, which must be the saved ones' architectures
        in the same order; the voting type is the file's. All or nothing: on any error the models
        keep their values. Returns this ensemble (as 1.x's)."""
        blob = serialization.load(path, map_location="cpu")
        if not isinstance(blob, dict) or not isinstance(blob.get("states"), list) or "voting_type" not in blob:
            raise TypeError(f"Ensemble.load(): {path} does not hold an Ensemble (voting_type and states)")
        states, voting_type = blob["states"], blob["voting_type"]
        if len(states) != len(self.models):
            raise ValueError(f"Ensemble.load(): the file holds {len(states)} models, the ensemble {len(self.models)}")
        if voting_type not in _VOTING:
            raise ValueError(f"Ensemble.load(): voting_type must be 'soft' or 'hard', got {voting_type!r}")
        # load_state_dict gives each tensor a new array, so these detached tensors keep the old values
        previous = [m.state_dict() for m in self.models]
        try:
            for model, state in zip(self.models, states, strict=True):
                if any(isinstance(v, np.ndarray) for v in state.values()):  # 1.x's layout: plain arrays
                    state = legacy_state.convert_state(state, model)
                model.load_state_dict(state, strict=strict)
        except Exception:
            for model, state in zip(self.models, previous, strict=True):
                model.load_state_dict(state, strict=False)
            raise
        self.voting_type = voting_type
        return self

    def extra_repr(self) -> str:
        """``voting_type=...``."""
        return f"voting_type={self.voting_type!r}"


def _needs_training_api(method: str) -> None:
    if getattr(Module, method, None) is None:
        raise NotImplementedError(
            f"Ensemble.{method}() calls each model's {method}(), pytinytensor 1.x's Keras-style training API "
            f"(Module.compile/fit), which this version does not have yet; train each model with a loop "
            "(optimizer.zero_grad(), loss.backward(), optimizer.step()), then use predict/evaluate"
        )


__all__ = ["Ensemble"]
