"""The plugin table: name → (args parser, factory). Built explicitly, never by import side effect;
a duplicate name is an error (conventions §4)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policies.field_errors import ConfigError
from scheduler_plugins.scheduler.framework.handle import Handle

ArgsParser = Callable[[Mapping[str, Any] | None, str], Any]
Factory = Callable[[Any, Handle], Any]


def no_args(raw: Mapping[str, Any] | None, path: str) -> None:
    """Args parser for plugins that take none: any non-empty block is rejected."""
    if raw:
        raise ConfigError(path, "this plugin takes no args")
    return None


@dataclass(frozen=True)
class PluginSpec:
    name: str
    factory: Factory
    parse_args: ArgsParser = no_args


class Registry:
    def __init__(self, specs: Iterable[PluginSpec] = ()) -> None:
        self._specs: dict[str, PluginSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: PluginSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"plugin {spec.name!r} registered twice")
        self._specs[spec.name] = spec

    def __contains__(self, name: str) -> bool:
        return name in self._specs

    def __getitem__(self, name: str) -> PluginSpec:
        return self._specs[name]

    def names(self) -> list[str]:
        return list(self._specs)
