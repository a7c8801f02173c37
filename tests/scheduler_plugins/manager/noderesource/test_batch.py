"""Batch resources of a node, case by case as Koordinator's
`pkg/slo-controller/noderesource/plugins/batchresource/plugin_test.go` TestPluginCalculate (the
strategy, node, pods and NodeMetric of each case; the expected quantities)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from policies.apis.constants import BATCH_CPU, BATCH_MEMORY
from policies.apis.slo_config.colocation import DEFAULT_STRATEGY, ColocationConfig, ColocationStrategy, merge
from tests.scheduler_plugins.manager.noderesource.builders import (
    STRATEGY_65,
    config,
    default_metric,
    metric,
    multi_priority_pods,
    node,
    nrt,
    pod_metric,
    run,
    value,
)

RESERVATION = "node.koordinator.sh/reservation"


def batch(plan: Any) -> tuple[int, int]:
    return value(plan.allocatable[BATCH_CPU]), value(plan.allocatable[BATCH_MEMORY])


def test_calculate_with_memory_usage() -> None:
    """TestPluginCalculate "calculate with memory usage": 100 - 35 - 7 - 33 cores, 120 - 42 - 12 - 33 G."""
    plan = run(config(), node(), the_metric=default_metric())
    assert plan.allocatable[BATCH_CPU] == "25000"
    assert plan.allocatable[BATCH_MEMORY] == "33G"


@pytest.mark.parametrize(
    ("reservation", "expected_cpu", "expected_memory"),
    [
        ({}, 25000, 33 * 10**9),  # "reserve nothing from node.annotation"
        ({"reservedCPUs": "0-1"}, 25000, 33 * 10**9),  # 2 cpus < system 7: system wins
        ({"reservedCPUs": "0-19"}, 12000, 33 * 10**9),  # 20 reserved cpus > system 7
        ({"resources": {"cpu": "20"}}, 12000, 33 * 10**9),  # "reserve cpus by quantity"
        ({"resources": {"cpu": "2"}, "reservedCPUs": "0-19"}, 12000, 33 * 10**9),  # reservedCPUs replaces cpu
        ({"resources": {"memory": "20G"}}, 25000, 25 * 10**9),  # reserved memory 20G > system 12G
        ({"resources": {"memory": "10G"}}, 25000, 33 * 10**9),
    ],
)
def test_calculate_with_node_reservation(reservation: dict[str, Any], expected_cpu: int, expected_memory: int) -> None:
    """TestPluginCalculate "... reserve ... from node.annotation ...": reserved = max(kubelet, annotation),
    and the usage policy subtracts max(system, reserved)."""
    the_node = node(annotations={RESERVATION: json.dumps(reservation)})
    assert batch(run(config(), the_node, the_metric=default_metric())) == (expected_cpu, expected_memory)


def test_kubelet_reservation_is_the_biggest() -> None:
    """TestPluginCalculate "... which kubelet reserved is the biggest among node.annotation, sys.used and
    kubelet reserved": capacity 100/120G, allocatable 70/80G reserves 30/40G."""
    the_node = node(
        alloc_cpu="70", alloc_memory="80G", annotations={RESERVATION: json.dumps({"resources": {"cpu": "10"}})}
    )
    assert batch(run(config(), the_node, the_metric=default_metric())) == (2000, 5 * 10**9)


def test_calculate_with_memory_request() -> None:
    """TestPluginCalculate "calculate with memory request": cpu 70 %, memory 80 % by request: 120 - 24 - 0 - 60."""
    cfg = config(
        {
            **STRATEGY_65,
            "cpuReclaimThresholdPercent": 70,
            "memoryReclaimThresholdPercent": 80,
            "memoryCalculatePolicy": "request",
        }
    )
    plan = run(cfg, node(), the_metric=default_metric())
    assert plan.allocatable[BATCH_CPU] == "30000"
    assert plan.allocatable[BATCH_MEMORY] == "36G"


def test_memory_request_policy_ignores_system_usage_but_not_reservation() -> None:
    """TestPluginCalculate "calculate with memory request and reserve memory from node.annotation ...":
    the request policy subtracts only the reservation."""
    cfg = config(
        {
            **STRATEGY_65,
            "cpuReclaimThresholdPercent": 70,
            "memoryReclaimThresholdPercent": 80,
            "memoryCalculatePolicy": "request",
        }
    )
    the_node = node(annotations={RESERVATION: json.dumps({"resources": {"memory": "20G"}})})
    assert batch(run(cfg, the_node, the_metric=default_metric()))[1] == 16 * 10**9


