"""One round of the manager: the plans of the nodes that need one, and the writes they call for.

The reconciler holds what Koordinator's controllers keep in memory: the loaded config (kept when a
new one fails to load), the time of each node's last status write and NRT write, and which nodes
are degraded (an Event on entering). It decides; `writer` applies. A write that failed is not
recorded as written, so the next round tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from policies.apis.kinds import NODE_METRIC_KIND, NODE_SLO_KIND
from policies.apis.slo_config.manager_config import ConfigIssue, ManagerConfig, load_manager_config
from scheduler_plugins.clock import Clock
from scheduler_plugins.manager.cluster import Snapshot
from scheduler_plugins.manager.noderesource.framework import PluginTable
from scheduler_plugins.manager.noderesource.memo import MemoPlanner
from scheduler_plugins.manager.noderesource.plan import NodeObjects, NodePlan
from scheduler_plugins.manager.noderesource.plugins_profile import DEFAULT_TABLE
from scheduler_plugins.manager.noderesource.topology import updated_zones

log = logging.getLogger("colocate.manager")

REASON_DEGRADED: Final = "NodeResourceDegraded"
REASON_REFUSED: Final = "NodeResourceInputRefused"


@dataclass(frozen=True)
class StatusWrite:
    """Merge-patch the node's status subresource: the four extended resources (None removes one)."""

    node: str
    resources: Mapping[str, str | None]


@dataclass(frozen=True)
class MetaPatch:
    """Merge-patch the node's annotations (None removes one)."""

    node: str
    annotations: Mapping[str, str | None]


@dataclass(frozen=True)
class TopologyWrite:
    node: str
    zones: list[dict[str, Any]]


@dataclass(frozen=True)
class SpecWrite:
    """Create (owned by the Node) or replace the spec of the node's NodeSLO or NodeMetric."""

    kind: str
    node: str
    spec: Mapping[str, Any]
    create: bool
    node_uid: str = ""


@dataclass(frozen=True)
class NodeEvent:
    node: Mapping[str, Any]
    reason: str
    message: str


Action = StatusWrite | MetaPatch | TopologyWrite | SpecWrite | NodeEvent


@dataclass
class Round:
    plans: list[NodePlan] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    config_issues: list[ConfigIssue] = field(default_factory=list)
    #: nodes whose round raised (logged); they are retried with the next round
    failed: list[str] = field(default_factory=list)


def _resource_patch(resources: Iterable[str], old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, str | None]:
    return {name: new.get(name) for name in resources if old.get(name) != new.get(name) or name in new}


def _annotation_patch(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str | None]:
    patch: dict[str, str | None] = {k: v for k, v in new.items() if old.get(k) != v}
    patch.update({k: None for k in old if k not in new})
    return patch


