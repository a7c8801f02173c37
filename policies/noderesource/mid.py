"""Mid resources of a node (`pkg/slo-controller/noderesource/plugins/midresource/plugin.go`,
`plugins/util/util.go` CalculateMidResourceByPolicy / ByStaticMode).

Policy mode: what the koordlet reports as reclaimable from prod pods (`prodReclaimableMetric`),
bounded by what the node leaves unused, plus a share of what prod pods have not requested, capped
by a threshold percent of the capacity. Static mode: a fixed percent of the capacity, same cap.
A missing `prodReclaimableMetric` counts as zero; it does not degrade.
"""

from __future__ import annotations

from typing import Final

from policies.constants import PriorityClass
from policies.noderesource.inputs import (
    ZERO,
    MetricInput,
    NodeInput,
    Res,
    add,
    clamp0,
    hp_host_usage,
    multiply_milli,
    multiply_value,
    rmax,
    sub,
    value_of,
)
from policies.slo_config.colocation import MID_RECLAIM_MODE_STATIC, ColocationStrategy

DEGRADE_MESSAGE: Final = "degrade node Mid resource because of abnormal nodeMetric, reason: degradedByMidResource"


def _cap(strategy: ColocationStrategy, capacity: Res, cpu: int, memory_bytes: int) -> Res:
    """min(value, capacity × mid threshold percent); cpu in milli, memory in bytes -> milli."""
    max_cpu = int(float(capacity[0]) * (float(strategy.mid_cpu_threshold_percent) / 100))
    if cpu > max_cpu:
        cpu = max_cpu
    max_memory = int(float(value_of(capacity[1])) * (float(strategy.mid_memory_threshold_percent) / 100))
    if memory_bytes > max_memory:
        memory_bytes = max_memory
    return (cpu, memory_bytes * 1000)


def static_mid(strategy: ColocationStrategy, capacity: Res) -> Res:
    cpu = multiply_milli(capacity[0], float(strategy.mid_static_cpu_reserved_percent) / 100)
    memory = multiply_value(capacity[1], float(strategy.mid_static_memory_reserved_percent) / 100) // 1000
    return _cap(strategy, capacity, cpu, memory)


def prod_requested(node: NodeInput) -> Res:
    """Σ request of the node's active prod pods (summed once per NodeInput)."""
    return node.prod_request


def policy_mid(strategy: ColocationStrategy, node: NodeInput, metric: MetricInput) -> Res:
    capacity = node.capacity
    reclaimable = metric.prod_reclaimable or ZERO
    cpu, memory = reclaimable[0], value_of(reclaimable[1])
    unused = sub(capacity, metric.node_usage) if metric.node_usage is not None else ZERO
    cpu = max(min(cpu, unused[0]), 0)
    memory = max(min(memory, value_of(unused[1])), 0)
    system = add(metric.system_usage, hp_host_usage(metric, PriorityClass.MID))
    reserved = rmax(system, node.reserved)
    unallocated = clamp0(sub(sub(capacity, reserved), prod_requested(node)))
    ratio = float(strategy.mid_unallocated_percent) / 100
    cpu += int(float(unallocated[0]) * ratio)
    memory += int(float(value_of(unallocated[1])) * ratio)
    return _cap(strategy, capacity, cpu, memory)


def node_mid(strategy: ColocationStrategy, node: NodeInput, metric: MetricInput) -> Res:
    """mid (cpu milli-cores, memory milli-bytes of whole bytes)."""
    if strategy.mid_reclaim_mode == MID_RECLAIM_MODE_STATIC:
        return static_mid(strategy, node.capacity)
    return policy_mid(strategy, node, metric)
