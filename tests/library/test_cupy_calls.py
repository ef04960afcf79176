"""Every ``xp.<function>(...)`` call in the library exists in CuPy and takes the arguments it is given.

The library writes its array code once for numpy, CuPy and array_api_strict. A keyword that numpy
accepts and CuPy does not (``var(..., correction=)`` was one) fails only on a GPU, which CI does not
have; CuPy imports without one, so this reads the source against CuPy's own signatures wherever
CuPy is installed (the tests_cupy session). Calls inside the numpy and array_api_strict backends
are theirs alone and are left out.
"""

import ast
import inspect
from pathlib import Path

import pytest

import tinytensor

cupy = pytest.importorskip("cupy", reason="CuPy is not installed (the tests_cupy session has it)")

PACKAGE = Path(tinytensor.__file__).resolve().parent
NOT_CUPY = {"NumpyBackend", "StrictBackend"}  # classes whose xp is never CuPy


def _xp_calls():
    """(function name, positional count, keywords, where) of each xp.f(...) / self.xp.f(...) call."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        skipped = set()
        for cls in ast.walk(tree):
            if isinstance(cls, ast.ClassDef) and cls.name in NOT_CUPY:
                skipped |= {id(node) for node in ast.walk(cls)}
        for node in ast.walk(tree):
            if id(node) in skipped or not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            owner = node.func.value
            if not (
                (isinstance(owner, ast.Name) and owner.id == "xp")
                or (isinstance(owner, ast.Attribute) and owner.attr == "xp")
            ):
                continue
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                continue  # *args / **kwargs: nothing to check statically
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            yield node.func.attr, len(node.args), [k.arg for k in node.keywords], where


CALLS = list(_xp_calls())


def test_the_source_has_xp_calls_to_check():
    assert len(CALLS) > 50 and {"sum", "reshape", "exp"} <= {name for name, *_ in CALLS}


@pytest.mark.parametrize("name,positional,keywords,where", CALLS, ids=[c[3] for c in CALLS])
def test_cupy_takes_the_call(name, positional, keywords, where):
    function = getattr(cupy, name, None)
    assert function is not None, f"{where}: cupy has no {name}()"
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a ufunc or a Cython function without a signature
        assert callable(function), f"{where}: cupy.{name} is not callable"
        return
    try:
        signature.bind(*range(positional), **dict.fromkeys(keywords))
    except TypeError as exc:
        pytest.fail(
            f"{where}: cupy.{name}{signature} does not take {positional} positional argument(s) and "
            f"keywords {keywords}: {exc}"
        )
