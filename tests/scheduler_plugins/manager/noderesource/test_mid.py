"""Mid resources, case by case as Koordinator's
`pkg/slo-controller/noderesource/plugins/midresource/plugin_test.go` TestPluginCalculate: a node of
capacity 100 / 210G (allocatable memory 200G), a prod pod of 20 / 40G and a batch pod of 15 / 30G."""

from __future__ import annotations

from typing import Any

import pytest

from policies.apis.constants import MID_CPU, MID_MEMORY
from policies.apis.slo_config.colocation import DEFAULT_STRATEGY, ColocationStrategy, merge
from scheduler_plugins.manager.noderesource.inputs import metric_input, node_input
from scheduler_plugins.manager.noderesource.plugins.midresource.mid import node_mid
from tests.scheduler_plugins.manager.noderesource.builders import config, metric, node, pod, run, value


def pods() -> list[dict[str, Any]]:
    return [pod("podA", "20", "40G", qos="LS", priority=9000), pod("podB", "15", "30G", qos="BE", priority=5999)]


def mid_metric(usage: tuple[str, str], reclaimable: tuple[str, str] | None, **extra: Any) -> dict[str, Any]:
    return metric([], node_usage=usage, system=("0", "0"), prod_reclaimable=reclaimable, **extra)


def strategy(**fields: Any) -> ColocationStrategy:
    return ColocationStrategy.of(merge(DEFAULT_STRATEGY, {"enable": True, **fields}))


@pytest.mark.parametrize(
    ("fields", "usage", "reclaimable", "expected"),
    [
        # "calculate correctly when node metric is valid"
        ({}, ("20", "45G"), ("10", "15G"), (10000, 15 * 10**9)),
        # "calculate correctly where the prod reclaimable exceeds the mid threshold"
        (
            {"midCPUThresholdPercent": 10, "midMemoryThresholdPercent": 20, "midUnallocatedPercent": 10},
            ("30", "50G"),
            ("15", "30G"),
            (10000, 42 * 10**9),
        ),
        # "calculate correctly when prod reclaimable is nil": no reclaimable counts 0, it does not degrade
        ({}, ("30", "50G"), None, (0, 0)),
        # "calculate correctly when set reserved resource in static mode: not exceed"
        (
            {
                "midReclaimMode": "static",
                "midStaticCPUReservedPercent": 10,
                "midStaticMemoryReservedPercent": 10,
                "midCPUThresholdPercent": 10,
                "midMemoryThresholdPercent": 20,
            },
            ("30", "50G"),
            ("15", "30G"),
            (10000, 21 * 10**9),
        ),
        # "calculate correctly when set reserved resource in static mode: exceed"
        (
            {
                "midReclaimMode": "static",
                "midStaticCPUReservedPercent": 100,
                "midStaticMemoryReservedPercent": 100,
                "midCPUThresholdPercent": 10,
                "midMemoryThresholdPercent": 20,
            },
            ("30", "50G"),
            ("15", "30G"),
            (10000, 42 * 10**9),
        ),
        # "calculate correctly where the prod reclaimable exceeds the node free resource"
        ({}, ("95", "200G"), ("10", "15G"), (5000, 10 * 10**9)),
    ],
)
def test_mid_calculate(
    fields: dict[str, Any], usage: tuple[str, str], reclaimable: tuple[str, str] | None, expected: tuple[int, int]
) -> None:
    the_node = node("100", "210G", alloc_memory="200G")
    reading = run(config({"enable": True, **fields}), the_node, pods(), mid_metric(usage, reclaimable))
    assert (value(reading.allocatable[MID_CPU]), value(reading.allocatable[MID_MEMORY])) == expected


def test_mid_without_node_usage_counts_no_unused() -> None:
    """ "calculate correctly where node metrics is invalid": without nodeUsage the node is taken as full."""
    the_metric = mid_metric(("1", "1G"), ("20", "20G"))
    del the_metric["status"]["nodeMetric"]["nodeUsage"]
    plan = run(config({"enable": True}), node("100", "210G", alloc_memory="200G"), pods(), the_metric)
    assert plan.allocatable[MID_CPU] == "0" and plan.allocatable[MID_MEMORY] == "0"


@pytest.mark.parametrize(
    ("priority", "expected_cpu"), [("koord-prod", 6000), ("koord-mid", 8000), ("koord-batch", 8000)]
)
def test_host_applications_above_mid_reserve(priority: str, expected_cpu: int) -> None:
    """ "including product/mid/batch host application usage": only prod host applications join the
    system usage that the unallocated share is computed after."""
    the_metric = mid_metric(("30", "50G"), ("0", "0"), host_apps=[("20", "0", priority)])
    plan = run(
        config({"enable": True, "midUnallocatedPercent": 10}),
        node("100", "210G", alloc_memory="200G"),
        pods(),
        the_metric,
    )
    # unallocated = 100 - max(kubelet 0, system + prod host apps) - prod pod 20
    assert value(plan.allocatable[MID_CPU]) == expected_cpu


def test_mid_is_never_amplified_and_is_zero_by_default() -> None:
    """Every enabled node with a fresh NodeMetric gets mid-cpu/mid-memory 0 by default (Koordinator's
    default plugin set includes MidResource)."""
    plan = run(config(), node(), the_metric=metric([]))
    assert plan.allocatable[MID_CPU] == "0" and plan.allocatable[MID_MEMORY] == "0"


def test_static_mode_reads_no_metric() -> None:
    """Static mode's mid is a share of capacity: a NodeMetric that policy mode would read changes nothing."""
    n = node_input(node("100", "210G"), [])
    read = metric_input(metric([], node_usage=("20", "50G"), prod_reclaimable=("30", "60G")))
    assert read is not None
    assert node_mid(strategy(midReclaimMode="policy"), n, read) != (10000, 0)
    assert node_mid(strategy(midReclaimMode="static", midStaticCPUReservedPercent=10), n, read) == (10000, 0)
