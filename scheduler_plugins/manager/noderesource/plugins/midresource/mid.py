"""Mid resources of a node (`pkg/slo-controller/noderesource/plugins/midresource/plugin.go`,
`plugins/util/util.go` CalculateMidResourceByPolicy / ByStaticMode).

Policy mode: what the koordlet reports as reclaimable from prod pods (`prodReclaimableMetric`),
bounded by what the node leaves unused, plus a share of what prod pods have not requested, capped
by a threshold percent of the capacity. Static mode: a fixed percent of the capacity, same cap.
A missing `prodReclaimableMetric` counts as zero; it does not degrade.
"""

from __future__ import annotations

from typing import Final

from policies.apis.constants import PriorityClass
from policies.apis.slo_config.colocation import MID_RECLAIM_MODE_STATIC, ColocationStrategy
from scheduler_plugins.manager.noderesource.inputs import (
    ZERO,
    MetricInput,
    NodeInput,
    Res,
    at_most,
    percent_of,
    system_used,
)

DEGRADE_MESSAGE: Final = "degrade node Mid resource because of abnormal nodeMetric, reason: degradedByMidResource"


def _cap(strategy: ColocationStrategy, capacity: Res, cpu: int, memory_bytes: int) -> Res:
    """min(value, capacity × mid threshold percent); cpu in milli, memory in bytes -> milli."""
    max_cpu, max_memory = percent_of(
        capacity, strategy.mid_cpu_threshold_percent, strategy.mid_memory_threshold_percent
    )
    return (min(cpu, max_cpu), min(memory_bytes, max_memory // 1000) * 1000)


def static_mid(strategy: ColocationStrategy, capacity: Res) -> Res:
    cpu, memory = percent_of(
        capacity, strategy.mid_static_cpu_reserved_percent, strategy.mid_static_memory_reserved_percent
    )
    return _cap(strategy, capacity, cpu, memory // 1000)


def prod_requested(node: NodeInput) -> Res:
    """Σ request of the node's active prod pods (summed once per NodeInput)."""
    return node.prod_request


def policy_mid(strategy: ColocationStrategy, node: NodeInput, metric: MetricInput) -> Res:
    """(In plain integers, `value_of` as ceil divisions, inlined: this runs for every node, every round.)"""
    capacity_cpu, capacity_memory = node.capacity
    reclaimable = metric.prod_reclaimable or ZERO
    cpu, memory = reclaimable[0], -(-reclaimable[1] // 1000)
    usage = metric.node_usage
    if usage is not None:  # bounded by what the node leaves unused
        unused_cpu, unused_memory = capacity_cpu - usage[0], -(-(capacity_memory - usage[1]) // 1000)
    else:
        unused_cpu = unused_memory = 0
    cpu = max(min(cpu, unused_cpu), 0)
    memory = max(min(memory, unused_memory), 0)
    system = system_used(metric, PriorityClass.MID)
    reserved = node.reserved
    prod_cpu, prod_memory = node.prod_request
    # capacity − max(system, reserved) − prod request, never negative
    unallocated_cpu = capacity_cpu - (system[0] if system[0] > reserved[0] else reserved[0]) - prod_cpu
    unallocated_memory = capacity_memory - (system[1] if system[1] > reserved[1] else reserved[1]) - prod_memory
    ratio = float(strategy.mid_unallocated_percent) / 100
    cpu += int(float(unallocated_cpu if unallocated_cpu > 0 else 0) * ratio)
    memory += int(float(-(-unallocated_memory // 1000) if unallocated_memory > 0 else 0) * ratio)
    return _cap(strategy, node.capacity, cpu, memory)


def node_mid(strategy: ColocationStrategy, node: NodeInput, metric: MetricInput) -> Res:
    """mid (cpu milli-cores, memory milli-bytes of whole bytes)."""
    if strategy.mid_reclaim_mode == MID_RECLAIM_MODE_STATIC:
        return at_most(node.capacity, static_mid(strategy, node.capacity))
    return at_most(node.capacity, policy_mid(strategy, node, metric))
