"""One reconcile of the three slo-controller controllers for one node, as a value.

`plan_node` is what `manager plan` prints and what `manager run` applies: the node's effective
colocation strategy, the batch/mid results (or their reset), the node as prepared for the status
write, the write decision, the NUMA-zone values, the NodeSLO spec and the NodeMetric spec. It reads
only its arguments (the clock is `now`), so a simulation can call it per step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from policies.apis.constants import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY, RESOURCE_MEMORY
from policies.apis.quantity import Quantity, QuantityError, QuantityFormat
from policies.apis.slo_config.colocation import ColocationStrategy
from policies.apis.slo_config.manager_config import ManagerConfig
from scheduler_plugins.manager.noderesource.batch import is_degraded, node_batch
from scheduler_plugins.manager.noderesource.inputs import (
    MetricInput,
    NodeInput,
    Res,
    metric_input,
    multiply_milli,
    node_input,
    zones_of,
)
from scheduler_plugins.manager.noderesource.memo import NodeFixed, PlanMemo, node_fixed
from scheduler_plugins.manager.noderesource.mid import node_mid
from scheduler_plugins.manager.noderesource.numa import zone_batch
from scheduler_plugins.manager.noderesource.prepare import cpu_text, memory_text, prepare_amounts
from scheduler_plugins.manager.noderesource.update import Decision, decide_amounts

EXTENDED: Final = (BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY)
REASON_DISABLED: Final = "disabled: DisableInConfig"
#: the reason of a node whose NodeMetric is older than degradeTimeMinutes (what an old snapshot gets)
REASON_STALE: Final = "degraded: NodeMetric stale"
UNAVAILABLE: Final = "colocation config unavailable"


class NodePlan:
    """One node's plan. A value (`Final` attributes), written as a plain class rather than a frozen
    dataclass: one is made per node and round (see `update.Decision`)."""

    __slots__ = (
        "name",
        "strategy",
        "allocatable",
        "prepared",
        "decision",
        "reason",
        "zones",
        "nodeslo",
        "nodemetric",
        "degraded",
        "error",
    )

    def __init__(
        self,
        name: str,
        strategy: ColocationStrategy,
        allocatable: Mapping[str, str],
        prepared: Mapping[str, Any] | None,
        decision: Decision | None,
        reason: str,
        zones: Mapping[str, Mapping[str, str]] | None,
        nodeslo: Mapping[str, Any],
        nodemetric: Mapping[str, Any],
        degraded: bool = False,
        error: str | None = None,
    ) -> None:
        self.name: Final = name
        self.strategy: Final = strategy
        #: the node's batch/mid resources after this round (what a write leaves on the node)
        self.allocatable: Final = allocatable
        #: the prepared node: {"annotations", "capacity", "allocatable"}; None when nothing may be written
        self.prepared: Final = prepared
        self.decision: Final = decision
        self.reason: Final = reason
        #: zone name -> {batch-cpu, batch-memory} text; None without a NodeResourceTopology
        self.zones: Final = zones
        self.nodeslo: Final = nodeslo
        self.nodemetric: Final = nodemetric
        self.degraded: Final = degraded
        self.error: Final = error

    @property
    def update(self) -> bool:
        return self.decision is not None and self.decision.update

    def as_dict(self) -> dict[str, Any]:
        """The `manager plan -o json` entry of this node."""
        out: dict[str, Any] = {"name": self.name, "allocatable": dict(self.allocatable)}
        if self.zones is not None:
            out["zones"] = {name: dict(values) for name, values in self.zones.items()}
        out["update"] = self.update
        out["reason"] = self.reason
        out["colocationStrategy"] = dict(self.strategy.document)
        out["nodeSLO"] = self.nodeslo
        out["nodeMetric"] = self.nodemetric
        return out


def _zone_formats(nrt: Mapping[str, Any] | None) -> dict[str, QuantityFormat]:
    formats: dict[str, QuantityFormat] = {}
    for zone in (nrt or {}).get("zones") or []:
        for info in zone.get("resources") or []:
            if info.get("name") == RESOURCE_MEMORY:
                try:
                    formats[str(zone.get("name") or "")] = Quantity.parse(info.get("allocatable", "0")).format
                except QuantityError:
                    pass
    return formats


def _zone_cpu_text(milli_cores: int, ratio: str | None) -> str:
    try:
        factor = float(ratio) if ratio is not None else -1.0
    except ValueError:
        factor = -1.0
    if factor <= 1.0:
        return cpu_text(milli_cores)
    scaled = multiply_milli(milli_cores * 1000, factor)  # milli of the milli-core count, not rounded
    return cpu_text(scaled // 1000) if scaled % 1000 == 0 else Quantity(scaled * 10**6).canonical()


def zone_texts(
    zones: Mapping[str, Res], formats: Mapping[str, QuantityFormat], ratio: str | None
) -> dict[str, dict[str, str]]:
    return {
        name: {
            BATCH_CPU: _zone_cpu_text(value[0], ratio),
            BATCH_MEMORY: memory_text(value[1], formats.get(name, QuantityFormat.BINARY_SI)),
        }
        for name, value in zones.items()
    }


def plan_node(
    config: ManagerConfig,
    node: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    metric: Mapping[str, Any] | None,
    nrt: Mapping[str, Any] | None,
    now: float,
    last_write: float | None,
    nodeslo_extensions: Mapping[str, Any] | None = None,
    memo: PlanMemo | None = None,
) -> NodePlan:
    """One round for one node (nothing is written); `memo` keeps what rarely changes between rounds."""
    if memo is not None:
        fixed = memo.fixed(config, node, nrt, nodeslo_extensions)
    else:
        fixed = node_fixed(config, node, nrt, nodeslo_extensions)
    read, strategy = fixed.read, fixed.strategy
    has_nrt = nrt is not None
    if not config.available:
        return _nothing(
            fixed, has_nrt, "colocation config unavailable: nothing is written until it parses", UNAVAILABLE
        )
    node_in = memo.node_input(read.name, node, pods) if memo is not None else node_input(node, pods)
    state = ""
    degraded = False
    zones: dict[str, dict[str, str]] | None = {} if has_nrt else None
    batch: Res | None = None
    mid: Res | None = None
    ratio = amplified = None
    if not fixed.enabled:
        state = REASON_DISABLED
    else:
        assert fixed.ratios is not None
        ratio, amplified = fixed.ratios
        try:
            reading = metric_input(metric)
        except QuantityError as exc:
            return _error(fixed, has_nrt, f"NodeMetric has a malformed quantity: {exc}")
        if is_degraded(strategy, reading, now):
            degraded = True
            state = _why_degraded(reading)
        else:
            assert reading is not None
            if not reading.has_node_metric:
                return _error(fixed, has_nrt, "NodeMetric has no status.nodeMetric")
            batch = node_batch(strategy, node_in, reading)
            mid = node_mid(strategy, node_in, reading)
            if nrt is not None:
                zones = _zones(strategy, node_in, reading, nrt, ratio)
    prepared, amounts, written = prepare_amounts(node, batch, mid, node_in.memory_format, ratio, amplified)
    if not read.writable:
        decision = None
        reason = "; ".join(
            p for p in (state, "node has no status.capacity or status.allocatable: nothing written") if p
        )
    else:
        decision = decide_amounts(
            strategy, read.current_milli, amounts, read.annotations, prepared["annotations"], last_write, now
        )
        why = decision.reason
        reason = f"{state}; {why}" if state and why else state or why
    # the fields spelled out (no `**` of a dict): this runs for every node, every round
    return NodePlan(
        name=read.name,
        strategy=strategy,
        allocatable=written,
        prepared=prepared,
        decision=decision,
        reason=reason,
        zones=zones,
        nodeslo=fixed.nodeslo,
        nodemetric=fixed.nodemetric,
        degraded=degraded,
    )


def _why_degraded(reading: MetricInput | None) -> str:
    if reading is None:
        return "degraded: NodeMetric missing"
    if reading.update_time is None:
        return "degraded: NodeMetric never updated"
    return REASON_STALE


def _zones(
    strategy: ColocationStrategy,
    node: NodeInput,
    reading: MetricInput,
    nrt: Mapping[str, Any],
    ratio: str | None,
) -> dict[str, dict[str, str]]:
    """The NRT zones' batch texts (`zone_batch` over the zones the NRT lists)."""
    return zone_texts(zone_batch(strategy, node, reading, zones_of(nrt)), _zone_formats(nrt), ratio)


def _error(fixed: NodeFixed, has_nrt: bool, message: str) -> NodePlan:
    return _nothing(fixed, has_nrt, f"error: {message}; nothing written", message)


def _nothing(fixed: NodeFixed, has_nrt: bool, reason: str, error: str) -> NodePlan:
    """A plan that writes nothing, for `error`."""
    return NodePlan(
        name=fixed.read.name,
        strategy=fixed.strategy,
        allocatable=fixed.read.current,
        prepared=None,
        decision=None,
        reason=reason,
        zones={} if has_nrt else None,
        nodeslo=fixed.nodeslo,
        nodemetric=fixed.nodemetric,
        error=error,
    )
