"""A scheduler framework over a cluster of objects, with the in-tree and the installed plugins:
for a plugin's unit tests (its Filter on one node, its Score) without a command."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from colocate.testing.builders import NOW
from scheduler_plugins.clock import clock_at
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.runtime import Framework
from scheduler_plugins.scheduler.registry import installed_registry
from scheduler_plugins.scheduler.wiring import build_framework


def framework(
    objects: Sequence[Mapping[str, Any]], config: Mapping[str, Any] | None = None, now: str = NOW
) -> tuple[Framework, ClusterState]:
    """The framework of `config` (a KubeSchedulerConfiguration document; defaults when None) over a
    cluster holding `objects`, its clock stopped at `now`; and the cluster."""
    registry = installed_registry()
    cluster = ClusterState.from_objects([dict(o) for o in objects])
    parsed = parse_config(dict(config or {}), registry)
    return build_framework(parsed, registry, cluster, clock_at(now)), cluster


def handle_of(fwk: Framework) -> Handle:
    """The handle the framework gives its plugins (cluster, client, clock, feature gates)."""
    return fwk.handle


def plugin_of(fwk: Framework, name: str) -> Any:
    """The instance of plugin `name` in the framework's profile."""
    return fwk.plugins[name]
