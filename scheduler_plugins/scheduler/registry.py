"""The in-tree plugin table: every plugin this package ships, in one visible place."""

from __future__ import annotations

from scheduler_plugins.scheduler.framework.registry import PluginSpec, Registry
from scheduler_plugins.scheduler.plugins import (
    defaultbinder,
    defaultprebind,
    networktraffic,
    noderesourcesfit,
    noderesourcesfitplus,
    prioritysort,
    scarceresourceavoidance,
)
from scheduler_plugins.scheduler.plugins.coscheduling import plugin as coscheduling
from scheduler_plugins.scheduler.plugins.deviceshare import args as deviceshare_args
from scheduler_plugins.scheduler.plugins.deviceshare import plugin as deviceshare
from scheduler_plugins.scheduler.plugins.elasticquota import args as elasticquota_args
from scheduler_plugins.scheduler.plugins.elasticquota import plugin as elasticquota
from scheduler_plugins.scheduler.plugins.loadaware import args as loadaware_args
from scheduler_plugins.scheduler.plugins.loadaware import plugin as loadaware
from scheduler_plugins.scheduler.plugins.nodenumaresource import args as numa_args
from scheduler_plugins.scheduler.plugins.nodenumaresource import plugin as nodenumaresource
from scheduler_plugins.scheduler.plugins.reservation import plugin as reservation


def in_tree_registry() -> Registry:
    return Registry(
        [
            PluginSpec(prioritysort.NAME, prioritysort.new),
            PluginSpec(noderesourcesfit.NAME, noderesourcesfit.new, noderesourcesfit.parse_args),
            PluginSpec(loadaware.NAME, loadaware.new, loadaware_args.parse_args),
            PluginSpec(noderesourcesfitplus.NAME, noderesourcesfitplus.new, noderesourcesfitplus.parse_args),
            PluginSpec(scarceresourceavoidance.NAME, scarceresourceavoidance.new, scarceresourceavoidance.parse_args),
            PluginSpec(networktraffic.NAME, networktraffic.new, networktraffic.parse_args),
            PluginSpec(nodenumaresource.NAME, nodenumaresource.new, numa_args.parse_args),
            PluginSpec(deviceshare.NAME, deviceshare.new, deviceshare_args.parse_args),
            PluginSpec(elasticquota.NAME, elasticquota.new, elasticquota_args.parse_args),
            PluginSpec(reservation.NAME, reservation.new),
            PluginSpec(coscheduling.NAME, coscheduling.new, coscheduling.parse_args),
            PluginSpec(defaultprebind.NAME, defaultprebind.new),
            PluginSpec(defaultbinder.NAME, defaultbinder.new),
        ]
    )


def installed_registry() -> Registry:
    """The in-tree plugins and those of the installed distributions (`colocate.scheduler.plugins`
    entry points, imported when a profile enables them): what every command builds its profiles from."""
    registry = in_tree_registry()
    registry.merge_discovered("scheduler", PluginSpec)
    return registry
