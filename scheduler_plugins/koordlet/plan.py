"""`colocate koordlet plan`: one round of every enabled strategy over a node directory, nothing
written. The directory holds the Node, its NodeSLO, its Pods, optionally a NodeResourceTopology,
and a NodeMetric whose `status` stands for the latest usage. Current cgroup values are unknown to
a plan (no machine is read), so the steps that compare with them (the cfsQuota step limit, the
cpuset increase cap) act as on a fresh node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colocate.cli.output import table_lines
from colocate.cluster.files import load_directory
from policies.apis.kinds import NODE_METRIC_KIND
from policies.apis.objects import name_of, spec_of
from scheduler_plugins.koordlet.cgroups.layout import CgroupDriver, CgroupLayout
from scheduler_plugins.koordlet.cgroups.resources import CgroupVersion
from scheduler_plugins.koordlet.framework import QOSManager, StrategyEntry, builtin_strategies
from scheduler_plugins.koordlet.host import HostRoots, HostView
from scheduler_plugins.koordlet.node_round import round_input, unknown_cgroup
from scheduler_plugins.koordlet.states import KOORDLET_KINDS, node_state
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.usage import usage_of_node_metric


class PlanError(ValueError):
    """The node directory cannot be planned (one line for the user)."""


@dataclass(frozen=True)
class PlanSettings:
    driver: CgroupDriver = CgroupDriver.CGROUPFS
    version: CgroupVersion = CgroupVersion.V1
    #: where the host interfaces the BlkIO, SystemConfig and resctrl strategies need are looked for
    host: HostRoots = field(default_factory=HostRoots)


def plan(
    directory: Path,
    options: StrategyOptions,
    settings: PlanSettings,
    now: float,
    plugins: Sequence[StrategyEntry] = (),
) -> dict[str, Any]:
    """One round over the node directory; `plugins` are installed strategies enabled (after the built-in ones)."""
    if not directory.is_dir():
        raise PlanError(f"{directory}: not a directory")
    store = load_directory(directory, (*KOORDLET_KINDS, NODE_METRIC_KIND))
    if store.problems:
        problem = store.problems[0]
        raise PlanError(f"{problem.source}: {problem.message}")
    nodes = store.objects("Node")
    if len(nodes) != 1:
        raise PlanError(f"{directory}: expected exactly one Node, found {len(nodes)}")
    node_name = name_of(nodes[0])
    state = node_state(store, node_name)
    # pods without spec.nodeName in a node directory are the node's too
    extra = tuple(p for p in store.objects("Pod") if not spec_of(p).get("nodeName"))
    if extra:
        state = type(state)(
            state.node, state.node_slo, state.node_slo_error, state.pods + extra, state.topology, state.node_metric
        )
    if state.node_slo_error:
        raise PlanError(state.node_slo_error)
    layout = CgroupLayout(Path("/"), settings.version, settings.driver)
    inp = round_input(
        state, usage_of_node_metric(state.node_metric), layout, now, read=unknown_cgroup, host=HostView(settings.host)
    )
    report = QOSManager(options, [*builtin_strategies(), *plugins]).run_round(inp)
    return {
        "node": node_name,
        "strategies": report.strategies,
        "actions": [w.as_dict(layout) for w in report.writes] + [w.as_dict(settings.host) for w in report.host_writes],
        "evictions": [e.as_dict() for e in report.evictions],
        "unavailable": [
            {"strategy": name, "interface": interface, "reason": why}
            for name, lacking in report.unavailable.items()
            for interface, why in sorted(lacking.items())
        ],
    }


def plan_table(report: dict[str, Any]) -> str:
    """The plan for people: strategies, cgroup writes, evictions."""
    statuses = [
        (name, str(status["enabled"]).lower(), " ".join(f"{k}={v}" for k, v in status.items() if k != "enabled"))
        for name, status in report["strategies"].items()
    ]
    lines = [f"node {report['node']}", "", *table_lines(("STRATEGY", "ENABLED", "DETAIL"), statuses), ""]
    actions = [(a["strategy"], a.get("cgroup", "-"), a["file"], a["value"].strip()) for a in report["actions"]]
    lines += table_lines(("STRATEGY", "CGROUP", "FILE", "VALUE"), actions) if actions else ["(no cgroup writes)"]
    lines.append("")
    evictions = [(e["strategy"], e["pod"], e["reason"]) for e in report["evictions"]]
    lines += table_lines(("STRATEGY", "POD", "REASON"), evictions) if evictions else ["(no evictions)"]
    lacking = [(u["strategy"], u["interface"], u["reason"]) for u in report.get("unavailable", [])]
    if lacking:
        lines += ["", *table_lines(("STRATEGY", "UNAVAILABLE", "REASON"), lacking)]
    return "\n".join(lines)
