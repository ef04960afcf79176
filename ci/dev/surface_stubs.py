"""Write the type stubs of Tensor's operator surface from its one declaration (tinytensor/ops/surface.py):
``tinytensor/_surface.pyi`` (Tensor's op methods and the ``tt.*`` functions), ``tinytensor/_activations.pyi``
(the same for the activations) and ``tinytensor/nn/functional.pyi``; and the table of every op,
``docs/operations.md`` (``ci.dev.operations_doc``). ``--check`` writes nothing and fails when one is
out of date.

    python -m ci.dev.surface_stubs [--check]
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

from . import operations_doc
from .operations_doc import returns

HEADER = (
    "# Generated from tinytensor/ops/surface.py by `python -m ci.dev.surface_stubs`: do not edit.\n"
    "# The test suite fails when it is out of date.\n"
)
# object's own comparison operators return bool; a tensor's are elementwise
_OVERRIDES = {"__eq__", "__ne__"}
# the types a return annotation may name beyond builtins and Tensor, and their modules in the package
_RETURN_TYPES = {"ValuesIndices": "ops.reduce"}


class _Default:
    def __repr__(self) -> str:
        return "..."


def _signature(fn, *, first: str | None = None) -> str:
    """``fn``'s parameters without annotations or default values (stubs write ``...``), the first
    one renamed to ``first`` where given."""
    sig = inspect.signature(inspect.unwrap(fn))
    params = [
        p.replace(annotation=inspect.Parameter.empty, default=_Default() if p.default is not p.empty else p.empty)
        for p in sig.parameters.values()
    ]
    if first:
        params = [params[0].replace(name=first), *params[1:]]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def _imports(text: str, package: str) -> str:
    """The import lines for the return types ``text`` names (``package``: "." or "..")."""
    return "".join(
        f"from {package}{module} import {name}\n" for name, module in _RETURN_TYPES.items() if f"-> {name}" in text
    )


def _def(name: str, fn, *, first: str | None = None, indent: str = "") -> str:
    ignore = "  # type: ignore[override]" if name in _OVERRIDES else ""
    return f"{indent}def {name}{_signature(fn, first=first)} -> {returns(name, fn)}: ...{ignore}\n"


def _functions(ops, *, listed: bool = True) -> str:
    text = "__all__ = [\n" + "".join(f'    "{op.name}",\n' for op in ops) + "]\n\n" if listed else ""
    # the module-level form's first argument is ``input`` where it converts it (tensor.accepts_arrays)
    return text + "".join(_def(op.name, op.fn, first="input" if op.converts_first else None) for op in ops)


def _methods(ops) -> str:
    return "".join(_def(name, op.fn, first="self", indent="    ") for op in ops for name in op.methods)


def stubs() -> dict:
    """{path: text} of the stubs beside the tinytensor this process imports, from its table (run from
    the repository root: the checkout's). The activations (activation_math.ACTIVATIONS: methods, tt.* and
    nn.functional.*) have a stub of their own, so that adding one changes only that generated file."""
    import tinytensor
    from tinytensor.activation_math import ACTIVATIONS
    from tinytensor.ops import surface

    package = Path(tinytensor.__file__).parent

    activations = [op for op in surface.OPS if op.name in ACTIVATIONS]
    others = [op for op in surface.OPS if op.name not in ACTIVATIONS]
    properties = "".join(f"    @property\n    def {name}(self) -> Tensor: ...\n" for name in surface.PROPERTIES)
    surface_defs = (
        _functions([op for op in others if op.tt])
        + "\nclass TensorOps(ActivationMethods):\n"
        + _methods(others)
        + properties
    )
    functional_defs = _functions([op for op in others if op.functional], listed=False)
    return {
        package / "_activations.pyi": HEADER
        + "from .tensor import Tensor\n\n"
        + _functions(activations)
        + "\nclass ActivationMethods:\n"
        + _methods(activations),
        package / "_surface.pyi": HEADER
        + "from ._activations import ActivationMethods\n"
        + _imports(surface_defs, ".")
        + "from .tensor import Tensor\n\n"
        + surface_defs,
        # no __all__: the module is this stub's defs and the activations it re-exports
        package / "nn" / "functional.pyi": HEADER
        + "from .._activations import *\n"
        + _imports(functional_defs, "..")
        + "from ..tensor import Tensor\n\n"
        + functional_defs,
    }


def stale(files: dict) -> list:
    """The paths of ``files`` ({path: text}) whose contents differ from the text."""
    return [path for path, text in files.items() if not path.exists() or path.read_text() != text]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when a stub is out of date; write nothing")
    args = parser.parse_args(argv)
    files = {**stubs(), operations_doc.PATH: operations_doc.text()}
    out_of_date = stale(files)
    if args.check and out_of_date:
        print(f"out of date: {', '.join(map(str, out_of_date))}; run python -m ci.dev.surface_stubs", file=sys.stderr)
        return 1
    for path in out_of_date:
        path.write_text(files[path])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
