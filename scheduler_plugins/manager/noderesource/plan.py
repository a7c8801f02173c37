"""One reconcile of the three slo-controller controllers for one node, as a value.

`plan_node` is what `manager plan` prints and what `manager run` applies: the node's effective
colocation strategy, the plugin table's results (or their reset), the node as prepared for the
status write, the write decision, the NUMA-zone values, the NodeSLO spec and the NodeMetric spec.
It reads only its arguments (the clock is `now`), so a simulation can call it per step.

A plan gets what it reads through `Readers`: `PLAIN` computes everything (`plan_node`'s default);
`memo.MemoPlanner` supplies readers that keep what did not change between rounds. The steps are
the same either way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from policies.apis.quantity import QuantityError
from policies.apis.slo_config.colocation import ColocationStrategy
from policies.apis.slo_config.manager_config import ManagerConfig
from scheduler_plugins.manager.noderesource.collect_policy import nodemetric_spec
from scheduler_plugins.manager.noderesource.framework import (
    CalculatePlugin,
    PluginTable,
    PreparedNode,
    Sources,
    calculate,
)
from scheduler_plugins.manager.noderesource.inputs import (
    MetricInput,
    NodeInput,
    NodeRead,
    metric_input,
    node_input,
    read_node,
)
from scheduler_plugins.manager.noderesource.nodeslo_spec import render_nodeslo_spec
from scheduler_plugins.manager.noderesource.plugins.batchresource.batch import is_degraded
from scheduler_plugins.manager.noderesource.plugins_profile import DEFAULT_TABLE
from scheduler_plugins.manager.noderesource.update import Decision, decide_amounts

REASON_DISABLED: Final = "disabled: DisableInConfig"
#: the reason of a node whose NodeMetric is older than degradeTimeMinutes (what an old snapshot gets)
REASON_STALE: Final = "degraded: NodeMetric stale"
UNAVAILABLE: Final = "colocation config unavailable"
Object = Mapping[str, Any]
NO_WATCHED: Final[Mapping[str, Object | None]] = {}


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
        "refused",
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
        refused: tuple[str, ...] = (),
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
        #: why parts of the node's inputs were refused (`inputs.REFUSED_REASONS`), sorted
        self.refused: Final = refused

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
        if self.refused:
            out["refused"] = list(self.refused)
        out["colocationStrategy"] = dict(self.strategy.document)
        out["nodeSLO"] = self.nodeslo
        out["nodeMetric"] = self.nodemetric
        return out


@dataclass(frozen=True, slots=True)
class NodeFixed:
    """What a node's plan takes from its Node object, the config and its NodeSLO's extensions, and
    from nothing else (not its pods, not its NodeMetric, not the plugins' results)."""

    read: NodeRead
    strategy: ColocationStrategy
    #: the NodeSLO and NodeMetric specs to hold (shared: read them, never change them)
    nodeslo: dict[str, Any]
    nodemetric: dict[str, Any]
    #: whether colocation is on for the node (`ColocationConfig.node_enabled`)
    enabled: bool


def node_fixed(
    table: PluginTable, config: ManagerConfig, node: Object, extensions: Mapping[str, Any] | None
) -> NodeFixed:
    """The node's `NodeFixed`, computed (`memo.MemoPlanner` keeps it)."""
    read = read_node(node, table.resources)
    labels, annotations = read.labels, read.annotations
    strategy = config.colocation.strategy_for(labels, annotations)
    nodeslo = render_nodeslo_spec(config.slo, labels, annotations, extensions)
    return NodeFixed(read, strategy, nodeslo, nodemetric_spec(strategy), config.colocation.node_enabled(strategy))


@dataclass(frozen=True, slots=True)
class Readers:
    """How a plan gets what it reads: the node's fixed part, its `NodeInput` (by node name, the Node
    and its pods) and a plugin's result (by node name, the plugin and the round's sources)."""

    fixed: Callable[[PluginTable, ManagerConfig, Object, Mapping[str, Any] | None], NodeFixed]
    node_input: Callable[[str, Object, Sequence[Object]], NodeInput]
    calculate: Callable[[str, CalculatePlugin, Sources], object]


PLAIN: Final = Readers(
    node_fixed,
    lambda _name, node, pods: node_input(node, pods),
    lambda _name, plugin, sources: calculate(plugin, sources),
)


class NodeObjects(NamedTuple):
    """What one node's plan reads of the cluster: its Node, pods, NodeMetric and NodeResourceTopology,
    the time of its last status write, its NodeSLO's extensions, and the objects of the kinds the
    plugins' setup watches (kind -> the one named after the node)."""

    node: Object
    pods: Sequence[Object]
    metric: Object | None
    nrt: Object | None
    last_write: float | None = None
    nodeslo_extensions: Mapping[str, Any] | None = None
    watched: Mapping[str, Object | None] = NO_WATCHED


def plan_node(
    config: ManagerConfig,
    objects: NodeObjects,
    now: float,
    table: PluginTable = DEFAULT_TABLE,
    readers: Readers = PLAIN,
) -> NodePlan:
    """One round for one node (nothing is written): the fixed part, the plugins' results (reset when
    colocation is off for the node, and those reading the NodeMetric when it is degraded), the node
    prepared by the plugins, and the write decision of their checks. `readers` say how what it reads
    is got: `PLAIN` reads everything afresh, `memo.MemoPlanner`'s keep what did not change."""
    node, pods, metric, nrt, last_write, extensions, watched = objects
    fixed = readers.fixed(table, config, node, extensions)
    read, strategy = fixed.read, fixed.strategy
    has_nrt = nrt is not None
    if not config.available:
        return _nothing(
            fixed, has_nrt, "colocation config unavailable: nothing is written until it parses", UNAVAILABLE
        )
    node_in = readers.node_input(read.name, node, pods)
    results: dict[str, object] = {}
    if not fixed.enabled:
        state, degraded, refused = REASON_DISABLED, False, node_in.refused
    else:
        try:
            reading = metric_input(metric)
        except QuantityError as exc:
            return _error(fixed, has_nrt, f"NodeMetric has a malformed quantity: {exc}")
        degraded = is_degraded(strategy, reading, now)
        if not degraded and (reading is None or not reading.has_node_metric):
            return _error(fixed, has_nrt, "NodeMetric has no status.nodeMetric")
        state = _why_degraded(reading) if degraded else ""
        usable = None if degraded else reading
        refused = tuple(sorted({*node_in.refused, *usable.refused})) if usable is not None else node_in.refused
        sources = Sources(config, read, strategy, nrt, node_in, usable, results, watched)
        for plugin in table.calculators:
            if usable is not None or plugin.name not in table.metric_readers:
                results[plugin.name] = readers.calculate(read.name, plugin, sources)
    prepared = table.prepare(node, results)
    decision, reason = _decision(table, read, strategy, prepared, state, last_write, now)
    if refused:
        reason = f"{reason}; refused: {', '.join(refused)}"
    allocatable = prepared.allocatable
    # the fields spelled out (no `**` of a dict): this runs for every node, every round
    return NodePlan(
        name=read.name,
        strategy=strategy,
        allocatable={name: allocatable[name] for name in table.resources if name in prepared.amounts},
        prepared=prepared.as_dict(),
        decision=decision,
        reason=reason,
        zones=table.zones(results) if has_nrt else None,
        nodeslo=fixed.nodeslo,
        nodemetric=fixed.nodemetric,
        degraded=degraded,
        refused=refused,
    )


def _decision(
    table: PluginTable,
    read: NodeRead,
    strategy: ColocationStrategy,
    prepared: PreparedNode,
    state: str,
    last_write: float | None,
    now: float,
) -> tuple[Decision | None, str]:
    """The write decision of the table's checks (None when the node has nothing to write into),
    and the plan's reason: the node's state, then why it is written or not."""
    if not read.writable:
        return None, "; ".join(
            p for p in (state, "node has no status.capacity or status.allocatable: nothing written") if p
        )
    decision = decide_amounts(
        table.status_checks,
        table.meta_checks,
        strategy,
        read.current_milli,
        prepared.amounts,
        read.annotations,
        prepared.annotations,
        last_write,
        now,
    )
    why = decision.reason
    return decision, f"{state}; {why}" if state and why else state or why


def _why_degraded(reading: MetricInput | None) -> str:
    if reading is None:
        return "degraded: NodeMetric missing"
    if reading.update_time is None:
        return "degraded: NodeMetric never updated"
    return REASON_STALE


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
