"""A table of named plugins, shared by the scheduler's and the descheduler's frameworks.

Built explicitly by each component's `in_tree_registry()`, never by import side effect; registering
a name twice, or unregistering one that is not there, is an error. The components' plugin specs
differ (their args parsers take different inputs), so the table is generic over the spec.

Out-of-tree plugins (`colocate.cluster.plugins`) join by `merge_discovered`: their names are known at once,
their specs are imported only when a configuration enables them (`table[name]`), so a broken package
costs nothing until then, and then it is a `PluginError` naming its distribution.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar

from colocate.cluster.plugins import IN_TREE, Discovered, discovered


class NamedSpec(Protocol):
    @property
    def name(self) -> str: ...


Spec = TypeVar("Spec", bound=NamedSpec)


class PluginTable(Generic[Spec]):
    def __init__(self, specs: Iterable[Spec] = ()) -> None:
        self._specs: dict[str, Spec] = {}
        self._lazy: dict[str, tuple[Discovered, type[Spec]]] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: Spec) -> None:
        if spec.name in self:
            raise ValueError(f"plugin {spec.name!r} registered twice: a plugin of that name already exists")
        self._specs[spec.name] = spec

    def unregister(self, name: str) -> None:
        if name not in self:
            raise ValueError(f"no plugin named {name!r} exists")
        self._specs.pop(name, None)
        self._lazy.pop(name, None)

    def merge(self, other: PluginTable[Spec]) -> None:
        """Register every plugin of `other` (a name both have is an error)."""
        for spec in other._specs.values():
            self.register(spec)

    def merge_discovered(self, surface: str, kind: type[Spec]) -> None:
        """Add the installed distributions' plugins of `surface` (`colocate.cluster.plugins`), unloaded; a name
        this table has already is a PluginError naming both sources."""
        for item in discovered(surface, self.names()):
            self._lazy[item.name] = (item, kind)

    def source(self, name: str) -> str:
        """`in-tree`, or the distribution that provides the plugin."""
        return self._lazy[name][0].distribution if name in self._lazy else IN_TREE

    def __contains__(self, name: object) -> bool:
        return name in self._specs or name in self._lazy

    def __getitem__(self, name: str) -> Spec:
        if name not in self._specs and name in self._lazy:
            item, kind = self._lazy[name]
            self._specs[name] = item.load(kind)
        return self._specs[name]

    def names(self) -> list[str]:
        return [*self._specs, *(n for n in self._lazy if n not in self._specs)]
