"""Runs a first-week program with tinytensor standing in for PyTorch, by module name only.

    python _as_tinytensor.py program.py [args...]

An import hook at the front of sys.meta_path (installed by the shim package shim/torch, so that
worker processes the program starts get it too) answers every `torch` import with the tinytensor
module of the same name: torch -> tinytensor, torch.X -> tinytensor.X (torch.nn.functional ->
tinytensor.nn.functional, torch.optim.lr_scheduler -> tinytensor.optim.lr_scheduler, ...), with
one renamed package, torch.utils.data -> tinytensor.data. Nothing else is adapted: a name
tinytensor lacks fails as it would for a user. The program then runs as __main__.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import types
from pathlib import Path

RENAMED = {"torch.utils.data": "tinytensor.data"}
# torch.utils is only a folder of packages here: a package of its own whose other names are
# tinytensor.utils's, where that exists
NAMESPACES = {"torch.utils": "tinytensor.utils"}


def target_name(fullname: str) -> str:
    for alias, target in RENAMED.items():
        if fullname == alias or fullname.startswith(alias + "."):
            return target + fullname[len(alias) :]
    return "tinytensor" + fullname[len("torch") :]


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target
        self.own_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module):
        # the import system has just set the alias's spec; the module keeps its own
        module.__spec__ = self.own_spec


class _NamespaceLoader(importlib.abc.Loader):
    def __init__(self, fallback: str):
        self.fallback = fallback

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        fallback = self.fallback

        def __getattr__(name):
            try:
                other = importlib.import_module(fallback)
            except ModuleNotFoundError:
                other = None
            if other is not None and hasattr(other, name):
                return getattr(other, name)
            raise AttributeError(f"module {spec.name!r} has no attribute {name!r}")

        module.__getattr__ = __getattr__
        return module

    def exec_module(self, module):
        pass


class TorchAsTinytensor(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        if fullname in NAMESPACES:
            return importlib.machinery.ModuleSpec(fullname, _NamespaceLoader(NAMESPACES[fullname]), is_package=True)
        name = target_name(fullname)
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            found = None
        if found is None:
            raise ModuleNotFoundError(f"No module named {fullname!r} ({name!r} does not exist)", name=fullname)
        return importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(name), is_package=found.submodule_search_locations is not None
        )


def install() -> None:
    """Answer ``torch`` imports in this process with tinytensor's modules (once)."""
    if not any(isinstance(finder, TorchAsTinytensor) for finder in sys.meta_path):
        sys.meta_path.insert(0, TorchAsTinytensor())


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(f"usage: {argv[0]} program.py [args...]")
    program = argv[1]
    if "torch" in sys.modules:
        raise SystemExit("torch is already imported; run this file as the main program")
    # The shim package `torch` (shim/torch) installs the mapping on first import, here and in every
    # process the program starts: they inherit PYTHONPATH (and spawned ones this sys.path).
    here = Path(__file__).resolve().parent
    paths = [str(here / "shim"), str(here)]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *filter(None, [os.environ.get("PYTHONPATH")])])
    sys.argv = argv[1:]
    sys.path[0:1] = [str(Path(program).resolve().parent), *paths]
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv)
