"""MemoryEvict against Koordinator's own cases: `Test_memoryEvict` and
`Test_calculateReleaseByAllocatableThresholdPercent` in
`pkg/koordlet/qosmanager/plugins/memoryevict/memory_evict_test.go`, transcribed case by case (the
same pods, usage, node and thresholds; Koordinator's mock evictor becomes our list of evictions)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.strategies.memoryevict import MemoryEvict
from tests.scheduler_plugins.koordlet.rounds import round_input, usage
from tests.support.builders import make_node, make_node_slo, make_pod

G, GI = 10**9, 1 << 30
ENABLED = {"koordinator.sh/eviction-enabled": "true"}
BATCH_MIN, BATCH_MAX = 5000, 5999


def memory_pod(name: str, qos: str, priority: int) -> dict[str, Any]:
    """createMemoryEvictTestPod: one container without resources."""
    return make_pod(name, node="n1", qos=qos, priority=priority, phase="Running")


def batch_pod(name: str, gib: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """createMemoryEvictTestPodWithPriorityAnnotationLabels: a koord-batch pod requesting (and
    limited to) `gib` of memory and of batch-memory."""
    amount = {"memory": f"{gib}Gi", "kubernetes.io/batch-memory": f"{gib}Gi"}
    return make_pod(
        name, node="n1", qos="BE", priority=BATCH_MIN, labels=labels, requests=amount, limits=amount, phase="Running"
    )


LSR = memory_pod("test_lsr_pod", "LSR", 1000)
LS = memory_pod("test_ls_pod", "LS", 500)
NOQOS = memory_pod("test_noqos_pod", "", 100)
BE100_1 = memory_pod("test_be_pod_priority100_1", "BE", 100)
BE100_2 = memory_pod("test_be_pod_priority100_2", "BE", 100)
BE120 = memory_pod("test_be_pod_priority120", "BE", 120)
SIX = [LSR, LS, NOQOS, BE100_1, BE100_2, BE120]
BATCH1 = batch_pod("batch-pod-1", 20, ENABLED)
BATCH2 = batch_pod("batch-pod-2", 30, ENABLED)
USED = {
    "test_lsr_pod": 40,
    "test_ls_pod": 30,
    "test_noqos_pod": 10,
    "test_be_pod_priority100_1": 5,
    "test_be_pod_priority100_2": 20,
    "test_be_pod_priority120": 10,
    "batch-pod-1": 10,
    "batch-pod-2": 20,
}
#: testutil.MockTestNode("80", "120G")
PLAIN_NODE = make_node("n1", allocatable={"cpu": "80", "memory": "120G"}, capacity={"cpu": "80", "memory": "120G"})
BATCH_ALLOCATABLE = {"kubernetes.io/batch-memory": str(100 * GI)}
BATCH_NODE = make_node(
    "n1",
    allocatable={"cpu": "80", "memory": "120G", **BATCH_ALLOCATABLE},
    capacity={"cpu": "80", "memory": "120G", **BATCH_ALLOCATABLE},
)
ALLOCATABLE = {
    "memoryAllocatableEvictThresholdPercent": 80,
    "memoryAllocatableEvictLowerPercent": 70,
    "allocatableEvictPriorityThreshold": BATCH_MIN,
}
BOTH_74 = {"memoryEvictThresholdPercent": 82, "memoryEvictLowerPercent": 74, "evictEnabledPriorityThreshold": 3000}


def names(*pods: dict[str, Any]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}


# (Go case name, gates, node, pods, thresholds, evicted); the node uses 115G unless said otherwise
CASES = [
    (
        "only feature BEMemoryEvict: MemoryEvictThresholdPercent_sort_by_priority_and_usage_82",
        "BEMemoryEvict=true",
        PLAIN_NODE,
        SIX,
        {"enable": True, "memoryEvictThresholdPercent": 82},
        names(BE100_2),
    ),
    (
        "only feature BEMemoryEvict: MemoryEvictThresholdPercent_80",
        "BEMemoryEvict=true",
        PLAIN_NODE,
        SIX,
        {"enable": True, "memoryEvictThresholdPercent": 80},
        names(BE100_2, BE100_1),
    ),
    (
        "only feature BEMemoryEvict: MemoryEvictLowerPercent_74",
        "BEMemoryEvict=true",
        PLAIN_NODE,
        SIX,
        {"enable": True, "memoryEvictThresholdPercent": 82, "memoryEvictLowerPercent": 74},
        names(BE100_2, BE100_1, BE120),
    ),
    (
        # the node offers no batch-memory: the whole batch-memory request is released
        "only feature MemoryAllocatableEvict: "
        "MemoryAllocatableEvictThresholdPercent_80,MemoryAllocatableEvictLowerPercent_70",
        "MemoryAllocatableEvict=true",
        PLAIN_NODE,
        [BATCH1, BATCH2],
        {"enable": True, **ALLOCATABLE},
        names(BATCH1, BATCH2),
    ),
    (
        "feature BEMemoryEvict/MemoryEvict: "
        "MemoryEvictLowerPercent_74 BEMemoryEvict ok, MemoryEvict invalid configuration",
        "BEMemoryEvict=true,MemoryEvict=true",
        PLAIN_NODE,
        SIX,
        {"enable": True, "memoryEvictThresholdPercent": 82, "memoryEvictLowerPercent": 74},
        names(BE100_2, BE100_1, BE120),
    ),
    (
        # what BEMemoryEvict released counts for MemoryEvict: no LS pod goes
        "feature BEMemoryEvict/MemoryEvict: MemoryEvictLowerPercent_74 BEMemoryEvict/MemoryEvict ok",
        "BEMemoryEvict=true,MemoryEvict=true",
        PLAIN_NODE,
        SIX,
        {"enable": True, **BOTH_74},
        names(BE100_2, BE100_1, BE120),
    ),
    (
        "feature BEMemoryEvict/MemoryEvict/MemoryAllocatableEvict: BEMemoryEvict/MemoryEvict ok, "
        "MemoryAllocatableEvict invalid configuration",
        "BEMemoryEvict=true,MemoryEvict=true,MemoryAllocatableEvict=true",
        PLAIN_NODE,
        SIX,
        {"enable": True, **BOTH_74},
        names(BE100_2, BE100_1, BE120),
    ),
    (
        # batch-memory 50Gi of 100Gi passes 45%: to 40% means 10Gi, batch-pod-2 (the larger) covers it
        "feature BEMemoryEvict/MemoryEvict/MemoryAllocatableEvict: all three, the node offering batch-memory",
        "BEMemoryEvict=true,MemoryEvict=true,MemoryAllocatableEvict=true",
        BATCH_NODE,
        [*SIX, BATCH1, BATCH2],
        {
            "enable": True,
            **BOTH_74,
            "memoryAllocatableEvictThresholdPercent": 45,
            "memoryAllocatableEvictLowerPercent": 40,
            "allocatableEvictPriorityThreshold": BATCH_MIN,
        },
        names(BE100_2, BE100_1, BE120, BATCH2),
    ),
]


def run(gates: str, node: dict[str, Any], pods: list[dict[str, Any]], threshold: dict[str, Any]) -> list[str]:
    slo = make_node_slo("n1", threshold=threshold)
    used = usage(node_memory=115 * G, pods={f"default/{name}": (0, gb * G) for name, gb in USED.items()})
    strategy = MemoryEvict(StrategyOptions(koordlet_gates(gates)))
    result = strategy.round(round_input(node, slo, pods, used))
    return [e.key.partition("/")[2] for e in result.evictions]


@pytest.mark.parametrize(
    "gates,node,pods,threshold,evicted", [pytest.param(*c[1:], id=f"Test_memoryEvict/{c[0]}") for c in CASES]
)
def test_memory_evict_as_koordinator(gates, node, pods, threshold, evicted):
    got = run(gates, node, pods, threshold)
    assert set(got) == evicted
    assert len(got) == len(set(got))  # each pod once


def test_a_pod_exactly_at_the_priority_threshold_is_evicted():
    """getPodEvictInfoAndSortByPriority skips `priority > threshold`: a labelled pod at 3000 goes."""
    at = make_pod("at-threshold", node="n1", qos="LS", priority=3000, labels=ENABLED, phase="Running")
    above = make_pod("above", node="n1", qos="LS", priority=3001, labels=ENABLED, phase="Running")
    slo = make_node_slo("n1", threshold={"enable": True, **BOTH_74})
    used = usage(node_memory=115 * G, pods={"default/at-threshold": (0, 30 * G), "default/above": (0, 30 * G)})
    result = MemoryEvict(StrategyOptions(koordlet_gates("MemoryEvict=true"))).round(
        round_input(PLAIN_NODE, slo, [at, above], used)
    )
    assert [e.key for e in result.evictions] == ["default/at-threshold"]


def test_memory_evict_takes_only_pods_labelled_eviction_enabled():
    """The same filter: an unlabelled pod below the threshold stays, however much it uses."""
    labelled = make_pod("labelled", node="n1", qos="LS", priority=500, labels=ENABLED, phase="Running")
    unlabelled = make_pod("unlabelled", node="n1", qos="LS", priority=100, phase="Running")
    slo = make_node_slo("n1", threshold={"enable": True, **BOTH_74})
    used = usage(node_memory=115 * G, pods={"default/labelled": (0, 5 * G), "default/unlabelled": (0, 60 * G)})
    result = MemoryEvict(StrategyOptions(koordlet_gates("MemoryEvict=true"))).round(
        round_input(PLAIN_NODE, slo, [labelled, unlabelled], used)
    )
    assert [e.key for e in result.evictions] == ["default/labelled"]


def test_a_node_without_batch_memory_releases_every_batch_request():
    """Test_calculateReleaseByAllocatableThresholdPercent "node without allocatable batch-memory
    resource": a node offering no batch-memory releases all 50Gi a batch pod requests."""
    pod = batch_pod("batch-pod-1", 50, ENABLED)
    slo = make_node_slo("n1", threshold={"enable": True, **ALLOCATABLE, "allocatableEvictPriorityThreshold": BATCH_MAX})
    used = usage(node_memory=10 * G, pods={"default/batch-pod-1": (0, 10 * G)})
    result = MemoryEvict(StrategyOptions(koordlet_gates("MemoryAllocatableEvict=true"))).round(
        round_input(PLAIN_NODE, slo, [pod], used)
    )
    assert [e.key for e in result.evictions] == ["default/batch-pod-1"]
    assert "kubernetes.io/batch-memory" in result.evictions[0].reason
