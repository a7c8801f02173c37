"""The plugin table: name → (args parser, factory). Built explicitly, never by import side effect; a
duplicate name is an error (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from policies.apis.field_errors import ConfigError
from scheduler_plugins.plugin_table import PluginTable
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


class Registry(PluginTable[PluginSpec]):
    """The plugin table (`scheduler_plugins.plugin_table`) of this component's specs."""
