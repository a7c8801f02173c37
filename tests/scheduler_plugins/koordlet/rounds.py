"""Building one strategy round's input from test objects (the builders of tests/support)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scheduler_plugins.koordlet import node_round
from scheduler_plugins.koordlet.cgroups.executor import Lister, Reader
from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver, CgroupLayout
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion, Resource
from scheduler_plugins.koordlet.host import HostView
from scheduler_plugins.koordlet.nodeslo import NodeSLO
from scheduler_plugins.koordlet.states import NodeState
from scheduler_plugins.koordlet.strategies.base import RoundInput
from scheduler_plugins.koordlet.topology import CPUInfo, flat_processors
from scheduler_plugins.koordlet.usage import ResourceUsage, Usage
from tests.support.builders import pod_uid

LAYOUT = CgroupLayout(Path("/cg"), CgroupVersion.V1, CgroupDriver.CGROUPFS)


def cores(cpu: float) -> int:
    return int(cpu * 1000)


def usage(
    node_cpu: float = 0,
    node_memory: int = 0,
    pods: Mapping[str, tuple[float, int]] | None = None,
    apps: Mapping[str, tuple[float, int]] | None = None,
) -> Usage:
    """Usage in cores and bytes: `pods={"default/web": (8, 0)}`."""
    return Usage(
        ResourceUsage(cores(node_cpu), node_memory),
        {k: ResourceUsage(cores(c), m) for k, (c, m) in (pods or {}).items()},
        {k: ResourceUsage(cores(c), m) for k, (c, m) in (apps or {}).items()},
    )


def with_uid(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    """`pod` with the UID the API server would have given it (the agent refuses pods without one)."""
    metadata = pod.get("metadata") or {}
    if metadata.get("uid"):
        return pod
    return {
        **pod,
        "metadata": {**metadata, "uid": pod_uid(metadata.get("name", ""), metadata.get("namespace", "default"))},
    }


def round_input(
    node: Mapping[str, Any],
    slo: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    used: Usage | None = None,
    current: Mapping[tuple[str, str], int | str] | None = None,
    processors: Sequence[CPUInfo] | None = None,
    now: float = 1000.0,
    layout: CgroupLayout = LAYOUT,
    topology: Mapping[str, Any] | None = None,
    host: HostView | None = None,
    reader: Reader | None = None,
    checked_slo: bool = True,
    subdirs: Lister | None = None,
) -> RoundInput:
    """`checked_slo=False`: the NodeSLO skips the slo-controller-config rules the agent applies, for
    tests of a strategy's own handling of values those rules refuse."""
    pods = [with_uid(p) for p in pods]
    slo_value = NodeSLO.parse(slo, checked=checked_slo) if slo is not None else None
    state = NodeState(node, slo_value, None, tuple(pods), topology)
    values = dict(current or {})

    def read(cgroup: str, resource: Resource) -> int | str | None:
        return values.get((cgroup, resource.name))

    return node_round.round_input(
        state,
        used or Usage(),
        layout,
        now,
        read=reader or read,
        processors=processors if processors is not None else flat_processors(20),
        host=host,
        subdirs=subdirs,
    )
