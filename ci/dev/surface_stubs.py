"""Write the type stubs of Tensor's operator surface from its one declaration (tinytensor/ops/surface.py):
``tinytensor/_surface.pyi`` (Tensor's op methods and the ``tt.*`` functions), ``tinytensor/_activations.pyi``
(the same for the activations) and ``tinytensor/nn/functional.pyi``; and the table of every op,
``docs/operations.md`` (``ci.dev.operations_doc``). ``--check`` writes nothing and fails when one is
out of date.

    python -m ci.dev.surface_stubs [--check]
"""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib
import importlib.util
import inspect
import sys
import typing
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

from . import operations_doc
from .operations_doc import returns

HEADER = (
    "# Generated from tinytensor/ops/surface.py by `python -m ci.dev.surface_stubs`: do not edit.\n"
    "# The test suite fails when it is out of date.\n"
)
PACKAGE = "tinytensor"
# object's own comparison operators return bool; a tensor's are elementwise
_OVERRIDES = {"__eq__", "__ne__"}
# what a stub says for a parameter its function leaves unannotated (mypy reports that function)
_UNANNOTATED = "Any"


@cache
def _module_names(module: str) -> dict[str, tuple[str, str | None]]:
    """The names ``module``'s source imports (``TYPE_CHECKING`` blocks and functions included), each
    as (the absolute module it comes from, its name there; None for ``import x as name``)."""
    package = importlib.import_module(module).__package__
    names: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(ast.parse(inspect.getsource(importlib.import_module(module)))):
        if isinstance(node, ast.ImportFrom):
            source = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            for alias in node.names:
                names[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = (alias.name, None)
    return names


class Imports:
    """The import lines a stub needs for the names its annotations use, each resolved where the
    annotated function's module gets it (an import there, or a definition of its own)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth  # how deep the stub lies in the package: 1 for tinytensor/x.pyi
        self.sources: dict[str, tuple[str, str | None]] = {}

    def annotation(self, annotation: object, module: str) -> str:
        """``annotation`` (the text ``from __future__ import annotations`` keeps) with its names
        imported, as the function's module ``module`` resolves them."""
        if not isinstance(annotation, str):
            raise TypeError(
                f"{module}: annotation {annotation!r} is not text; the module needs `from __future__ import annotations`"
            )
        for node in ast.walk(ast.parse(annotation, mode="eval")):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.annotation(node.value, module)  # a quoted forward reference
            elif isinstance(node, ast.Name) and not hasattr(builtins, node.id):
                self._add(node.id, module)
        return annotation

    def _add(self, name: str, module: str) -> None:
        source = _module_names(module).get(name)
        if source is None:
            if not hasattr(importlib.import_module(module), name):
                raise NameError(f"{module}: an annotation names {name!r}, which the module neither defines nor imports")
            source = (module, name)
        if (
            source[0] == "typing"
            and source[1] is not None
            and hasattr(importlib.import_module("collections.abc"), source[1])
        ):
            source = ("collections.abc", source[1])  # one spelling for the stub (as ruff's UP035 asks)
        known = self.sources.setdefault(name, source)
        if known != source:
            raise ValueError(f"the annotations name {name!r} from both {known[0]} and {source[0]}")

    def lines(self, *extra: str) -> str:
        """The import lines, grouped and sorted as ruff's isort does (standard library, third party,
        the package); ``extra``: the package's lines the stub adds itself."""
        groups: tuple[list[str], list[str], list[str]] = ([], [], list(extra))
        imported: dict[tuple[int, str], list[str]] = {}  # (group, module) -> the names from it
        for name, (source, original) in self.sources.items():
            group = 0 if source.split(".")[0] in sys.stdlib_module_names else 1
            if source == PACKAGE or source.startswith(PACKAGE + "."):
                source, group = "." * self.depth + source[len(PACKAGE) + 1 :], 2
            if original is None:
                groups[group].append(f"import {source}" + (f" as {name}" if name != source else ""))
            else:
                imported.setdefault((group, source), []).append(original + (f" as {name}" if name != original else ""))
        for (group, source), names in imported.items():
            names.sort(key=lambda n: (not n.isupper(), not n[0].isupper(), n))  # ruff's order-by-type
            groups[group].append(f"from {source} import {', '.join(names)}")
        return "\n\n".join("\n".join(sorted(group)) for group in groups if group) + "\n"


def _converted_first() -> tuple[object, str]:
    """The annotation of the first argument of an op's module-level form, which ``accepts_arrays``
    converts with ``tensor_arg`` (an array or Python data too): that of ``tensor_arg``'s value (the
    wrapper's own cannot be read: ``functools.wraps`` copies the op's annotations onto it), and the
    module that resolves it."""
    from tinytensor.tensor import tensor_arg

    return inspect.signature(tensor_arg).parameters["value"].annotation, tensor_arg.__module__


def _signature(fn: Callable[..., Any], name: str, imports: Imports, *, first: str | None = None) -> str:
    """``fn``'s parameters and result with their annotations, defaults written ``...`` (as stubs do).
    ``first``: "self" (a method: unannotated), "input" (a module-level form that converts its first
    argument), or None (as declared). An operator method's parameters are positional-only (as
    typeshed writes them: Python passes its operand by position, and the in-place operators' must
    match the binary ones'). An unannotated parameter is ``Any``, an unannotated result what
    ``operations_doc.returns`` says."""
    module = fn.__module__
    operator = first == "self" and name.startswith("__")
    sig = inspect.signature(fn)
    parts: list[str] = []
    star = False  # whether a "*" or *args has been written
    previous = None
    for index, p in enumerate(sig.parameters.values()):
        annotation = p.annotation
        where = module
        pname = p.name
        if index == 0 and first == "input":
            annotation, where = _converted_first()
            pname = "input"
        text = pname
        if index == 0 and first == "self":
            text = "self"
        elif annotation is p.empty:
            imports.sources.setdefault("Any", ("typing", "Any"))
            text += f": {_UNANNOTATED}"
        else:
            text += f": {imports.annotation(annotation, where)}"
        if p.default is not p.empty:
            text += " = ..."
        kind = p.kind
        if operator and kind is p.POSITIONAL_OR_KEYWORD:
            kind = p.POSITIONAL_ONLY
        if previous is p.POSITIONAL_ONLY and kind is not p.POSITIONAL_ONLY:
            parts.append("/")
        if kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if kind is p.VAR_POSITIONAL:
            text, star = "*" + text, True
        elif kind is p.VAR_KEYWORD:
            text = "**" + text
        parts.append(text)
        previous = kind
    if previous is inspect.Parameter.POSITIONAL_ONLY:
        parts.append("/")
    if sig.return_annotation is sig.empty:
        result = returns(name, fn)
        if result == "Tensor":
            imports.sources.setdefault("Tensor", (PACKAGE + ".tensor", "Tensor"))
    else:
        result = imports.annotation(sig.return_annotation, module)
    return f"({', '.join(parts)}) -> {result}"


def _def(name: str, fn: Callable[..., Any], imports: Imports, *, first: str | None = None, indent: str = "") -> str:
    """The stub of ``fn`` as ``name``: one def, or one per overload that ``fn``'s module declares
    (``typing.overload``) before the function."""
    fn = inspect.unwrap(fn)
    ignore = "  # type: ignore[override]" if name in _OVERRIDES else ""
    overloads = typing.get_overloads(fn)
    if not overloads:
        return f"{indent}def {name}{_signature(fn, name, imports, first=first)}: ...{ignore}\n"
    imports.sources.setdefault("overload", ("typing", "overload"))
    return "".join(
        f"{indent}@overload\n{indent}def {name}{_signature(variant, name, imports, first=first)}: ...{ignore}\n"
        for variant in overloads
    )


def _functions(ops: Iterable[Any], imports: Imports, *, listed: bool = True) -> str:
    ops = list(ops)
    text = "__all__ = [\n" + "".join(f'    "{op.name}",\n' for op in ops) + "]\n\n" if listed else ""
    # the module-level form's first argument is ``input`` where it converts it (tensor.accepts_arrays)
    return text + "".join(_def(op.name, op.fn, imports, first="input" if op.converts_first else None) for op in ops)


def _methods(ops: Iterable[Any], imports: Imports) -> str:
    return "".join(_def(name, op.fn, imports, first="self", indent="    ") for op in ops for name in op.methods)


def _properties(getters: dict[str, Callable[..., Any]], imports: Imports) -> str:
    return "".join(
        f"    @property\n    def {name}{_signature(getter, name, imports, first='self')}: ...\n"
        for name, getter in getters.items()
    )


def stubs() -> dict[Path, str]:
    """{path: text} of the stubs beside the tinytensor this process imports, from its table (run from
    the repository root: the checkout's). The activations (activation_math.ACTIVATIONS: methods, tt.* and
    nn.functional.*) have a stub of their own, so that adding one changes only that generated file."""
    import tinytensor
    from tinytensor.activation_math import ACTIVATIONS
    from tinytensor.ops import surface

    package = Path(tinytensor.__file__).parent

    activations = [op for op in surface.OPS if op.name in ACTIVATIONS]
    others = [op for op in surface.OPS if op.name not in ACTIVATIONS]

    activation_imports = Imports(depth=1)
    activation_defs = (
        _functions(activations, activation_imports)
        + "\nclass ActivationMethods:\n"
        + _methods(activations, activation_imports)
    )
    surface_imports = Imports(depth=1)
    surface_defs = (
        _functions([op for op in others if op.tt], surface_imports)
        + "\nclass TensorOps(ActivationMethods):\n"
        + _methods(others, surface_imports)
        + _properties(surface.PROPERTIES, surface_imports)
    )
    functional_imports = Imports(depth=2)
    functional_defs = _functions([op for op in others if op.functional], functional_imports, listed=False)
    return {
        package / "_activations.pyi": HEADER + activation_imports.lines() + "\n" + activation_defs,
        package / "_surface.pyi": HEADER
        + surface_imports.lines("from ._activations import ActivationMethods")
        + "\n"
        + surface_defs,
        # no __all__: the module is this stub's defs and the activations it re-exports
        package / "nn" / "functional.pyi": HEADER
        + functional_imports.lines("from .._activations import *")
        + "\n"
        + functional_defs,
    }


def stale(files: dict[Path, str]) -> list[Path]:
    """The paths of ``files`` ({path: text}) whose contents differ from the text."""
    return [path for path, text in files.items() if not path.exists() or path.read_text() != text]


def main(argv: list[str] | None = None) -> int:
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
