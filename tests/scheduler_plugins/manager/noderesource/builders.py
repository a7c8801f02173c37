"""Builders for the slo-controller calculation tests, shaped like Koordinator's
(`batchresource/plugin_test.go`: makeNodeStat, getTestPodList, getTestResourceMetrics, genPodMetric)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policies.apis.quantity import Quantity, QuantityFormat
from policies.apis.slo_config.colocation import ColocationStrategy
from policies.apis.slo_config.manager_config import ManagerConfig, load_manager_config
from policies.apis.timestamps import parse_time
from scheduler_plugins.manager.noderesource import update
from scheduler_plugins.manager.noderesource.inputs import Res, lenient_milli
from scheduler_plugins.manager.noderesource.plan import NodeObjects, NodePlan, plan_node
from scheduler_plugins.manager.noderesource.plugins.batchresource.plugin import BatchResult
from scheduler_plugins.manager.noderesource.plugins_profile import DEFAULT_TABLE
from scheduler_plugins.manager.noderesource.update import Decision
from tests.support.builders import make_pod

NOW = "2026-01-01T00:10:00Z"
FRESH = "2026-01-01T00:09:00Z"
#: the strategy most of Koordinator's batch cases use
STRATEGY_65: dict[str, Any] = {
    "enable": True,
    "cpuReclaimThresholdPercent": 65,
    "memoryReclaimThresholdPercent": 65,
    "degradeTimeMinutes": 15,
    "updateTimeThresholdSeconds": 300,
    "resourceDiffThreshold": 0.1,
}


def config(colocation: Mapping[str, Any] | None = None, **documents: Any) -> ManagerConfig:
    data = {"colocation-config": json.dumps(colocation if colocation is not None else STRATEGY_65)}
    data.update({k.replace("_", "-"): v if isinstance(v, str) else json.dumps(v) for k, v in documents.items()})
    loaded, issues = load_manager_config({"data": data})
    assert not issues, issues
    return loaded


def node(
    cpu: str = "100",
    memory: str = "120G",
    *,
    name: str = "test-node1",
    alloc_cpu: str | None = None,
    alloc_memory: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """makeNodeStat / makeNodeStatWithKubeletReserved: capacity cpu/memory, allocatable the same unless given."""
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    alloc = {"cpu": alloc_cpu or cpu, "memory": alloc_memory or memory, **(allocatable or {})}
    return {"metadata": meta, "status": {"capacity": {"cpu": cpu, "memory": memory}, "allocatable": alloc}}


def pod(
    name: str,
    cpu: str | Sequence[str] = (),
    memory: str | Sequence[str] = (),
    *,
    qos: str | None = None,
    phase: str = "Running",
    priority: int | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A pod of namespace `test` whose containers request = limit (makeResourceReq), one per cpu/memory pair."""
    cpus = [cpu] if isinstance(cpu, str) else list(cpu)
    memories = [memory] if isinstance(memory, str) else list(memory)
    containers = [
        {"name": f"c{i}", "resources": {"requests": {"cpu": c, "memory": m}, "limits": {"cpu": c, "memory": m}}}
        for i, (c, m) in enumerate(zip(cpus, memories, strict=True))
    ] or [{"name": "c0"}]
    return make_pod(
        name,
        "test",
        qos=qos,
        priority=priority,
        node="test-node1",
        containers=containers,
        phase=phase,
        annotations=annotations,
    )


def pod_metric(name: str, cpu: str, memory: str, priority: str = "") -> dict[str, Any]:
    """genPodMetric / genPodMetricWithSLO."""
    entry: dict[str, Any] = {
        "namespace": "test",
        "name": name,
        "podUsage": {"resources": {"cpu": cpu, "memory": memory}},
    }
    if priority:
        entry["priority"] = priority
    return entry


def metric(
    pods: Sequence[Mapping[str, Any]] = (),
    *,
    node_usage: tuple[str, str] = ("50", "55G"),
    system: tuple[str, str] = ("7", "12G"),
    updated: str | None = FRESH,
    host_apps: Sequence[tuple[str, str, str]] = (),
    prod_reclaimable: tuple[str, str] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "nodeMetric": {
            "nodeUsage": {"resources": {"cpu": node_usage[0], "memory": node_usage[1]}},
            "systemUsage": {"resources": {"cpu": system[0], "memory": system[1]}},
        },
        "podsMetric": list(pods),
    }
    if updated is not None:
        status["updateTime"] = updated
    if host_apps:
        status["hostApplicationMetric"] = [
            {"name": f"app{i}", "priority": prio, "usage": {"resources": {"cpu": c, "memory": m}}}
            for i, (c, m, prio) in enumerate(host_apps)
        ]
    if prod_reclaimable is not None:
        status["prodReclaimableMetric"] = {
            "resource": {"resources": {"cpu": prod_reclaimable[0], "memory": prod_reclaimable[1]}}
        }
    return {"metadata": {"name": "test-node1"}, "status": status}


def default_pods() -> list[dict[str, Any]]:
    """getTestPodList: podA LS 20/20G, podB BE, podC no label 2x(10/20G) Pending, podD BE 10/10G Succeeded."""
    return [
        pod("podA", "20", "20G", qos="LS"),
        pod("podB", qos="BE"),
        pod("podC", ["10", "10"], ["20G", "20G"], phase="Pending"),
        pod("podD", "10", "10G", qos="BE", phase="Succeeded"),
    ]


