"""The examples in the docstrings (``>>>`` lines, which help() and the API reference show) run and
print what they say, on the CPU."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import tinytensor


def _modules() -> list[str]:
    names = ["tinytensor"]
    for info in pkgutil.walk_packages(tinytensor.__path__, "tinytensor."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def _examples():
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = {}
    for name in _modules():
        module = importlib.import_module(name)
        for test in finder.find(module):
            if test.examples and test.name not in found:
                found[test.name] = test
    return [pytest.param(test, id=name) for name, test in sorted(found.items())]


def test_the_docstrings_have_examples():
    assert len(_examples()) >= 20  # a finder that finds nothing would pass below


@pytest.mark.parametrize("test", _examples())
def test_a_docstring_example(test, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that save a file write it here, not into the checkout
    test.globs = {"tt": tinytensor, "tinytensor": tinytensor, **test.globs}
    tinytensor.manual_seed(0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    output: list[str] = []
    result = runner.run(test, out=output.append)
    assert result.failed == 0, "".join(output)