def test_calculate_with_pods_in_multiple_priority_classes() -> None:
    """TestPluginCalculate "calculate with pods in multiple priority classes": a mid pod counts as HP;
    a succeeded pod without a metric counts nothing."""
    the_metric = metric(
        [
            pod_metric("podProd", "5", "5G"),
            pod_metric("podProd1", "6", "6G"),
            pod_metric("podBatch", "10", "10G"),
            pod_metric("podMid", "22", "22G"),
        ]
    )
    assert batch(run(config(), node(), multi_priority_pods(), the_metric)) == (25000, 33 * 10**9)


def test_calculate_with_pods_terminated() -> None:
    """TestPluginCalculate "calculate with pods terminated": the metric of a pod not listed (dangling)
    counts as HP usage; a listed HP pod without metric counts its request."""
    the_metric = metric(
        [pod_metric("podProd", "5", "5G"), pod_metric("podProd2", "10", "10G")],
        node_usage=("25", "30G"),
        system=("5", "10G"),
    )
    pods = multi_priority_pods()[:2]
    assert batch(run(config(), node(), pods, the_metric)) == (35000, 43 * 10**9)


def test_dangling_metric_of_batch_priority_is_not_counted() -> None:
    """The dangling metric's own priority decides: koord-batch and koord-free are left out."""
    the_metric = metric(
        [pod_metric("podProd", "5", "5G"), pod_metric("gone", "10", "10G", "koord-batch")],
        node_usage=("25", "30G"),
        system=("5", "10G"),
    )
    assert batch(run(config(), node(), multi_priority_pods()[:2], the_metric)) == (45000, 53 * 10**9)


def test_calculate_with_pods_qos_lse() -> None:
    """TestPluginCalculate "calculate with pods QoS=LSE": an LSE pod counts its request for cpu."""
    the_metric = metric(
        [
            pod_metric("podProdLSE", "5", "5G"),
            pod_metric("podProd1", "6", "6G"),
            pod_metric("podBatch", "10", "10G"),
            pod_metric("podMid", "22", "22G"),
        ]
    )
    pods = multi_priority_pods(prod_qos="LSE")
    pods[0]["metadata"]["name"] = "podProdLSE"
    assert batch(run(config(), node(), pods, the_metric)) == (20000, 33 * 10**9)


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        # "calculate with cpu maxUsageRequest and memory request"
        (
            {
                "cpuReclaimThresholdPercent": 70,
                "cpuCalculatePolicy": "maxUsageRequest",
                "memoryReclaimThresholdPercent": 80,
                "memoryCalculatePolicy": "request",
            },
            (21000, 36 * 10**9),
        ),
        # "calculate with adjusted reclaim ratio": percentages above 100 make the margin negative, and
        # the result is then capped at the node's capacity (100 cores; Koordinator writes 101)
        (
            {
                "cpuReclaimThresholdPercent": 150,
                "cpuCalculatePolicy": "maxUsageRequest",
                "memoryReclaimThresholdPercent": 120,
                "memoryCalculatePolicy": "request",
            },
            (100000, 84 * 10**9),
        ),
        # "calculate with batch cpu threshold percent only"
        (
            {
                "cpuReclaimThresholdPercent": 150,
                "cpuCalculatePolicy": "maxUsageRequest",
                "memoryReclaimThresholdPercent": 120,
                "memoryCalculatePolicy": "request",
                "batchCPUThresholdPercent": 100,
            },
            (100000, 84 * 10**9),
        ),
        # "calculate with batch memory threshold percent only"
        (
            {
                "cpuReclaimThresholdPercent": 150,
                "cpuCalculatePolicy": "maxUsageRequest",
                "memoryReclaimThresholdPercent": 120,
                "memoryCalculatePolicy": "request",
                "batchMemoryThresholdPercent": 100,
            },
            (100000, 84 * 10**9),  # Koordinator: 101 cores
        ),
        # "calculate without batch cpu/mem threshold percent-with different xxxCalculatePolicy"
        (
            {
                "cpuReclaimThresholdPercent": 150,
                "cpuCalculatePolicy": "usage",
                "memoryReclaimThresholdPercent": 120,
                "memoryCalculatePolicy": "maxUsageRequest",
            },
            (100000, 72 * 10**9),  # Koordinator: 110 cores
        ),
        # "calculate with both batch cpu/mem threshold percent-with different xxxCalculatePolicy"
        (
            {
                "cpuReclaimThresholdPercent": 150,
                "cpuCalculatePolicy": "usage",
                "memoryReclaimThresholdPercent": 120,
                "memoryCalculatePolicy": "maxUsageRequest",
                "batchCPUThresholdPercent": 100,
                "batchMemoryThresholdPercent": 100,
            },
            (100000, 72 * 10**9),
        ),
        # an unknown policy acts as usage
        ({"cpuCalculatePolicy": "request", "memoryCalculatePolicy": "other"}, (25000, 33 * 10**9)),
    ],
)
def test_calculate_policies_and_thresholds(strategy: dict[str, Any], expected: tuple[int, int]) -> None:
    """TestPluginCalculate, the policy and threshold cases (default pods: podA LS, podC prod Pending).
    The strategy is built as the Go test builds it, past the parser (which refuses percents above 100)."""
    cfg = config()
    document = merge(DEFAULT_STRATEGY, {**STRATEGY_65, **strategy})
    cfg = replace(cfg, colocation=ColocationConfig(ColocationStrategy.of(document)))
    assert batch(run(cfg, node(), the_metric=default_metric())) == expected


