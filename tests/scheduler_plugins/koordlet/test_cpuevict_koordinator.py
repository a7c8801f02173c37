"""CPUEvict against Koordinator's own cases: `Test_cpuEvict` in
`pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict_test.go`, transcribed case by case (the same
pods, usage, node and thresholds; Koordinator's mock evictor becomes our list of evictions)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.strategies.cpuevict import CPUEvict
from tests.scheduler_plugins.koordlet.rounds import round_input, usage
from tests.support.builders import make_node, make_node_slo, make_pod

ENABLED = {"koordinator.sh/eviction-enabled": "true"}


def cpu_evict_pod(name: str, qos: str, priority: int, labels: dict[str, str], phase: str = "Running") -> dict[str, Any]:
    """createCPUEvictTestPodWithLabels: one container without resources."""
    return make_pod(name, node="n1", qos=qos, priority=priority, labels=labels, phase=phase)


POD0 = cpu_evict_pod("test_failed_pod", "LSR", 1000, {**ENABLED, "koordinator.sh/priority": "1000"}, phase="Failed")
POD1 = cpu_evict_pod("test_evictDisabled_pod", "LSR", 1000, {"koordinator.sh/priority": "1000"})
POD2 = cpu_evict_pod("test_higher_priority", "LS", 3400, {**ENABLED, "koordinator.sh/priority": "1000"})
POD3 = cpu_evict_pod("test_podPriority_120_2000", "", 120, {**ENABLED, "koordinator.sh/priority": "2000"})
POD4 = cpu_evict_pod("test_podPriority_120_3000", "BE", 120, {**ENABLED, "koordinator.sh/priority": "3000"})
POD5 = cpu_evict_pod("test_podPriority_120_4000", "BE", 120, {**ENABLED, "koordinator.sh/priority": "4000"})
POD6 = cpu_evict_pod("test_podPriority_100_9999", "BE", 100, dict(ENABLED))
POD7 = cpu_evict_pod("test_podPriority_100_9999_1", "BE", 100, dict(ENABLED))
POD8 = make_pod(  # mockBEPodForCPUEvictWithAnnotationsLabels
    "batch-pod-1",
    node="n1",
    qos="BE",
    priority=100,
    labels=dict(ENABLED),
    requests={"kubernetes.io/batch-cpu": "85000"},
    limits={"kubernetes.io/batch-cpu": "85000"},
)
POD9 = make_pod(  # mockPodForCPUEvictWithPriorityAnnotationsLabels
    "mid-pod-1",
    node="n1",
    qos="LS",
    priority=7000,
    labels=dict(ENABLED),
    requests={"cpu": "85", "kubernetes.io/mid-cpu": "85000"},
    limits={"cpu": "85", "kubernetes.io/mid-cpu": "85000"},
)
FIRST_EIGHT = [POD0, POD1, POD2, POD3, POD4, POD5, POD6, POD7]
USED = {
    "test_evictDisabled_pod": 4,
    "test_higher_priority": 3,
    "test_podPriority_120_2000": 1,
    "test_podPriority_120_3000": 5,
    "test_podPriority_120_4000": 2,
    "test_podPriority_100_9999": 1,
    "test_podPriority_100_9999_1": 2,
    "batch-pod-1": 4,
    "mid-pod-1": 3,
}
PLAIN_NODE = make_node("n1", allocatable={"cpu": "100", "memory": "120G"}, capacity={"cpu": "100", "memory": "120G"})
EXTENDED = {"kubernetes.io/batch-cpu": "100000", "kubernetes.io/mid-cpu": "100000"}
EXTENDED_NODE = make_node(
    "n1",
    allocatable={"cpu": "100", "memory": "120G", **EXTENDED},
    capacity={"cpu": "100", "memory": "120G", **EXTENDED},
)
USED_THRESHOLD = {"cpuEvictThresholdPercent": 78, "evictEnabledPriorityThreshold": 3000}
ALLOCATABLE_THRESHOLD = {
    "cpuAllocatableEvictThresholdPercent": 80,
    "cpuAllocatableEvictLowerPercent": 70,
    "allocatableEvictPriorityThreshold": 7999,
}


def names(*pods: dict[str, Any]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}


# (Go case name, gates, node, pods, thresholds, evicted)
CASES = [
    ("invalid nodeCapacity", "", make_node("n1", allocatable={"cpu": "0"}), [], None, set()),
    ("no thresholdConfig", "", PLAIN_NODE, [], None, set()),
    ("disable", "", PLAIN_NODE, [], {"enable": False}, set()),
    (
        "only feature: CPUEvict",
        "CPUEvict=true",
        PLAIN_NODE,
        FIRST_EIGHT,
        {"enable": True, **USED_THRESHOLD},
        names(POD3, POD4, POD6, POD7),
    ),
    (
        "only feature: CPUAllocatableEvict",
        "CPUAllocatableEvict=true",
        EXTENDED_NODE,
        [POD8, POD9],
        {"enable": True, **ALLOCATABLE_THRESHOLD},
        names(POD8, POD9),
    ),
    (
        "feature CPUEvict ok, BECPUEvict invalid configuration",
        "CPUEvict=true,BECPUEvict=true",
        PLAIN_NODE,
        FIRST_EIGHT,
        {"enable": True, **USED_THRESHOLD},
        names(POD3, POD4, POD6, POD7),
    ),
    (
        "feature CPUAllocatableEvict ok, BECPUEvict invalid configuration",
        "CPUAllocatableEvict=true,BECPUEvict=true",
        PLAIN_NODE,
        [*FIRST_EIGHT, POD8, POD9],
        {"enable": True, **ALLOCATABLE_THRESHOLD, **USED_THRESHOLD},
        # Koordinator's test asserts only that these two go; the node offers no batch-cpu nor
        # mid-cpu, so every eligible pod goes, as in the next case
        names(POD2, POD3, POD4, POD5, POD6, POD7, POD8, POD9),
    ),
    (
        "feature CPUEvict/CPUAllocatableEvict ok",  # no batch resource: every eligible pod goes
        "CPUAllocatableEvict=true,CPUEvict=true",
        PLAIN_NODE,
        [*FIRST_EIGHT, POD8, POD9],
        {"enable": True, **ALLOCATABLE_THRESHOLD, **USED_THRESHOLD},
        names(POD2, POD4, POD5, POD6, POD7, POD8, POD9, POD3),
    ),
]


@pytest.mark.parametrize(
    "gates,node,pods,threshold,evicted", [pytest.param(*c[1:], id=f"Test_cpuEvict/{c[0]}") for c in CASES]
)
def test_cpu_evict_as_koordinator(gates, node, pods, threshold, evicted):
    slo = make_node_slo("n1", threshold=threshold) if threshold is not None else None
    used = usage(node_cpu=81, pods={f"default/{name}": (cpu, 0) for name, cpu in USED.items()})
    strategy = CPUEvict(StrategyOptions(koordlet_gates(gates)))
    result = strategy.round(round_input(node, slo, pods, used))
    got = [e.key.partition("/")[2] for e in result.evictions]
    assert set(got) == evicted
    assert len(got) == len(set(got))  # each pod once


def test_the_koordinator_priority_label_orders_pods_of_equal_priority():
    """Test_cpuEvict "only feature: CPUEvict", in order: 5000m to release; the priority-100 pods
    first (2 + 1 cores), then of the priority-120 pods the one labelled 2000 (1 core) before the
    bigger user labelled 3000 (5 cores), which completes the release; the one labelled 4000 stays."""
    slo = make_node_slo("n1", threshold={"enable": True, **USED_THRESHOLD})
    used = usage(node_cpu=81, pods={f"default/{name}": (cpu, 0) for name, cpu in USED.items()})
    result = CPUEvict(StrategyOptions(koordlet_gates("CPUEvict=true"))).round(
        round_input(PLAIN_NODE, slo, FIRST_EIGHT, used)
    )
    assert [e.key.partition("/")[2] for e in result.evictions] == [
        "test_podPriority_100_9999_1",
        "test_podPriority_100_9999",
        "test_podPriority_120_2000",
        "test_podPriority_120_3000",
    ]


def test_the_eviction_policy_annotation_names_the_features_that_may_evict_the_pod():
    slo = make_node_slo("n1", threshold={"enable": True, **USED_THRESHOLD})
    used = usage(node_cpu=81, pods={f"default/{name}": (cpu, 0) for name, cpu in USED.items()})
    only_memory = {"koordinator.sh/eviction-policy": json.dumps(["MemoryEvict"])}
    allowed = {"koordinator.sh/eviction-policy": json.dumps(["CPUEvict"])}
    pods = [
        make_pod(
            "test_podPriority_100_9999_1", node="n1", qos="BE", priority=100, labels=ENABLED, annotations=only_memory
        ),
        make_pod("test_podPriority_100_9999", node="n1", qos="BE", priority=100, labels=ENABLED, annotations=allowed),
        make_pod("test_podPriority_120_3000", node="n1", qos="BE", priority=120, labels=ENABLED),
    ]
    result = CPUEvict(StrategyOptions(koordlet_gates("CPUEvict=true"))).round(round_input(PLAIN_NODE, slo, pods, used))
    assert [e.key.partition("/")[2] for e in result.evictions] == [
        "test_podPriority_100_9999",
        "test_podPriority_120_3000",
    ]


def test_be_victims_as_koordinator():
    """Test_getBEPodEvictInfoAndSort "test_sort": BE pods only, lower priority first, then the
    larger share of the request used (4/16 before 3/16)."""
    from scheduler_plugins.koordlet.strategies.cpuevict import be_victims

    def be_pod(name: str, priority: int) -> dict[str, Any]:
        return make_pod(name, node="n1", qos="BE", priority=priority, requests={"kubernetes.io/batch-cpu": "16000"})

    pods = [
        make_pod("pod_lsr", node="n1", qos="LSR", requests={"cpu": "16"}),
        make_pod("pod_ls", node="n1", qos="LS", requests={"cpu": "16"}),
        be_pod("pod_be_1_priority100", 100),
        be_pod("pod_be_2_priority100", 100),
        be_pod("pod_be_3_priority10", 10),
    ]
    used = {"pod_lsr": 12, "pod_ls": 12, "pod_be_1_priority100": 3, "pod_be_2_priority100": 4, "pod_be_3_priority10": 4}
    inp = round_input(PLAIN_NODE, None, pods, usage(pods={f"default/{k}": (v, 0) for k, v in used.items()}))
    be = [p for p in inp.pods if p.raw_qos.value == "BE"]
    ordered = be_victims(be, lambda p: inp.usage.pods[p.key].cpu_milli)
    assert [p.name for p in ordered] == ["pod_be_3_priority10", "pod_be_2_priority100", "pod_be_1_priority100"]
