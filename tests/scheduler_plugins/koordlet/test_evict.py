"""MemoryEvict and CPUEvict (docs/koordlet.md): thresholds, what is released, the victim order, cool times."""

from __future__ import annotations

from typing import Any

from scheduler_plugins.koordlet.features import koordlet_gates
from scheduler_plugins.koordlet.strategies.base import StrategyOptions
from scheduler_plugins.koordlet.strategies.cpuevict import CPUEvict, be_release_milli
from scheduler_plugins.koordlet.strategies.memoryevict import MemoryEvict
from scheduler_plugins.koordlet.strategies.victims import release_for
from scheduler_plugins.koordlet.usage import BECPU, Usage
from tests.scheduler_plugins.koordlet.rounds import round_input, usage
from tests.support.builders import make_node, make_node_slo, make_pod

#: `koordinator.sh/eviction-enabled: "true"`: MemoryEvict and CPUEvict take only pods so labelled
ENABLED = {"koordinator.sh/eviction-enabled": "true"}

GI = 1024**3
NODE = make_node(
    "n1",
    capacity={"cpu": "10", "memory": "100Gi"},
    allocatable={
        "cpu": "10",
        "memory": "100Gi",
        "kubernetes.io/batch-cpu": "4000",
        "kubernetes.io/batch-memory": "20Gi",
    },
)


def be(name: str, priority: int = 5500, **kw: Any) -> dict[str, Any]:
    return make_pod(name, node="n1", qos="BE", priority=priority, **kw)


def options(gates: str) -> StrategyOptions:
    return StrategyOptions(koordlet_gates(gates))


def slo(**threshold: Any) -> dict[str, Any]:
    return make_node_slo("n1", threshold={"enable": True, **threshold})


