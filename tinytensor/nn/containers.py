"""Containers that register what they hold: ``ModuleDict``, ``ParameterList``, ``ParameterDict``
(``ModuleList`` and ``Sequential`` are in ``base.py`` and ``layers.py``).

What they hold is seen by ``parameters()``, ``state_dict()`` (keys as PyTorch's: ``"blocks.enc.weight"``,
``"params.0"``, ``"pd.scale"``), ``load_state_dict()`` and ``to()``. Items are kept only in the
module's registration tables, never as instance attributes, so a key such as ``"keys"`` does not
hide a method; ``blocks.enc`` still reads the item ``"enc"``, as in PyTorch.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any, Self, TypeVar, overload

from ..parameter import Parameter
from ..tensor import Tensor
from .base import Module, check_name

_T = TypeVar("_T")


def _pairs(owner: str, items: Mapping[str, object] | Iterable[object]) -> list[tuple[Any, Any]]:
    """(key, value) pairs from a mapping or an iterable of pairs, as ``dict.update`` takes them;
    what the keys and values are, the caller checks (``__setitem__``)."""
    if isinstance(items, Mapping):
        return list(items.items())
    pairs = []
    for k, pair in enumerate(items):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(
                f"{owner}.update(): element #{k} of the iterable should be a (key, value) pair, "
                f"got {type(pair).__name__}"
            )
        key, value = pair
        pairs.append((key, value))
    return pairs


def _table(container: ParameterList | ParameterDict) -> OrderedDict[str, Parameter]:
    """A parameter container's registration table, typed as what it holds: the Parameters that
    ``_as_parameter`` made (where Module's table may also hold None: only a caller's own
    ``register_parameter(name, None)`` on the container puts one there)."""
    return container._parameters  # type: ignore[return-value]  # see the docstring


def _as_parameter(owner: str, key: object, value: object) -> Parameter:
    """A Parameter as PyTorch's containers store it: a plain Tensor becomes a Parameter (a copy of
    its values, where PyTorch's shares them) that requires grad."""
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)
    raise TypeError(f"{owner}: {key!r} must be a Parameter or a Tensor, got {type(value).__name__}")


def _parameters_repr(owner: str, parameters: Mapping[str, Tensor | None]) -> str:
    """PyTorch's layout: one ``(key): Parameter containing: [dtype of size AxB]`` line each."""
    lines = [
        f"    ({k}): Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
        for k, p in parameters.items()
        if p is not None
    ]
    return f"{owner}(\n" + "\n".join(lines) + "\n)" if lines else f"{owner}()"


class ModuleDict(Module):
    """Modules by name, in insertion order, registered as children: ``blocks["enc"]``'s
    parameters are saved as ``"blocks.enc.*"``. ``blocks.enc`` also reads the item ``"enc"``, as
    in PyTorch; a key named like a method (``"keys"``) does not hide the method.

    Parameters
    ----------
    modules : mapping or iterable of (str, Module) pairs, optional
        The initial items, as ``update`` takes them.
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __getattr__(self, name: str) -> Module:
        # only for names that are not attributes: ``blocks.enc`` reads like ``blocks["enc"]``, and
        # a key named like a method does not hide the method (as in PyTorch)
        modules: dict[str, Module] = self.__dict__.get("_modules", {})
        if name in modules:
            return modules[name]
        raise AttributeError(f"'ModuleDict' object has no attribute or key {name!r}")

    def __setitem__(self, key: str, module: Module) -> None:
        check_name("ModuleDict", "module", key)
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict: {key!r} must be a Module, got {type(module).__name__}")
        self._modules[key] = module

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> KeysView[str]:
        """The names, in insertion order."""
        return self._modules.keys()

    def values(self) -> ValuesView[Module]:
        """The modules, in insertion order."""
        return self._modules.values()

    def items(self) -> ItemsView[str, Module]:
        """(name, module) pairs, in insertion order."""
        return self._modules.items()

    def pop(self, key: str) -> Module:
        """Remove the module ``key`` and return it."""
        return self._modules.pop(key)

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace modules from a mapping or an iterable of (name, module) pairs."""
        for key, module in _pairs("ModuleDict", modules):
            self[key] = module


