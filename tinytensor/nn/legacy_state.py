"""Converting a pytinytensor 1.x state dict into this version's layout (``Module.load``, ``nn.convert_1x_state``).

What 1.x wrote, and what changes here:

- ``Sequential`` kept its layers in a list attribute, so its keys were ``layers.N.<name>``; here
  it is a ModuleList whose children are ``0``, ``1``, ...: ``layers.N.`` becomes ``N.``, at any
  depth (a key keeps its 1.x name when the module has exactly that name instead).
- ``Linear`` stored ``weight`` as (in, out) and ``bias`` as (1, out) and computed ``x @ W + b``;
  here ``weight`` is (out, in) and ``bias`` (out,), PyTorch's layout: the weight is transposed,
  the bias flattened, and the layer computes the same outputs.
- ``LayerNorm`` named its parameters ``gamma`` and ``beta``; here ``weight`` and ``bias``.

Everything else passes through unchanged (``Embedding.weight`` has the same layout in both).
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
    "(in, out) to (out, in), flattens Linear biases from (1, out) to (out,) and renames LayerNorm's "
    "gamma/beta to weight/bias; it does not convert quantized 1.x layers (their w_q/w_scale/b_data buffers: "
    "quant() dropped the float weights) nor 1.x layers this version lacks (Conv2d, BatchNorm2d, RNN, "
    "MultiHeadAttention, ...), and the model must have the same structure as the 1.x one"
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
        that match no layer pass through unchanged, for ``load_state_dict`` to report.
    """
    own = {name for name, _ in module.named_parameters()} | {name for name, _ in module.named_buffers()}
    owners = dict(module.named_modules())
    out: OrderedDict[str, Array] = OrderedDict()
    for key, array in state.items():
        renamed = _SEQUENTIAL_KEY.sub(r"\1\2.", key)
        if renamed not in own and key in own:
            renamed = key
        prefix, _, name = renamed.rpartition(".")
        owner = owners.get(prefix)
        if owner is not None:
            name, array = owner._from_1x(name, array)
            renamed = f"{prefix}.{name}" if prefix else name
        out[renamed] = array
    return out
