"""One reconcile of the three slo-controller controllers for one node, as a value.

`plan_node` is what `manager plan` prints and what `manager run` applies: the node's effective
colocation strategy, the batch/mid results (or their reset), the node as prepared for the status
write, the write decision, the NUMA-zone values, the NodeSLO spec and the NodeMetric spec. It reads
only its arguments (the clock is `now`), so a simulation can call it per step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from policies.constants import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY, RESOURCE_MEMORY
from policies.noderesource.amplification import amplification_ratio
from policies.noderesource.batch import is_degraded, node_batch
from policies.noderesource.collect_policy import nodemetric_spec
from policies.noderesource.inputs import (
    MetricInput,
    NodeInput,
    Res,
    ZoneInput,
    metric_input,
    multiply_milli,
    node_input,
    read_node,
    zones_of,
)
from policies.noderesource.memo import PlanMemo
from policies.noderesource.mid import node_mid
from policies.noderesource.nodeslo import render_nodeslo_spec
from policies.noderesource.normalization import normalization_ratio
from policies.noderesource.numa import zone_batch
from policies.noderesource.prepare import Calculated, cpu_text, memory_text, prepare_node
from policies.noderesource.update import Decision, decide
from policies.quantity import Quantity, QuantityError, QuantityFormat
from policies.slo_config.colocation import ColocationStrategy
from policies.slo_config.manager_config import ManagerConfig

EXTENDED: Final = (BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY)
REASON_DISABLED: Final = "disabled: DisableInConfig"


@dataclass(frozen=True, slots=True)
class NodePlan:
    name: str
    strategy: ColocationStrategy
    #: the node's batch/mid resources after this round (what a write leaves on the node)
    allocatable: Mapping[str, str]
    #: the prepared node: {"annotations", "capacity", "allocatable"}; None when nothing may be written
    prepared: Mapping[str, Any] | None
    decision: Decision | None
    reason: str
    #: zone name -> {batch-cpu, batch-memory} text; None without a NodeResourceTopology
    zones: Mapping[str, Mapping[str, str]] | None
    nodeslo: Mapping[str, Any]
    nodemetric: Mapping[str, Any]
    degraded: bool = False
    error: str | None = None

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


def _extended(allocatable: Mapping[str, Any]) -> dict[str, str]:
    return {name: str(allocatable[name]) for name in EXTENDED if name in allocatable}


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
    read = memo.read_node(node) if memo is not None else read_node(node)
    labels, annotations, name = read.labels, read.annotations, read.name
    if memo is not None:
        strategy = memo.strategy(name, config.colocation, labels, annotations)
        nodeslo = memo.nodeslo(name, config.slo, labels, annotations, nodeslo_extensions)
        nodemetric = memo.nodemetric(name, strategy)
    else:
        strategy = config.colocation.strategy_for(labels, annotations)
        nodeslo = render_nodeslo_spec(config.slo, labels, annotations, nodeslo_extensions)
        nodemetric = nodemetric_spec(strategy)
    current = read.current
    has_nrt = nrt is not None
    base: dict[str, Any] = dict(name=name, strategy=strategy, nodeslo=nodeslo, nodemetric=nodemetric)
    if not config.available:
        return NodePlan(
            **base,
            allocatable=current,
            prepared=None,
            decision=None,
            reason="colocation config unavailable: nothing is written until it parses",
            zones={} if has_nrt else None,
            error="colocation config unavailable",
        )
    node_in = memo.node_input(name, node, pods) if memo is not None else node_input(node, pods)
    state = ""
    degraded = False
    zones: dict[str, dict[str, str]] | None = {} if has_nrt else None
    if not config.colocation.node_enabled(strategy):
        calc = Calculated(None, None, node_in.memory_format)
        state = REASON_DISABLED
    else:
        nrt_annotations = (nrt or {}).get("metadata", {}).get("annotations")
        if memo is not None:
            ratio, amplified = memo.ratios(config.normalization, config.amplification, read, nrt_annotations)
        else:
            ratio = normalization_ratio(config.normalization, labels, nrt_annotations)
            amplified = amplification_ratio(config.amplification, labels, annotations)
        try:
            reading = metric_input(metric)
        except QuantityError as exc:
            return _error(base, current, has_nrt, f"NodeMetric has a malformed quantity: {exc}")
        if is_degraded(strategy, reading, now):
            degraded = True
            calc = Calculated(None, None, node_in.memory_format, ratio, amplified)
            state = "degraded: " + _why_degraded(reading)
        else:
            assert reading is not None
            if not reading.has_node_metric:
                return _error(base, current, has_nrt, "NodeMetric has no status.nodeMetric")
            calc, zones = _calculate(
                strategy, node_in, reading, zones_of(nrt), (ratio, amplified), _zone_formats(nrt), has_nrt
            )
    prepared = prepare_node(node, calc)
    if not read.writable:
        decision = None
        reason = "; ".join(
            p for p in (state, "node has no status.capacity or status.allocatable: nothing written") if p
        )
    else:
        decision = decide(
            strategy,
            read.status.get("allocatable") or {},
            prepared["allocatable"],
            annotations,
            prepared["annotations"],
            last_write,
            now,
        )
        why = decision.reason
        reason = f"{state}; {why}" if state and why else state or why
    # the fields spelled out (not `**base`): this runs for every node, every round
    return NodePlan(
        name=name,
        strategy=strategy,
        allocatable=_extended(prepared["allocatable"]),
        prepared=prepared,
        decision=decision,
        reason=reason,
        zones=zones,
        nodeslo=nodeslo,
        nodemetric=nodemetric,
        degraded=degraded,
    )


def _why_degraded(reading: MetricInput | None) -> str:
    if reading is None:
        return "NodeMetric missing"
    if reading.update_time is None:
        return "NodeMetric never updated"
    return "NodeMetric stale"


def _calculate(
    strategy: ColocationStrategy,
    node: NodeInput,
    reading: MetricInput,
    zones: Sequence[ZoneInput],
    ratios: tuple[str | None, str | None],
    formats: Mapping[str, QuantityFormat],
    has_nrt: bool,
) -> tuple[Calculated, dict[str, dict[str, str]] | None]:
    ratio = ratios[0]
    batch = node_batch(strategy, node, reading)
    mid = node_mid(strategy, node, reading)
    zone_values = zone_batch(strategy, node, reading, zones)
    calc = Calculated(batch, mid, node.memory_format, ratio, ratios[1], zone_values, formats)
    return calc, (zone_texts(zone_values, formats, ratio) if has_nrt else None)


def _error(base: dict[str, Any], current: Mapping[str, str], has_nrt: bool, message: str) -> NodePlan:
    return NodePlan(
        **base,
        allocatable=current,
        prepared=None,
        decision=None,
        reason=f"error: {message}; nothing written",
        zones={} if has_nrt else None,
        error=message,
    )
