"""The in-tree plugin table: every plugin the descheduler knows, in one visible place."""

from __future__ import annotations

from scheduler_plugins.descheduler.framework.registry import PluginSpec, Registry
from scheduler_plugins.descheduler.plugins import evictor_args, evictors
from scheduler_plugins.descheduler.plugins.lownodeload import args as lownodeload_args
from scheduler_plugins.descheduler.plugins.lownodeload.plugin import LowNodeLoad


def in_tree_registry() -> Registry:
    return Registry(
        [
            PluginSpec(lownodeload_args.NAME, LowNodeLoad, lownodeload_args.parse_args, has_args=True),
            PluginSpec(
                evictor_args.MIGRATION_CONTROLLER,
                evictors.MigrationController,
                evictor_args.parse_migration_controller_args,
                has_args=True,
            ),
            PluginSpec(
                evictor_args.DEFAULT_EVICTOR,
                evictors.DefaultEvictor,
                evictor_args.parse_default_evictor_args,
                has_args=True,
            ),
        ]
    )


def installed_registry() -> Registry:
    """The in-tree plugins and those of the installed distributions (`colocate.descheduler.plugins`
    entry points, imported when a profile enables them): what the commands build profiles from."""
    registry = in_tree_registry()
    registry.merge_discovered("descheduler", PluginSpec)
    return registry