class ParameterList(Module):
    """Parameters in a list, registered: item ``k`` is saved as ``"<name>.k"``. A plain Tensor
    added to it becomes a Parameter (a copy of its values, where PyTorch's shares them) that
    requires grad.

    Parameters
    ----------
    values : iterable of Tensor, optional
        The initial items.
    """

    def __init__(self, values: Iterable[Tensor] | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def _index(self, index: object) -> str:
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"ParameterList indices must be integers or slices, not {type(index).__name__}")
        n = len(self._parameters)
        if not -n <= index < n:
            raise IndexError(f"ParameterList index {index} is out of range (length {n})")
        return str(index % n)

    @overload
    def __getitem__(self, index: int) -> Parameter: ...
    @overload
    def __getitem__(self, index: slice) -> ParameterList: ...
    def __getitem__(self, index: int | slice) -> Parameter | ParameterList:
        if isinstance(index, slice):
            return ParameterList(list(_table(self).values())[index])
        return _table(self)[self._index(index)]

    def __setitem__(self, index: int, value: Tensor) -> None:
        key = self._index(index)
        self._parameters[key] = _as_parameter("ParameterList", index, value)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(list(_table(self).values()))

    def __iadd__(self, values: Iterable[Tensor]) -> Self:
        return self.extend(values)

    def append(self, value: Tensor) -> Self:
        """Add a parameter at the end; returns this list."""
        key = str(len(self._parameters))
        self._parameters[key] = _as_parameter("ParameterList", len(self._parameters), value)
        return self

    def extend(self, values: Iterable[Tensor]) -> Self:
        """Add every parameter of an iterable at the end; returns this list."""
        if isinstance(values, Tensor) or not isinstance(values, Iterable):
            raise TypeError(f"ParameterList.extend() takes an iterable of parameters, got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def __repr__(self) -> str:
        return _parameters_repr("ParameterList", self._parameters)


class ParameterDict(Module):
    """Parameters by name, in insertion order, registered: ``pd["scale"]`` is saved as
    ``"pd.scale"``, and ``pd.scale`` reads it too. A plain Tensor stored in it becomes a Parameter
    (a copy of its values, where PyTorch's shares them) that requires grad.

    Parameters
    ----------
    parameters : mapping or iterable of (str, Tensor) pairs, optional
        The initial items, as ``update`` takes them.
    """

    def __init__(self, parameters: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]] | None = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Parameter:
        return _table(self)[key]

    def __getattr__(self, name: str) -> Parameter:
        # only for names that are not attributes, as ModuleDict's
        parameters: dict[str, Parameter] = self.__dict__.get("_parameters", {})
        if name in parameters:
            return parameters[name]
        raise AttributeError(f"'ParameterDict' object has no attribute or key {name!r}")

    def __setitem__(self, key: str, value: Tensor) -> None:
        check_name("ParameterDict", "parameter", key)
        self._parameters[key] = _as_parameter("ParameterDict", key, value)

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def __contains__(self, key: object) -> bool:
        return key in self._parameters

    def keys(self) -> KeysView[str]:
        """The names, in insertion order."""
        return self._parameters.keys()

    def values(self) -> ValuesView[Parameter]:
        """The parameters, in insertion order."""
        return _table(self).values()

    def items(self) -> ItemsView[str, Parameter]:
        """(name, parameter) pairs, in insertion order."""
        return _table(self).items()

    @overload
    def get(self, key: str) -> Parameter | None: ...
    @overload
    def get(self, key: str, default: _T) -> Parameter | _T: ...
    def get(self, key: str, default: Any = None) -> Any:
        """The parameter ``key``, or ``default`` (None unless given)."""
        return self._parameters.get(key, default)

    def pop(self, key: str) -> Parameter:
        """Remove the parameter ``key`` and return it."""
        return _table(self).pop(key)

    def clear(self) -> None:
        """Remove every parameter."""
        self._parameters.clear()

    def update(self, parameters: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]]) -> None:
        """Add or replace parameters from a mapping or an iterable of (name, tensor) pairs; a
        plain Tensor becomes a Parameter."""
        for key, value in _pairs("ParameterDict", parameters):
            self[key] = value

    def __repr__(self) -> str:
        return _parameters_repr("ParameterDict", self._parameters)


__all__ = ["ModuleDict", "ParameterList", "ParameterDict"]