class Reconciler:
    def __init__(self, clock: Clock, table: PluginTable = DEFAULT_TABLE) -> None:
        self.clock = clock
        self.table = table
        self.config: ManagerConfig | None = None
        self._configmap_data: Any = object()
        self.last_write: dict[str, float] = {}
        self.last_topology_write: dict[str, float] = {}
        self.degraded: set[str] = set()
        #: node -> the reasons its inputs were last refused for (an Event when they change)
        self.refused: dict[str, tuple[str, ...]] = {}
        #: (kind, node) -> (the spec last written, the spec the API server stored for it): a server
        #: that keeps a spec differently from what was sent (pruned or canonicalised) does not make
        #: the manager write it again and again, while anyone else's change is undone
        self.specs_stored: dict[tuple[str, str], tuple[Any, Any]] = {}
        #: (kind, node) -> (stored spec, wanted spec, specs_stored entry, differs): `_differs`' last answer
        self._compared: dict[tuple[str, str], tuple[Any, Any, Any, bool]] = {}
        #: plans the nodes, keeping between rounds what rarely changes (each node's pod inputs, its
        #: NodeSLO spec, the plugins' results while what they read holds)
        self.planner = MemoPlanner(table)

    def observe_config(self, configmap: Mapping[str, Any] | None) -> list[ConfigIssue]:
        """Load the ConfigMap when its data changed; failures keep the previous config."""
        data = configmap.get("data") if configmap is not None else None
        if self.config is not None and (configmap is None or data == self._configmap_data):
            return []
        self._configmap_data = data
        self.config, issues = load_manager_config(configmap, self.config)
        for issue in issues:
            log.warning("slo-controller-config: %s: %s", issue.reason, issue.message)
        return issues

    def forget(self, names: Iterable[str]) -> None:
        """A NodeMetric (or Node) was deleted: its last-write clocks go (Koordinator's SyncContext)."""
        for name in names:
            self.last_write.pop(name, None)
            self.last_topology_write.pop(name, None)
            self.refused.pop(name, None)
            self.planner.forget(name)
            for kind in (NODE_SLO_KIND, NODE_METRIC_KIND):
                self.specs_stored.pop((kind, name), None)
                self._compared.pop((kind, name), None)

    def written(self, name: str, when: float) -> None:
        self.last_write[name] = when

    def topology_written(self, name: str, when: float) -> None:
        self.last_topology_write[name] = when

    def spec_written(self, action: SpecWrite, stored: Mapping[str, Any] | None) -> None:
        """A spec write succeeded; `stored` is the object the API server answered with."""
        if stored is not None:
            self.specs_stored[(action.kind, action.node)] = (action.spec, stored.get("spec"))

    def _differs(self, kind: str, name: str, stored: Any, wanted: Mapping[str, Any]) -> bool:
        """The stored spec is not what the manager wants, nor the server's version of its last write of it.

        The answer is kept while the stored spec, the wanted one and the last write's record are the
        very objects compared (a store replaces an object when it changes, and the planner hands out the
        same rendered spec while its inputs hold): comparing two NodeSLO specs is a deep walk."""
        key = (kind, name)
        last = self.specs_stored.get(key)
        seen = self._compared.get(key)
        if seen is not None and seen[0] is stored and seen[1] is wanted and seen[2] is last:
            return seen[3]
        differs = stored != wanted and (last is None or last != (wanted, stored))
        self._compared[key] = (stored, wanted, last, differs)
        return differs

    def reconcile(self, snapshot: Snapshot, names: Iterable[str] | None = None) -> Round:
        """Plan the named nodes (all without names) and list the writes."""
        result = Round(config_issues=self.observe_config(snapshot.configmap))
        config = self.config or ManagerConfig()
        now = self.clock()
        nodes = snapshot.nodes
        wanted = sorted(nodes) if names is None else sorted(n for n in names if n in nodes)
        slos, metrics, topologies, pods = (
            snapshot.node_slos,
            snapshot.node_metrics,
            snapshot.topologies,
            snapshot.pods_by_node,
        )
        last_write, plan_node = self.last_write, self.planner.plan
        plans, actions = result.plans, result.actions
        for name in wanted:
            node = nodes[name]
            slo = slos.get(name)
            metric = metrics.get(name)
            nrt = topologies.get(name)
            try:
                extensions = ((slo or {}).get("spec") or {}).get("extensions")
                objects = NodeObjects(
                    node, pods.get(name, ()), metric, nrt, last_write.get(name), extensions, snapshot.watched_of(name)
                )
                plan = plan_node(config, objects, now)
                self._actions(config, node, slo, metric, nrt, plan, now, actions)
            except Exception:  # one node's malformed objects must not stop the others
                log.exception("node %s: the round failed; nothing written for it", name)
                result.failed.append(name)
                continue
            plans.append(plan)
        return result

    def _actions(
        self,
        config: ManagerConfig,
        node: Mapping[str, Any],
        slo: Mapping[str, Any] | None,
        metric: Mapping[str, Any] | None,
        nrt: Mapping[str, Any] | None,
        plan: NodePlan,
        now: float,
        out: list[Action],
    ) -> None:
        """Append the node's writes to `out` (all of them, or none when this raises)."""
        name = plan.name
        meta = node.get("metadata") or {}
        actions: list[Action] = []
        if plan.degraded:
            if name not in self.degraded:
                self.degraded.add(name)
                actions.append(NodeEvent(node, REASON_DEGRADED, f"batch and mid resources removed: {plan.reason}"))
        elif name in self.degraded:
            self.degraded.discard(name)
        if plan.refused:
            if self.refused.get(name) != plan.refused:
                self.refused[name] = plan.refused
                message = f"inputs refused ({', '.join(plan.refused)}): read as 0, the written amounts capped"
                actions.append(NodeEvent(node, REASON_REFUSED, message))
        else:
            self.refused.pop(name, None)
        decision = plan.decision
        if plan.prepared is not None and decision is not None and (decision.status or decision.meta):
            if decision.status:
                old = (node.get("status") or {}).get("allocatable") or {}
                actions.append(
                    StatusWrite(name, _resource_patch(self.table.resources, old, plan.prepared["allocatable"]))
                )
            annotations = _annotation_patch(meta.get("annotations") or {}, plan.prepared["annotations"])
            if annotations:
                actions.append(MetaPatch(name, annotations))
        if nrt is not None and plan.zones:
            zones, changed = updated_zones(nrt.get("zones") or [], plan.zones, plan.strategy.resource_diff_threshold)
            last = self.last_topology_write.get(name)
            if changed or last is None or now - last > plan.strategy.update_time_threshold_seconds:
                actions.append(TopologyWrite(name, zones))
        if slo is None:
            actions.append(SpecWrite(NODE_SLO_KIND, name, plan.nodeslo, True, str(meta.get("uid") or "")))
        elif self._differs(NODE_SLO_KIND, name, slo.get("spec"), plan.nodeslo):
            actions.append(SpecWrite(NODE_SLO_KIND, name, plan.nodeslo, False))
        if config.available:
            if metric is None:
                actions.append(SpecWrite(NODE_METRIC_KIND, name, plan.nodemetric, True, str(meta.get("uid") or "")))
            elif not config.error and self._differs(NODE_METRIC_KIND, name, metric.get("spec"), plan.nodemetric):
                actions.append(SpecWrite(NODE_METRIC_KIND, name, plan.nodemetric, False))
        if actions:
            out.extend(actions)