@pytest.mark.parametrize(
    ("priority", "expected"),
    [
        ("koord-prod", (25000, 33 * 10**9)),  # "including product host application usage"
        ("koord-mid", (25000, 33 * 10**9)),  # "including mid host application usage"
        ("koord-batch", (28000, 39 * 10**9)),  # "including batch host application usage"
    ],
)
def test_host_application_usage(priority: str, expected: tuple[int, int]) -> None:
    """TestPluginCalculate "calculate with memory usage, including ... host application usage": only
    host applications above batch priority add to the system usage."""
    the_metric = default_metric()
    the_metric = metric(the_metric["status"]["podsMetric"], system=("4", "6G"), host_apps=[("3", "6G", priority)])
    assert batch(run(config(), node(), the_metric=the_metric)) == expected


def test_one_numa_zone() -> None:
    """TestPluginCalculate "calculate with one NUMA-level resources": one zone gets the node's values."""
    the_metric = metric(
        [
            pod_metric("podProd", "5", "5G"),
            pod_metric("podProd1", "6", "6G"),
            pod_metric("podBatch", "10", "10G"),
            pod_metric("podMid", "22", "22G"),
        ]
    )
    plan = run(config(), node(), multi_priority_pods(), the_metric, nrt(("node-0", "100", "120G")))
    assert plan.zones == {"node-0": {BATCH_CPU: "25000", BATCH_MEMORY: "33G"}}


def test_multiple_numa_zones() -> None:
    """TestPluginCalculate "calculate with multiple NUMA-level resources": system and reservation split
    evenly, a pod bound to NUMA 0 counts there only, the others spread over both zones."""
    bound = {"scheduling.koordinator.sh/resource-status": json.dumps({"numaNodeResources": [{"node": 0}]})}
    the_metric = metric(
        [
            pod_metric("podProd", "5", "5G"),
            pod_metric("podProd1", "6", "6G"),
            pod_metric("podBatch", "10", "10G"),
            pod_metric("podMid", "22", "22G"),
        ]
    )
    plan = run(
        config(), node(), multi_priority_pods(bound), the_metric, nrt(("node-0", "50", "62G"), ("node-1", "50", "58G"))
    )
    assert plan.allocatable[BATCH_CPU] == "25000"
    assert plan.zones == {
        "node-0": {BATCH_CPU: "10000", BATCH_MEMORY: "15300M"},
        "node-1": {BATCH_CPU: "15000", BATCH_MEMORY: "17700M"},
    }


def test_zone_pods_without_metric_count_in_max_usage_request() -> None:
    """At NUMA level (unlike the node level) an HP pod without a metric adds its request to
    max(request, usage): "calculate NUMA resources with memory not over-committed, missing metric LSE
    pod and dangling pod" relies on it. maxUsageRequest memory, podProd1 (10G) has no metric."""
    cfg = config({**STRATEGY_65, "memoryCalculatePolicy": "maxUsageRequest"})
    the_metric = metric([pod_metric("podProd", "5", "5G")])
    plan = run(cfg, node(), multi_priority_pods()[:2], the_metric, nrt(("node-0", "100", "120G")))
    # node: 120 - 42 - 12 - max(10, 5) = 56G (podProd1 adds nothing); zone: 120 - 42 - 12 - 10 - 10 = 46G
    assert value(plan.allocatable[BATCH_MEMORY]) == 56 * 10**9
    assert plan.zones is not None and value(plan.zones["node-0"][BATCH_MEMORY]) == 46 * 10**9


def test_memory_keeps_the_capacity_format() -> None:
    """batch-memory is computed on the capacity's quantity and printed in its format."""
    plan = run(config(), node(memory="128Gi"), the_metric=default_metric())
    assert plan.allocatable[BATCH_MEMORY] == str(plan.allocatable[BATCH_MEMORY])
    assert (
        value(plan.allocatable[BATCH_MEMORY]) == 128 * 2**30 - int(float(128 * 2**30) * 0.35) - 12 * 10**9 - 33 * 10**9
    )


def test_batch_never_negative() -> None:
    """Test_calculateNodeResource "calculate normal result always no less than zero"."""
    the_metric = metric([pod_metric("podA", "80", "110G")], system=("30", "30G"))
    assert batch(run(config(), node(), the_metric=the_metric)) == (0, 0)
