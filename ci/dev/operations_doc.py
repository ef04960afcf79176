"""Write ``docs/operations.md``, the table of every public operation, from the one declaration of
Tensor's operator surface (tinytensor/ops/surface.py): each op's name, where it is available
(Tensor method, operator, ``tt.*``, ``nn.functional.*``), its signature, whether it is
differentiable (as the table declares it; the test suite checks the declaration) and the summary
of its docstring. ``--check`` writes nothing and fails when the file is out of date;
``python -m ci.dev.surface_stubs`` writes it with the type stubs.

    python -m ci.dev.operations_doc [--check]
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

PATH = Path(__file__).resolve().parents[2] / "docs" / "operations.md"

# each operator method as the expression that calls it (a and b tensors)
OPERATORS = {
    "__add__": "a + b",
    "__radd__": "number + a",
    "__sub__": "a - b",
    "__rsub__": "number - a",
    "__mul__": "a * b",
    "__rmul__": "number * a",
    "__truediv__": "a / b",
    "__rtruediv__": "number / a",
    "__pow__": "a ** b",
    "__rpow__": "number ** a",
    "__neg__": "-a",
    "__abs__": "abs(a)",
    "__invert__": "~a",
    "__matmul__": "a @ b",
    "__rmatmul__": "array @ a",
    "__eq__": "a == b",
    "__ne__": "a != b",
    "__lt__": "a < b",
    "__le__": "a <= b",
    "__gt__": "a > b",
    "__ge__": "a >= b",
    "__floordiv__": "a // b",
    "__mod__": "a % b",
    "__and__": "a & b",
    "__rand__": "number & a",
    "__or__": "a | b",
    "__ror__": "number | a",
    "__xor__": "a ^ b",
    "__rxor__": "number ^ a",
    "__iadd__": "a += b",
    "__isub__": "a -= b",
    "__imul__": "a *= b",
    "__itruediv__": "a /= b",
    "__getitem__": "a[key]",
    "__setitem__": "a[key] = value",
}

INTRO = """\
<!-- Generated from tinytensor/ops/surface.py by `python -m ci.dev.surface_stubs`: do not edit.
The test suite fails when it is out of date. -->

# Operations

Every operation on tensors, as `tinytensor/ops/surface.py` declares it: where it is available
(a `Tensor` method or property, an operator, `tt.<name>` with `import tinytensor as tt`, or
`F.<name>` with `from tinytensor.nn import functional as F`), its signature (a `tt` or `F` form's
first argument may also be an array or Python data), and whether gradients flow from its result
to its floating-point tensor inputs. Names, arguments and results follow PyTorch; where an
operation differs, its summary or its docstring (`help(tt.<name>)`) says how. Tensor's own
methods (`to`, `float`, `numel`, `item`, `backward`, `detach`, ...) are documented on the class.

"""


def summary(name: str, fn) -> str:
    """The first paragraph of ``fn``'s docstring on one line, in Markdown; an op without one is an error."""
    doc = inspect.getdoc(fn)
    if not doc:
        raise ValueError(f"{name}: the op {fn!r} has no docstring; every op in the table needs one")
    paragraph = doc.split("\n\n")[0]
    return " ".join(line.strip() for line in paragraph.splitlines()).replace("``", "`")


def returns(name: str, fn) -> str:
    """What ``fn`` returns, as its annotation says (Tensor where it says nothing)."""
    annotation = inspect.signature(inspect.unwrap(fn)).return_annotation
    if annotation is inspect.Signature.empty:
        return "None" if name == "__setitem__" else "Tensor"
    return annotation if isinstance(annotation, str) else annotation.__name__


def signature(op) -> str:
    """The op's parameters with their defaults: the ``tt``/``F`` form where it has one (its first
    argument named ``input`` where that form converts it), else the method's, without ``self``."""
    sig = inspect.signature(inspect.unwrap(op.fn))
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    if not (op.tt or op.functional):
        params = params[1:]
    elif op.converts_first:
        params = [params[0].replace(name="input"), *params[1:]]
    text = str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))
    return f"{text} -> {returns(op.name, op.fn)}"


def available(op) -> list[str]:
    """Where the op can be called: its methods and operators, ``tt.<name>``, ``F.<name>``."""
    places = []
    for method in op.methods:
        if method.startswith("__"):
            if method not in OPERATORS:
                raise ValueError(f"{op.name}: operator method {method} has no entry in OPERATORS")
            places.append(OPERATORS[method])
        else:
            places.append(f"Tensor.{method}")
    if op.tt:
        places.append(f"tt.{op.name}")
    if op.functional:
        places.append(f"F.{op.name}")
    return places


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def text() -> str:
    """The Markdown of docs/operations.md for the tinytensor this process imports."""
    from tinytensor.ops import surface

    rows = [
        "| operation | available as | signature | differentiable | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    for op in surface.OPS:
        places = ", ".join(f"`{_cell(place)}`" for place in available(op))
        rows.append(
            f"| {_cell(op.name)} | {places} | `{_cell(signature(op))}` | "
            f"{'yes' if op.differentiable else 'no'} | {_cell(summary(op.name, op.fn))} |"
        )
    for name, getter in surface.PROPERTIES.items():
        rows.append(f"| {name} | `Tensor.{name}` (property) | | yes | {_cell(summary(name, getter))} |")
    return INTRO + "\n".join(rows) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when the file is out of date; write nothing")
    args = parser.parse_args(argv)
    content = text()
    if PATH.exists() and PATH.read_text() == content:
        return 0
    if args.check:
        print(f"out of date: {PATH}; run python -m ci.dev.surface_stubs", file=sys.stderr)
        return 1
    PATH.write_text(content)
    print(f"wrote {PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