def default_metric() -> dict[str, Any]:
    """getTestResourceMetrics."""
    return metric([pod_metric("podA", "11", "11G"), pod_metric("podB", "10", "10G"), pod_metric("podC", "22", "22G")])


def multi_priority_pods(
    prod_annotations: Mapping[str, str] | None = None, prod_qos: str = "LS"
) -> list[dict[str, Any]]:
    """The pods of "calculate with pods in multiple priority classes" (and the NUMA cases)."""
    return [
        pod("podProd", "10", "10G", qos=prod_qos, annotations=prod_annotations),
        pod("podProd1", "10", "10G", priority=9999),
        pod("podBatch", "10", "10G", qos="BE"),
        pod("podMid", ["10", "10"], ["20G", "20G"], qos="BE", priority=7000, phase="Pending"),
        pod("podProd2", "10", "10G", phase="Succeeded"),
    ]


def run(
    cfg: ManagerConfig,
    the_node: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]] | None = None,
    the_metric: Mapping[str, Any] | None = None,
    nrt: Mapping[str, Any] | None = None,
    *,
    now: str = NOW,
    last_write: str | None = None,
) -> NodePlan:
    at = parse_time(now)
    assert at is not None
    the_pods = default_pods() if pods is None else pods
    last = parse_time(last_write) if last_write else None
    return plan_node(cfg, NodeObjects(the_node, the_pods, the_metric, nrt, last), at)


def value(text: str) -> int:
    """A quantity's value (cores for batch-cpu are milli-cores already)."""
    return Quantity.parse(text).value()


def nrt(*zones: tuple[str, str, str]) -> dict[str, Any]:
    """A NodeResourceTopology with zones (name, cpu allocatable, memory allocatable)."""
    return {
        "metadata": {"name": "test-node1"},
        "zones": [
            {
                "name": name,
                "type": "Node",
                "resources": [
                    {"name": "cpu", "capacity": cpu, "allocatable": cpu, "available": cpu},
                    {"name": "memory", "capacity": memory, "allocatable": memory, "available": memory},
                ],
            }
            for name, cpu, memory in zones
        ],
    }


@dataclass(frozen=True)
class Calculated:
    """The four in-tree plugins' results for one node, by hand: None resets a resource."""

    batch: Res | None
    mid: Res | None
    memory_format: QuantityFormat = QuantityFormat.BINARY_SI
    normalization_ratio: str | None = None
    amplification_ratio: str | None = None

    def results(self) -> dict[str, object]:
        out: dict[str, object] = {"MidResource": self.mid}
        if self.batch is not None:
            out["BatchResource"] = BatchResult(self.batch, self.memory_format, self.normalization_ratio, {})
        out["CPUNormalization"] = self.normalization_ratio
        out["ResourceAmplification"] = self.amplification_ratio
        return out


def prepare_amounts(
    the_node: Mapping[str, Any],
    batch: Res | None,
    mid: Res | None,
    memory_format: QuantityFormat,
    normalization_ratio: str | None,
    amplification_ratio: str | None,
) -> tuple[dict[str, Any], dict[str, int], dict[str, str]]:
    """The default table's prepare step over these results: the prepared node, the resources'
    amounts in thousandths and their texts (batch-cpu, batch-memory, mid-cpu, mid-memory)."""
    calc = Calculated(batch, mid, memory_format, normalization_ratio, amplification_ratio)
    prepared = DEFAULT_TABLE.prepare(the_node, calc.results())
    written = {n: prepared.allocatable[n] for n in DEFAULT_TABLE.resources if n in prepared.amounts}
    return prepared.as_dict(), prepared.amounts, written


def prepare_node(the_node: Mapping[str, Any], calc: Calculated) -> dict[str, Any]:
    return DEFAULT_TABLE.prepare(the_node, calc.results()).as_dict()


def decide_amounts(
    strategy: ColocationStrategy,
    old: Mapping[str, int],
    new: Mapping[str, int],
    old_annotations: Mapping[str, str],
    new_annotations: Mapping[str, str],
    last_write: float | None,
    now: float,
) -> Decision:
    """The default table's write decision over amounts in thousandths."""
    return update.decide_amounts(
        DEFAULT_TABLE.status_checks,
        DEFAULT_TABLE.meta_checks,
        strategy,
        old,
        new,
        old_annotations,
        new_annotations,
        last_write,
        now,
    )


def decide(
    strategy: ColocationStrategy,
    old_allocatable: Mapping[str, object],
    new_allocatable: Mapping[str, object],
    old_annotations: Mapping[str, str],
    new_annotations: Mapping[str, str],
    last_write: float | None,
    now: float,
) -> Decision:
    """`decide_amounts` over quantity texts (a text that does not parse counts 0)."""
    names = DEFAULT_TABLE.resources
    return decide_amounts(
        strategy,
        {name: lenient_milli(old_allocatable[name]) for name in names if name in old_allocatable},
        {name: lenient_milli(new_allocatable[name]) for name in names if name in new_allocatable},
        old_annotations,
        new_annotations,
        last_write,
        now,
    )
