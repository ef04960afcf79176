"""Write the type stubs of Tensor's operator surface from its one declaration (tinytensor/ops/surface.py):
``tinytensor/_surface.pyi`` (Tensor's op methods and the ``tt.*`` functions) and
``tinytensor/nn/functional.pyi``. ``--check`` writes nothing and fails when either is out of date.

    python -m ci.dev.surface_stubs [--check]
"""

from __future__ import annotations

import argparse
import inspect
import sys

from ci.project_paths import ROOT

HEADER = (
    "# Generated from tinytensor/ops/surface.py by `python -m ci.dev.surface_stubs`: do not edit.\n"
    "# The test suite fails when it is out of date.\n"
)
# object's own comparison operators return bool; a tensor's are elementwise
_OVERRIDES = {"__eq__", "__ne__"}


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


def _def(name: str, fn, *, first: str | None = None, indent: str = "") -> str:
    returns = "None" if name == "__setitem__" else "Tensor"
    ignore = "  # type: ignore[override]" if name in _OVERRIDES else ""
    return f"{indent}def {name}{_signature(fn, first=first)} -> {returns}: ...{ignore}\n"


def _functions(ops, namespace: str) -> str:
    chosen = [op for op in ops if getattr(op, namespace)]
    text = "__all__ = [\n" + "".join(f'    "{op.name}",\n' for op in chosen) + "]\n\n"
    # the module-level form's first argument is ``input`` where it converts it (tensor.accepts_arrays)
    return text + "".join(_def(op.name, op.fn, first="input" if op.converts_first else None) for op in chosen)


def stubs() -> dict:
    """{path: text} of both stubs, from the table of the tinytensor this process imports (run from
    the repository root: the checkout's)."""
    from tinytensor.ops import surface

    methods = "".join(_def(name, op.fn, first="self", indent="    ") for op in surface.OPS for name in op.methods)
    properties = "".join(f"    @property\n    def {name}(self) -> Tensor: ...\n" for name in surface.PROPERTIES)
    package = (
        HEADER
        + "from .tensor import Tensor\n\n"
        + _functions(surface.OPS, "tt")
        + "\nclass TensorOps:\n"
        + methods
        + properties
    )
    functional = HEADER + "from ..tensor import Tensor\n\n" + _functions(surface.OPS, "functional")
    return {
        ROOT / "tinytensor" / "_surface.pyi": package,
        ROOT / "tinytensor" / "nn" / "functional.pyi": functional,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when a stub is out of date; write nothing")
    args = parser.parse_args(argv)
    stale = []
    for path, text in stubs().items():
        current = path.read_text() if path.exists() else None
        if current == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not args.check:
            path.write_text(text)
    if args.check and stale:
        print(f"out of date: {', '.join(map(str, stale))}; run python -m ci.dev.surface_stubs", file=sys.stderr)
        return 1
    for path in stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
