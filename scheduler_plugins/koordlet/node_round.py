"""The koordlet's node round in memory: the one place a round's input is assembled and run.

A round reads a `NodeState` (the Node, its last good NodeSLO, its pods, its NodeResourceTopology and
NodeMetric), the node's usage (`Usage`: numbers, from the agent's metric cache, a NodeMetric or a
what-if sample), the current value of each cgroup file (a reader; `unknown_cgroup` when no
machine is read), the node's processors and the host's interfaces. It returns a `RoundReport`:
each strategy's status, the cgroup and host writes and the evictions, as values; nothing is
written here. `round_input` assembles what a round reads and `QOSManager.run_round` runs it: the
agent (`koordlet run`) applies the report to the machine, `koordlet plan` prints it and `colocate
whatif` keeps the cgroup writes in memory for the next round.

The public types a caller of a round needs are re-exported here (`__all__`), so a composer such
as whatif imports this module and nothing else of the koordlet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler_plugins.koordlet.cgroups.executor import Lister, Reader
from scheduler_plugins.koordlet.cgroups.ids import RefusedPath, checked_pod_uid
from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver, CgroupLayout
from scheduler_plugins.koordlet.cgroups.resources import DEFAULT_CFS_PERIOD, CgroupVersion, Resource
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.framework import QOSManager, RoundReport, StrategyEntry, builtin_strategies
from scheduler_plugins.koordlet.host import NO_HOST, HostView
from scheduler_plugins.koordlet.nodeslo import NodeSLO, ThresholdStrategy
from scheduler_plugins.koordlet.pods import OnRefused, PodView, active_pod_views, is_active, pod_view
from scheduler_plugins.koordlet.states import NodeState
from scheduler_plugins.koordlet.strategies.base import RoundInput, StrategyOptions, node_amount
from scheduler_plugins.koordlet.topology import CPUInfo, flat_processors, processors_of_topology
from scheduler_plugins.koordlet.usage import BECPU, ResourceUsage, Usage, usage_of_node_metric

__all__ = [
    "BECPU",
    "DEFAULT_CFS_PERIOD",
    "CPUInfo",
    "CgroupDriver",
    "CgroupLayout",
    "CgroupVersion",
    "NodeSLO",
    "NodeState",
    "PodView",
    "QOSManager",
    "RefusedPath",
    "Resource",
    "ResourceUsage",
    "RoundReport",
    "StrategyEntry",
    "StrategyOptions",
    "ThresholdStrategy",
    "Usage",
    "builtin_strategies",
    "checked_pod_uid",
    "cpu_capacity_milli",
    "is_active",
    "koordlet_gates",
    "node_processors",
    "pod_view",
    "round_input",
    "RoundInput",
    "unknown_cgroup",
    "usage_of_node_metric",
]


def unknown_cgroup(cgroup: str, resource: Resource) -> None:
    """The reader of a round that reads no machine (`koordlet plan`): every cgroup file unknown,
    so the steps that compare with the current value act as on a fresh node."""
    return None


def cpu_capacity_milli(node: Mapping[str, Any] | None) -> int:
    """The node's `status.capacity.cpu` in millicores, 0 when absent or unreadable."""
    return node_amount(node, "capacity", "cpu")


def node_processors(node: Mapping[str, Any] | None, topology: Mapping[str, Any] | None) -> tuple[CPUInfo, ...]:
    """The processors a round sees without a machine to read: the NodeResourceTopology's, else
    one flat processor per whole core of the node's cpu capacity."""
    found = processors_of_topology(topology)
    if found is None:
        found = flat_processors(cpu_capacity_milli(node) // 1000)
    return tuple(found)


def round_input(
    state: NodeState,
    usage: Usage,
    layout: CgroupLayout,
    now: float,
    *,
    read: Reader = unknown_cgroup,
    processors: Sequence[CPUInfo] | None = None,
    views: tuple[PodView, ...] | None = None,
    host: HostView | None = None,
    on_refused: OnRefused | None = None,
    subdirs: Lister | None = None,
) -> RoundInput:
    """Everything one round reads. `processors` default to `node_processors` of the state's
    objects; `views` (the active pods' views, when the caller keeps them between rounds) default
    to the state's active pods, each refused UID told to `on_refused`."""
    if processors is None:
        processors = node_processors(state.node, state.topology)
    if views is None:
        views = active_pod_views(state.pods, layout, on_refused)
    if subdirs is None:
        return RoundInput(state, usage, layout, read, now, tuple(processors), views, host or NO_HOST)
    return RoundInput(state, usage, layout, read, now, tuple(processors), views, host or NO_HOST, subdirs)
