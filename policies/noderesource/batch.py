"""Batch resources of a node (`pkg/slo-controller/noderesource/plugins/batchresource/plugin.go`).

What the prod (HP: neither batch nor free) pods requested but do not use, minus a safety margin,
the system's usage or reservation: `capacity − margin − max(system, reserved) − HP used` under the
`usage` policy, with `request` and `maxUsageRequest` variants
(`plugins/util/util.go` CalculateBatchResourceByPolicy). The NUMA split is in `numa.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from policies.noderesource.inputs import (
    ZERO,
    MetricInput,
    NodeInput,
    Res,
    add,
    clamp0,
    hp_host_usage,
    is_low_priority,
    is_lse,
    multiply_milli,
    multiply_value,
    rmax,
    sub,
)
from policies.slo_config.colocation import (
    CALCULATE_BY_MAX_USAGE_REQUEST,
    CALCULATE_BY_REQUEST,
    ColocationStrategy,
)

DEGRADE_MESSAGE: Final = "degrade node resource because of abnormal nodeMetric, reason: degradedByBatchResource"


@dataclass(frozen=True, slots=True)
class HPSums:
    """What the high-priority pods take: requests, usage, and max(request, usage) per pod."""

    request: Res
    used: Res
    max_used_request: Res


def is_degraded(strategy: ColocationStrategy, metric: MetricInput | None, now: float) -> bool:
    """A missing NodeMetric, one never updated, or one older than `degradeTimeMinutes` degrades."""
    if metric is None or metric.update_time is None:
        return True
    return now > metric.update_time + strategy.degrade_time_minutes * 60


def safety_margin(strategy: ColocationStrategy, capacity: Res) -> Res:
    """`GetNodeSafetyMargin`: (100 − reclaim percent) of the capacity, truncated after a float multiply."""
    cpu_ratio = float(100 - strategy.cpu_reclaim_threshold_percent) / 100.0
    memory_ratio = float(100 - strategy.memory_reclaim_threshold_percent) / 100.0
    return (multiply_milli(capacity[0], cpu_ratio), multiply_value(capacity[1], memory_ratio))


def system_used(metric: MetricInput) -> Res:
    """System usage plus the usage of host applications above batch priority."""
    return add(metric.system_usage, hp_host_usage(metric, "koord-batch"))


def hp_sums(node: NodeInput, metric: MetricInput) -> HPSums:
    """Sum the HP pods' requests and usage; metrics of pods not listed count by their own priority.

    An HP pod without a metric counts its request as usage but adds nothing to max(request, usage)
    (Koordinator's node-level quirk); an LSE pod counts its request for cpu."""
    request, used, max_used = ZERO, ZERO, ZERO
    dangling = dict(metric.pods)
    for pod in node.pods:
        if not pod.active:
            continue
        found = metric.pods.get(pod.key)
        if found is not None:
            dangling.pop(pod.key, None)
        if is_low_priority(pod.priority):
            continue
        request = add(request, pod.request)
        if found is None:
            used = add(used, pod.request)
            continue
        usage = found[1]
        if is_lse(pod.qos):
            used = add(used, (pod.request[0], usage[1]))
        else:
            used = add(used, usage)
        max_used = add(max_used, rmax(pod.request, usage))
    for priority, usage in dangling.values():
        if is_low_priority(priority):
            continue
        used = add(used, usage)
        max_used = add(max_used, usage)
    return HPSums(request, used, max_used)


def batch_by_policy(
    strategy: ColocationStrategy, capacity: Res, margin: Res, reserved: Res, system: Res, hp: HPSums
) -> Res:
    """`CalculateBatchResourceByPolicy`: cpu by usage or maxUsageRequest, memory by usage, request or
    maxUsageRequest, each capped by its batch threshold percent of the capacity when set."""
    system_or_reserved = rmax(system, reserved)
    base = sub(capacity, margin)
    by_usage = clamp0(sub(sub(base, system_or_reserved), hp.used))
    cpu = by_usage[0]
    if strategy.cpu_calculate_policy == CALCULATE_BY_MAX_USAGE_REQUEST:
        cpu = max(base[0] - system_or_reserved[0] - hp.max_used_request[0], 0)
    if strategy.batch_cpu_threshold_percent is not None:
        cpu = min(cpu, multiply_milli(capacity[0], float(strategy.batch_cpu_threshold_percent) / 100))
    if strategy.memory_calculate_policy == CALCULATE_BY_REQUEST:
        memory = max(base[1] - reserved[1] - hp.request[1], 0)
    elif strategy.memory_calculate_policy == CALCULATE_BY_MAX_USAGE_REQUEST:
        memory = max(base[1] - system_or_reserved[1] - hp.max_used_request[1], 0)
    else:
        memory = by_usage[1]
    if strategy.batch_memory_threshold_percent is not None:
        memory = min(memory, multiply_value(capacity[1], float(strategy.batch_memory_threshold_percent) / 100))
    return (cpu, memory)


def node_batch(strategy: ColocationStrategy, node: NodeInput, metric: MetricInput) -> Res:
    """The node-level batch allocatable: cpu in milli-cores (whole), memory in milli-bytes."""
    capacity = node.capacity
    return batch_by_policy(
        strategy,
        capacity,
        safety_margin(strategy, capacity),
        node.reserved,
        system_used(metric),
        hp_sums(node, metric),
    )
