"""The strategy contract (Koordinator's `qosmanager/framework`): `enabled()`, `setup(ctx)`, and
one `round(input)` that returns what to do — cgroup writes, host file writes and evictions as
values — instead of doing it. The framework's runner applies them (or prints them with
`--dry-run`), so each decision is testable without mocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from policies.apis.feature_gates import FeatureGates
from policies.apis.objects import status_of
from policies.apis.quantity import QuantityError, milli_value, value
from scheduler_plugins.koordlet.cgroups.executor import CgroupWrite, Lister, Reader
from scheduler_plugins.koordlet.cgroups.layout import CgroupLayout
from scheduler_plugins.koordlet.host import NO_HOST, HostView, HostWrite
from scheduler_plugins.koordlet.nodeslo import ThresholdStrategy
from scheduler_plugins.koordlet.pods import PodView
from scheduler_plugins.koordlet.states import NodeState
from scheduler_plugins.koordlet.topology import CPUInfo
from scheduler_plugins.koordlet.usage import Usage


@dataclass(frozen=True)
class Eviction:
    strategy: str
    pod: Mapping[str, Any]
    key: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "pod": self.key, "reason": self.reason}


@dataclass(init=False)
class StrategyResult:
    """One strategy's round on one node; every field but `name` defaults to empty, in `__init__`."""

    name: str
    #: what `plan` prints under strategies.<name> (besides `enabled`)
    status: dict[str, Any]
    writes: list[CgroupWrite]
    evictions: list[Eviction]
    #: writes outside the pods' cgroups (/proc/sys, resctrl)
    host_writes: list[HostWrite]
    #: interface (`host.INTERFACES`) -> why this node lacks it; also in `status["unavailable"]`
    unavailable: dict[str, str]

    def __init__(
        self,
        name: str,
        status: dict[str, Any] | None = None,
        writes: list[CgroupWrite] | None = None,
        evictions: list[Eviction] | None = None,
        host_writes: list[HostWrite] | None = None,
        unavailable: dict[str, str] | None = None,
    ) -> None:
        # the generated __init__'s, without a factory call per field: every strategy of every node
        # makes one each round
        self.name = name
        self.status = {} if status is None else status
        self.writes = [] if writes is None else writes
        self.evictions = [] if evictions is None else evictions
        self.host_writes = [] if host_writes is None else host_writes
        self.unavailable = {} if unavailable is None else unavailable

    def lacks(self, interface: str, why: str) -> StrategyResult:
        """Record that the node lacks `interface`: `plan`/`run` print it, the agent's metric counts it."""
        unavailable = self.unavailable
        unavailable[interface] = why
        if len(unavailable) == 1:  # the usual case: one interface lacking, no list to sort and join
            self.status["unavailable"] = f"{interface}: {why}"
        else:
            self.status["unavailable"] = "; ".join(f"{k}: {v}" for k, v in sorted(unavailable.items()))
        return self


def node_amount(node: Mapping[str, Any] | None, field_name: str, resource: str) -> int:
    """A node's status.<capacity|allocatable>[resource] (cpu in millicores), 0 when absent or unreadable."""
    raw = status_of(node or {}).get(field_name) or {}
    if resource not in raw:
        return 0
    try:
        return milli_value(raw[resource]) if resource == "cpu" else value(raw[resource])
    except QuantityError:
        return 0


@dataclass(frozen=True)
class RoundInput:
    """Everything one round may read."""

    state: NodeState
    usage: Usage
    layout: CgroupLayout
    read: Reader  # the current value of a cgroup file (None: unknown)
    now: float
    processors: tuple[CPUInfo, ...]
    pods: tuple[PodView, ...]
    host: HostView = NO_HOST
    #: the child cgroups of a cgroup (a pod's sandbox container); none known by default (plan)
    subdirs: Lister = field(default=lambda cgroup, subsystem: ())

    def node_amount(self, field_name: str, resource: str) -> int:
        """The node's status.<capacity|allocatable>[resource] (cpu in millicores), 0 when absent."""
        return node_amount(self.state.node, field_name, resource)

    def eviction_thresholds(
        self, result: StrategyResult, last_evict_time: float | None, cool_time: float
    ) -> ThresholdStrategy | None:
        """The NodeSLO thresholds an eviction strategy (CPUEvict, MemoryEvict) acts on this round, or
        None, with the reason in `result.status`: it evicted less than `cool_time` ago, or the
        NodeSLO is missing or switches eviction off."""
        if last_evict_time is not None and self.now < last_evict_time + cool_time:
            result.status["reason"] = "in cool time"
            return None
        slo = self.state.node_slo
        if slo is None or not slo.threshold.enable:
            result.status["reason"] = self.state.node_slo_error or "disabled by NodeSLO"
            return None
        return slo.threshold


@dataclass(frozen=True)
class StrategyOptions:
    gates: FeatureGates
    cpu_suppress_interval: float = 1.0
    cpu_evict_interval: float = 1.0
    cpu_evict_cool_time: float = 20.0
    memory_evict_interval: float = 1.0
    memory_evict_cool_time: float = 4.0
    reconcile_interval: float = 1.0
    #: the collector's interval: the suppress and evict windows are at least this long
    collect_interval: float = 1.0


class Strategy(Protocol):
    name: str
    interval: float

    def enabled(self) -> bool:
        """The feature gate (and its interval > 0): fixed at start-up."""

    def setup(self, ctx: Any) -> None:
        """Grab what the strategy needs from the QoS manager's context before the first round."""

    def round(self, inp: RoundInput) -> StrategyResult:
        """One round: what to write and whom to evict. May keep state (cool times)."""