def test_release_is_the_share_above_the_lower_percent() -> None:
    assert release_for(75 * GI, 100 * GI, 70, None) == (75, 100 * GI * 7 // 100)
    assert release_for(69 * GI, 100 * GI, 70, None) is None
    assert release_for(80 * GI, 100 * GI, 70, 71) is None  # lower must stay below the threshold


def test_be_memory_evict_kills_low_priority_then_big_users_until_enough_is_released() -> None:
    pods = [
        be("small", 5500),
        be("big", 5500),
        be("low", 5000),
        be("idle-a", 5500),
        be("idle-b", 5500),
        make_pod("web", node="n1", requests={"memory": "40Gi"}),
    ]
    used = usage(
        node_memory=75 * GI,
        pods={
            "default/small": (0, 1 * GI),
            "default/big": (0, 4 * GI),
            "default/low": (0, 2 * GI),
            "default/web": (0, 40 * GI),
        },
    )
    strategy = MemoryEvict(options("BEMemoryEvict=true"))
    result = strategy.round(round_input(NODE, slo(), pods, used, now=100))
    # 75 % ≥ 70 %: release 7 GiB; low (priority 5000, 2 GiB), big (4 GiB), small (1 GiB)
    assert [e.key for e in result.evictions] == ["default/low", "default/big", "default/small"]
    assert "75%" in result.evictions[0].reason
    assert strategy.round(round_input(NODE, slo(), pods, used, now=103)).status["reason"] == "in cool time"
    assert strategy.round(round_input(NODE, slo(), pods, used, now=104)).evictions


def test_idle_pods_are_evicted_last_by_name_descending() -> None:
    pods = [be("a"), be("b"), be("c")]
    used = usage(node_memory=99 * GI, pods={"default/b": (0, GI)})
    result = MemoryEvict(options("BEMemoryEvict=true")).round(round_input(NODE, slo(), pods, used))
    assert [e.key for e in result.evictions] == ["default/b", "default/c", "default/a"]


def test_memory_evict_needs_the_node_slo_switch() -> None:
    used = usage(node_memory=99 * GI, pods={"default/a": (0, GI)})
    off = make_node_slo("n1", threshold={"enable": False})
    assert not MemoryEvict(options("BEMemoryEvict=true")).round(round_input(NODE, off, [be("a")], used)).evictions


def test_memory_evict_by_priority_threshold_reaches_beyond_be() -> None:
    pods = [
        make_pod(
            "mid", node="n1", priority=7000, annotations={"koordinator.sh/eviction-priority": "1"}, labels=ENABLED
        ),
        make_pod("mid-first", node="n1", priority=7000, labels=ENABLED),
        make_pod("prod", node="n1", priority=9000, labels=ENABLED),
    ]
    used = usage(
        node_memory=80 * GI,
        pods={"default/mid": (0, 20 * GI), "default/mid-first": (0, 1 * GI), "default/prod": (0, 50 * GI)},
    )
    result = MemoryEvict(options("MemoryEvict=true")).round(
        round_input(NODE, slo(evictEnabledPriorityThreshold=8000), pods, used)
    )
    assert [e.key for e in result.evictions] == ["default/mid-first", "default/mid"]


def test_memory_allocatable_evict_compares_batch_requests_with_allocatable() -> None:
    pods = [
        be(f"b{i}", requests={"kubernetes.io/batch-memory": "6Gi"}, labels=ENABLED) for i in range(4)
    ]  # 24 Gi of 20 Gi
    used = usage(pods={f"default/b{i}": (0, GI) for i in range(4)})  # only pods with a usage sample are victims
    result = MemoryEvict(options("MemoryAllocatableEvict=true")).round(
        round_input(
            NODE, slo(allocatableEvictPriorityThreshold=5999, memoryAllocatableEvictThresholdPercent=110), pods, used
        )
    )
    assert len(result.evictions) == 1  # 120 % → release 20 % of 20 Gi = 4 Gi: one 6 Gi pod


def test_cpu_allocatable_evict_compares_batch_cpu_requests_with_allocatable() -> None:
    enabled = {"koordinator.sh/eviction-enabled": "true"}
    pods = [
        be(f"b{i}", requests={"kubernetes.io/batch-cpu": "1200"}, labels=enabled) for i in range(4)
    ]  # 4,800 of 4,000
    used = usage(pods={f"default/b{i}": (1, 0) for i in range(4)})
    result = CPUEvict(options("CPUAllocatableEvict=true")).round(
        round_input(NODE, slo(allocatableEvictPriorityThreshold=5999), pods, used)
    )
    # 120 % > the default 110 % → release down to the default 100 %: 800 of batch-cpu, one 1,200 pod
    assert [e.reason for e in result.evictions] == [
        "kubernetes.io/batch-cpu requests over 110% of allocatable 4000, releasing 800"
    ]


def test_allocatable_evict_never_reaches_prod_priorities() -> None:
    pods = [be(f"b{i}", requests={"kubernetes.io/batch-memory": "6Gi"}) for i in range(4)]
    result = MemoryEvict(options("MemoryAllocatableEvict=true")).round(
        round_input(NODE, slo(allocatableEvictPriorityThreshold=9000), pods, usage())
    )
    assert not result.evictions


def test_be_cpu_satisfaction_release() -> None:
    # request 4 cores, real limit 1 core (25 %), fully used; lower 40 %, upper 60 % → 4 × (0.6 − 0.25) = 1.4
    assert be_release_milli(1000, 4000, 1000, 60, 40, 90) == 1400
    assert be_release_milli(500, 4000, 1000, 60, 40, 90) == 0  # BE does not use what it has
    assert be_release_milli(2000, 4000, 2000, 60, 40, 90) == 0  # satisfied enough (50 % > 40 %)


def test_be_cpu_evict_picks_be_pods_by_priority_until_the_batch_cpu_is_released() -> None:
    pods = [
        be("p1", 5100, requests={"kubernetes.io/batch-cpu": "1000"}),
        be("p2", 5000, requests={"kubernetes.io/batch-cpu": "1000"}),
        be("p3", 5200, requests={"kubernetes.io/batch-cpu": "2000"}),
    ]
    used = Usage(pods={}, be_cpu=BECPU(1000, 4000, 1000))
    threshold = dict(cpuEvictBESatisfactionLowerPercent=40, cpuEvictBESatisfactionUpperPercent=60)
    strategy = CPUEvict(options("BECPUEvict=true"))
    result = strategy.round(round_input(NODE, slo(**threshold), pods, used, now=0))
    assert [e.key for e in result.evictions] == ["default/p2", "default/p1"]  # 1400m: two 1000m pods
    assert strategy.round(round_input(NODE, slo(**threshold), pods, used, now=19)).status["reason"] == "in cool time"


def test_cpu_evict_by_node_usage() -> None:
    enabled = {"koordinator.sh/eviction-enabled": "true"}
    pods = [
        make_pod("low", node="n1", priority=100, labels=enabled),
        make_pod("prod", node="n1", priority=9000, labels=enabled),
        make_pod("not-enabled", node="n1", priority=100),
    ]
    used = usage(node_cpu=9.5, pods={"default/low": (3, 0), "default/prod": (6, 0), "default/not-enabled": (4, 0)})
    result = CPUEvict(options("CPUEvict=true")).round(
        round_input(NODE, slo(cpuEvictThresholdPercent=90, evictEnabledPriorityThreshold=8000), pods, used)
    )
    assert [e.key for e in result.evictions] == ["default/low"]


def test_be_memory_evict_honours_the_eviction_policy_annotation() -> None:
    """`koordinator.sh/eviction-policy` (Koordinator's IsEvictionPolicyAllowed): a pod that names
    only other features is passed over; the next one goes instead."""
    only_cpu = {"koordinator.sh/eviction-policy": '["CPUEvict"]'}
    pods = [be("low", 5000, annotations=only_cpu), be("big", 5500)]
    used = usage(node_memory=75 * GI, pods={"default/low": (0, 8 * GI), "default/big": (0, 8 * GI)})
    result = MemoryEvict(options("BEMemoryEvict=true")).round(round_input(NODE, slo(), pods, used))
    assert [e.key for e in result.evictions] == ["default/big"]
