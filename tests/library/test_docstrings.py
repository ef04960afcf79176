"""Every public name and every public method of a public class has a docstring.

Public: each name in the ``__all__`` of tinytensor and of its packages and modules (a module whose
own name starts with ``_`` is private), and, for each public class, every attribute its tinytensor
classes define whose name does not start with ``_``: methods, class and static methods, properties.
``help()`` and the API reference show these docstrings; a missing one is an empty entry there.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import tinytensor


def _public_modules():
    yield tinytensor
    for info in pkgutil.walk_packages(tinytensor.__path__, "tinytensor."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        if hasattr(module, "__all__"):
            yield module


def _documented(obj) -> bool:
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        return bool((obj.__doc__ or "").strip())
    doc = getattr(obj, "__doc__", None)
    return bool((doc or "").strip())


def _public_objects():
    """(qualified name, object) for each public name and each public class member, once each."""
    seen, found = set(), []

    def add(name, obj):
        if id(obj) not in seen:
            seen.add(id(obj))
            found.append((name, obj))

    for module in _public_modules():
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or callable(obj)):
                continue  # constants (dtypes, flags) document themselves in the module docstring
            add(f"{module.__name__}.{name}", obj)
            if not inspect.isclass(obj):
                continue
            for cls in obj.__mro__:
                if not cls.__module__.startswith("tinytensor"):
                    continue
                for member, value in vars(cls).items():
                    if member.startswith("_"):
                        continue
                    if callable(value) or isinstance(value, (property, staticmethod, classmethod)):
                        add(f"{cls.__module__}.{cls.__qualname__}.{member}", value)
    return found


def test_the_walk_finds_the_public_surface():
    names = {name for name, _ in _public_objects()}
    # a walk that finds nothing would pass below: these are certainly public
    assert {
        "tinytensor.tensor",
        "tinytensor.nn.Linear",
        "tinytensor.optim.Adam",
        "tinytensor.tensor.Tensor.backward",
    } <= names
    assert len(names) > 300


def test_every_public_name_and_method_has_a_docstring():
    missing = sorted(name for name, obj in _public_objects() if not _documented(obj))
    if missing:
        pytest.fail(f"{len(missing)} public names or methods have no docstring:\n  " + "\n  ".join(missing))
