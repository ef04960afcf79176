"""Converting a pytinytensor 1.x state dict into this version's layout (``Module.load``, ``nn.convert_1x_state``).

What 1.x wrote, and what changes here:

- ``Sequential`` kept its layers in a list attribute, so its keys were ``layers.N.<name>``; here
  it is a ModuleList whose children are ``0``, ``1``, ...: ``layers.N.`` becomes ``N.``, at any
  depth (a key keeps its 1.x name when the module has exactly that name instead).
- ``Linear`` stored ``weight`` as (in, out) and ``bias`` as (1, out) and computed ``x @ W + b``;
  here ``weight`` is (out, in) and ``bias`` (out,), PyTorch's layout: the weight is transposed,
  the bias flattened, and the layer computes the same outputs.
- ``LayerNorm`` named its parameters ``gamma`` and ``beta``; here ``weight`` and ``bias``.
- ``Conv2d`` stored ``bias`` as (out, 1); here (out,), as ``ConvTranspose2d``'s and ``Conv1d``'s
  (the weight, (out, in, kh, kw), is PyTorch's layout already).
- ``BatchNorm2d`` named its parameters ``gamma`` and ``beta``, of shape (1, C, 1, 1); here
  ``weight`` and ``bias`` (C,). 1.x kept its running statistics out of the state dict: a layer
  whose parameters come from a 1.x file keeps its own running statistics (and batch count), as
  1.x's own ``load`` left them; they are not reported missing. A layer lists such state in its
  ``_1X_UNSAVED`` class attribute.

Everything else passes through unchanged (``Embedding.weight`` has the same layout in both;
``ResidualBlock``'s ``conv1``/``bn1``/``conv2``/``bn2``/``downsample`` and the models of
``tinytensor.models`` keep 1.x's names and layer order).
Each layer converts its own entries (``Module._from_1x``), so a square weight is transposed
exactly when it belongs to a Linear. What is not converted is listed in
``LIMITS``, which ``Module.load`` appends to the error that ``load_state_dict`` raises for keys or
shapes that still do not match.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..array_types import Array

if TYPE_CHECKING:  # base imports this module
    from .base import Module

LIMITS = (
    "the 1.x conversion renames Sequential's 'layers.N.' to 'N.', transposes Linear weights from 1.x's "
    "(in, out) to (out, in), flattens Linear biases from (1, out) and Conv2d biases from (out, 1) to (out,), "
    "renames LayerNorm's and BatchNorm2d's gamma/beta to weight/bias (BatchNorm2d's from (1, C, 1, 1) to (C,)) "
    "and keeps the model's own BatchNorm running statistics, which 1.x never saved; it does not convert "
    "quantized 1.x layers (their w_q/w_scale/b_data buffers: quant() dropped the float weights) nor 1.x layers "
    "this version lacks (RNN, MultiHeadAttention, ...), and the model must have the same structure as the 1.x one"
)

_SEQUENTIAL_KEY = re.compile(r"(^|\.)layers\.(\d+)\.")


def convert_state(state: Mapping[str, Array], module: Module) -> OrderedDict[str, Array]:
    """A pytinytensor 1.x state dict in ``module``'s layout, ready for ``load_state_dict``.

    Parameters
    ----------
    state : Mapping[str, numpy.ndarray]
        What 1.x saved (``tt.load`` of a 1.x file gives it): name -> array.
    module : Module
        The model to load it into, built as the 1.x model was (same layers, same order).

    Returns
    -------
    OrderedDict[str, numpy.ndarray]
        The entries renamed and reshaped as this version's layers name and shape them; entries
        that match no layer pass through unchanged, for ``load_state_dict`` to report. A layer
        with 1.x entries gets its own current values for the state 1.x never saved
        (``_1X_UNSAVED``: BatchNorm's running statistics), so that a strict load keeps them.
    """
    own = {name for name, _ in module.named_parameters()} | {name for name, _ in module.named_buffers()}
    owners = dict(module.named_modules())
    out: OrderedDict[str, Array] = OrderedDict()
    converted: dict[str, Module] = {}  # the layers that had 1.x entries, by name
    for key, array in state.items():
        renamed = _SEQUENTIAL_KEY.sub(r"\1\2.", key)
        if renamed not in own and key in own:
            renamed = key
        prefix, _, name = renamed.rpartition(".")
        owner = owners.get(prefix)
        if owner is not None:
            name, array = owner._from_1x(name, array)
            renamed = f"{prefix}.{name}" if prefix else name
            converted[prefix] = owner
        out[renamed] = array
    for prefix, owner in converted.items():
        for name in getattr(owner, "_1X_UNSAVED", ()):
            kept = getattr(owner, name, None)
            key = f"{prefix}.{name}" if prefix else name
            if kept is not None and key not in out:
                out[key] = kept._data
    return out
