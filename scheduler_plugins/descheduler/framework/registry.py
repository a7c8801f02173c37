"""The plugin table (spec §1): name -> (args parser, factory). Built explicitly by
`in_tree_registry()`, never by import side effects; registering a name twice or unregistering a
missing one is an error."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from policies.field_errors import ConfigError, Fields

if TYPE_CHECKING:
    from scheduler_plugins.descheduler.framework.handle import Handle
    from scheduler_plugins.descheduler.framework.interfaces import Plugin

#: parses a plugin's `args` (already checked for apiVersion/kind) into its typed, defaulted value
ArgsParser = Callable[[Fields], Any]
Factory = Callable[[Any, "Handle"], "Plugin"]


def no_args(fields: Fields) -> None:
    """The parser of a plugin that takes no args: any field is rejected."""
    for key in fields.raw:
        if key not in ("apiVersion", "kind"):
            raise ConfigError(fields.at(str(key)), "unknown field: this plugin takes no args")


@dataclass(frozen=True)
class PluginSpec:
    name: str
    factory: Factory
    parse_args: ArgsParser = no_args
    #: whether a `<name>Args` kind exists (an enabled plugin without pluginConfig gets defaulted args)
    has_args: bool = False


class Registry:
    def __init__(self, specs: Iterable[PluginSpec] = ()) -> None:
        self._specs: dict[str, PluginSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: PluginSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"a plugin named {spec.name!r} already exists")
        self._specs[spec.name] = spec

    def unregister(self, name: str) -> None:
        if name not in self._specs:
            raise ValueError(f"no plugin named {name!r} exists")
        del self._specs[name]

    def merge(self, other: Registry) -> None:
        """Register every plugin of `other` (a name both have is an error)."""
        for spec in other._specs.values():
            self.register(spec)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __getitem__(self, name: str) -> PluginSpec:
        return self._specs[name]

    def names(self) -> list[str]:
        return list(self._specs)
