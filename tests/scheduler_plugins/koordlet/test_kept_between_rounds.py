"""What a strategy keeps between two rounds of one node (a pod's CPUBurst plan, CPUSuppress's BE
pods) follows the objects: a pod the informer replaced, or another set of pods, is read anew in the
very next round; and the QoS manager asks each strategy's gate once."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from scheduler_plugins.koordlet.cgroups import resources as r
from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.framework import QOSManager, builtin_strategies
from scheduler_plugins.koordlet.nodeslo import NodeSLO
from scheduler_plugins.koordlet.strategies.base import StrategyOptions, StrategyResult
from scheduler_plugins.koordlet.strategies.cpuburst import CPUBurst
from scheduler_plugins.koordlet.strategies.cpusuppress import CPUSuppress
from tests.scheduler_plugins.koordlet.rounds import round_input, usage
from tests.support.builders import container_hash, make_node, make_node_slo, make_pod

NODE = make_node("n1", capacity={"cpu": "20", "memory": "64Gi"}, allocatable={"cpu": "20", "memory": "64Gi"})
SLO = NodeSLO.parse(make_node_slo("n1", cpu_burst={"policy": "cpuBurstOnly", "cpuBurstPercent": 100}))


def web(started: bool, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    pod = make_pod(
        "web", node="n1", qos="LS", limits={"cpu": "2"}, requests={"cpu": "1"}, annotations=annotations, uid=True
    )
    if started:
        pod["status"] = {"containerStatuses": [{"name": "main", "containerID": f"containerd://{container_hash('m')}"}]}
    return pod


def bursts(strategy: CPUBurst, pod: dict[str, Any]) -> list[int | str]:
    """The burst writes of a round over `pod`, with the node's one NodeSLO (parsed once, as the agent does)."""
    inp = round_input(NODE, None, [pod])
    result = strategy.round(replace(inp, state=replace(inp.state, node_slo=SLO)))
    return [w.value for w in result.writes if w.resource is r.CPU_BURST]


def test_cpuburst_reads_a_replaced_pod_in_the_next_round() -> None:
    strategy = CPUBurst(StrategyOptions(koordlet_gates("")))
    assert bursts(strategy, web(started=False)) == []  # no container runs: no cgroup to write
    started = web(started=True)
    # 2 cores at 100 %: 200,000 µs of burst for the container, and the pod their sum
    assert bursts(strategy, started) == [200_000, 200_000]
    assert bursts(strategy, started) == [200_000, 200_000]  # the same pod again
    annotated = web(started=True, annotations={"koordinator.sh/cpuBurst": json.dumps({"cpuBurstPercent": 50})})
    assert bursts(strategy, annotated) == [100_000, 100_000]
    assert bursts(strategy, web(started=False)) == []  # replaced by one not started again


def test_cpuburst_forgets_the_pods_that_are_gone() -> None:
    strategy = CPUBurst(StrategyOptions(koordlet_gates("")))
    bursts(strategy, web(started=True))
    inp = round_input(NODE, None, [])
    strategy.round(replace(inp, state=replace(inp.state, node_slo=SLO)))
    assert strategy._plans == {}


def test_cpusuppress_counts_the_be_pods_of_each_round() -> None:
    slo = make_node_slo("n1", threshold={"enable": True, "cpuSuppressThresholdPercent": 70})
    ls = make_pod("web", node="n1", requests={"cpu": "8"})
    be = make_pod("batch", node="n1", qos="BE", requests={"kubernetes.io/batch-cpu": "2000"})
    used = usage(12, pods={"default/web": (8, 0), "default/batch": (2, 0)})
    strategy = CPUSuppress(StrategyOptions(koordlet_gates("")))
    first = strategy.round(round_input(NODE, slo, [ls], used))
    # without the BE pod object, its usage counts as another non-BE pod's
    assert first.status["suppressMilliCPU"] == 14000 - 10000 - 2000
    second = strategy.round(round_input(NODE, slo, [ls, be], used))
    assert second.status["suppressMilliCPU"] == 14000 - 8000 - 2000


def test_a_lacking_interface_reads_the_same_alone_or_with_others() -> None:
    result = StrategyResult("X").lacks("resctrl", "no resctrl filesystem mounted")
    assert result.status["unavailable"] == "resctrl: no resctrl filesystem mounted"
    result.lacks("blkio", "no blkio")
    assert result.status["unavailable"] == "blkio: no blkio; resctrl: no resctrl filesystem mounted"


class Counted:
    name = "Counted"
    interval = 1.0

    def __init__(self, options: StrategyOptions) -> None:
        self.asked = 0

    def enabled(self) -> bool:
        self.asked += 1
        return False

    def setup(self, ctx: object) -> None:
        pass

    def round(self, inp: object) -> StrategyResult:
        raise AssertionError("a disabled strategy never runs")


def test_the_qos_manager_asks_a_gate_once_and_reports_it_every_round() -> None:
    entry = builtin_strategies()[0]
    table = [type(entry)("Counted", "Counted", (), "reconcile-interval-seconds", Counted)]
    manager = QOSManager(StrategyOptions(koordlet_gates("")), table)
    inp = round_input(NODE, None, [])
    for _ in range(3):
        assert manager.run_round(inp).strategies == {"Counted": {"enabled": False}}
    strategy = manager.strategies["Counted"]
    assert isinstance(strategy, Counted) and strategy.asked == 1
