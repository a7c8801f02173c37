"""`colocate scheduler explain`: for one pod, every node's outcome per Filter plugin and every
Score plugin's raw, normalised and weighted score, what the allocating plugins would give the pod
on each feasible node (`details`: its CPUs, its devices), and the node that would be chosen.

All nodes are evaluated (no sampling) and every Filter plugin runs even after a failure, so the
report shows all reasons; a node's `feasible` is still decided by the first failure;
`reservationNodes` lists the nodes holding a reservation the pod may use. `raw` is what
Score returned before NormalizeScore; `total` is Σ weight × normalised.
"""

from __future__ import annotations

from typing import Any

from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.cycle_state import PREFERRED_NODES, CycleState
from scheduler_plugins.scheduler.framework.guard import PluginRaised
from scheduler_plugins.scheduler.framework.interfaces import NodeDetailPlugin
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.runtime import Framework
from scheduler_plugins.scheduler.framework.scheduling import select_host
from scheduler_plugins.scheduler.podinfo import PodInfo


def explain(framework: Framework, cluster: ClusterState, pod: PodInfo) -> dict[str, Any]:
    """The report; an out-of-tree plugin that raises ends it with that plugin's Error (`error`)."""
    cluster.delete_pod(pod.key)  # explain the pod as if it were not placed yet
    report: dict[str, Any] = {"pod": pod.key, "nodes": [], "selected": None}
    try:
        return _explain(framework, cluster, pod, report)
    except PluginRaised as raised:
        status = raised.status()
        report["selected"] = None
        report["error"] = f"{raised.method} {status.plugin}: {status.code.name}: {status.message}"
        return report


def _explain(framework: Framework, cluster: ClusterState, pod: PodInfo, report: dict[str, Any]) -> dict[str, Any]:
    state = CycleState()
    nodes = cluster.node_list()
    rows: dict[str, dict[str, Any]] = {
        n.name: {"name": n.name, "feasible": False, "filters": [], "scores": [], "total": None} for n in nodes
    }
    pod, result, status = framework.run_pre_filter(state, pod)
    if not status.is_success:
        for row in rows.values():
            row["filters"] = [status.as_dict()]
        report["nodes"] = list(rows.values())
        report["error"] = f"preFilter {status.plugin}: {status.code.name}: {status.message}"
        return report
    preferred = state.read(PREFERRED_NODES)
    if preferred:  # nodes holding a reservation this pod may use (Reservation plugin)
        report["reservationNodes"] = list(preferred)
    feasible: list[NodeInfo] = []
    detailers = [p for p in framework.points.filter if isinstance(p, NodeDetailPlugin)]
    for node in nodes:
        row = rows[node.name]
        if result is not None and result.node_names is not None and node.name not in result.node_names:
            row["filters"] = [
                {
                    "plugin": "PreFilterResult",
                    "code": "UnschedulableAndUnresolvable",
                    "reasons": ["node(s) not in the PreFilter result"],
                }
            ]
            continue
        first, statuses = framework.explain_filter(state, pod, node)
        row["filters"] = [s.as_dict() for s in statuses]
        if first.is_success:
            row["feasible"] = True
            feasible.append(node)
            details = {p.name: d for p in detailers if (d := p.explain_node(state, pod, node)) is not None}
            if details:
                row["details"] = details
    if feasible:
        status = framework.run_pre_score(state, pod, feasible)
        if status.is_success:
            table, status = framework.run_score(state, pod, feasible)
        if not status.is_success:
            report["error"] = f"score {status.plugin}: {status.code.name}: {status.message}"
        else:
            for i, node in enumerate(feasible):
                row = rows[node.name]
                row["scores"] = [
                    {"plugin": p.plugin, "raw": p.raw[i], "normalized": p.normalized[i], "weight": p.weight}
                    for p in table.plugins
                ]
                row["total"] = table.totals[i]
            report["selected"] = feasible[select_host(feasible, table.totals)].name
    report["nodes"] = list(rows.values())
    return report
