"""The plugin table (Koordinator's `pkg/descheduler/framework/runtime/registry.go`): name -> (args
parser, factory). Built explicitly by `in_tree_registry()`, never by import side effects;
registering a name twice or unregistering a missing one is an error."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from policies.apis.field_errors import ConfigError, Fields
from scheduler_plugins.plugin_table import PluginTable

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


class Registry(PluginTable[PluginSpec]):
    """The plugin table (`scheduler_plugins.plugin_table`) of this component's specs."""
