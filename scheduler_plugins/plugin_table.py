"""A table of named plugins, shared by the scheduler's and the descheduler's frameworks.

Built explicitly by each component's `in_tree_registry()`, never by import side effect; registering
a name twice, or unregistering one that is not there, is an error. The components' plugin specs
differ (their args parsers take different inputs), so the table is generic over the spec.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar


class NamedSpec(Protocol):
    @property
    def name(self) -> str: ...


Spec = TypeVar("Spec", bound=NamedSpec)


class PluginTable(Generic[Spec]):
    def __init__(self, specs: Iterable[Spec] = ()) -> None:
        self._specs: dict[str, Spec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: Spec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"plugin {spec.name!r} registered twice: a plugin of that name already exists")
        self._specs[spec.name] = spec

    def unregister(self, name: str) -> None:
        if name not in self._specs:
            raise ValueError(f"no plugin named {name!r} exists")
        del self._specs[name]

    def merge(self, other: PluginTable[Spec]) -> None:
        """Register every plugin of `other` (a name both have is an error)."""
        for spec in other._specs.values():
            self.register(spec)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __getitem__(self, name: str) -> Spec:
        return self._specs[name]

    def names(self) -> list[str]:
        return list(self._specs)
