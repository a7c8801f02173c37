"""Descheduler plugins (`colocate.descheduler.plugins`): Deschedule, Balance, Filter and Evict.

A plugin is enabled in a DeschedulerConfiguration profile like an in-tree one; its `pluginConfig`
args go to its own parser (`PluginSpec.parse_args(fields)`). It evicts only through
`handle.evictor` and reports errors as `Status`; one that raises is skipped for the round (the
round's report lists it under `failedPlugins`) and the next plugin runs.
"""

from policies.apis.field_errors import ConfigError, Fields
from scheduler_plugins.descheduler.framework.handle import Handle
from scheduler_plugins.descheduler.framework.interfaces import (
    SUCCESS,
    BalancePlugin,
    DeschedulePlugin,
    EvictOptions,
    EvictPlugin,
    FilterPlugin,
    Object,
    Status,
)
from scheduler_plugins.descheduler.framework.registry import ArgsParser, Factory, PluginSpec, no_args

__all__ = [
    "SUCCESS",
    "ArgsParser",
    "BalancePlugin",
    "ConfigError",
    "DeschedulePlugin",
    "EvictOptions",
    "EvictPlugin",
    "Factory",
    "Fields",
    "FilterPlugin",
    "Handle",
    "Object",
    "PluginSpec",
    "Status",
    "no_args",
]
