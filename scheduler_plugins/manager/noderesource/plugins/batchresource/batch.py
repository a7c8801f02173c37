"""Batch resources of a node (`pkg/slo-controller/noderesource/plugins/batchresource/plugin.go`).

What the prod (HP: neither batch nor free) pods requested but do not use, minus a safety margin,
the system's usage or reservation: `capacity − margin − max(system, reserved) − HP used` under the
`usage` policy, with `request` and `maxUsageRequest` variants
(`plugins/util/util.go` CalculateBatchResourceByPolicy). The NUMA split is in `numa.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from policies.apis.constants import PriorityClass
from policies.apis.slo_config.colocation import CALCULATE_BY_MAX_USAGE_REQUEST, CALCULATE_BY_REQUEST, ColocationStrategy
from scheduler_plugins.manager.noderesource.inputs import (
    LOW_PRIORITIES,
    MetricInput,
    NodeInput,
    Res,
    at_most,
    multiply_milli,
    multiply_value,
    percent_of,
    system_used,
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
    """`GetNodeSafetyMargin`: (100 − reclaim percent) of the capacity."""
    return percent_of(
        capacity, 100 - strategy.cpu_reclaim_threshold_percent, 100 - strategy.memory_reclaim_threshold_percent
    )


def _hp_sums(node: NodeInput, metric: MetricInput) -> tuple[int, int, int, int]:
    """`hp_sums`' usage and max(request, usage), as (used cpu, used memory, max cpu, max memory)."""
    used_cpu = used_memory = max_cpu = max_memory = 0
    metrics = metric.pods
    for key, cpu, memory, lse in node.hp_pods:  # the active pods above batch priority
        found = metrics.get(key)
        if found is None:
            used_cpu += cpu
            used_memory += memory
            continue
        usage_cpu, usage_memory = found[1]
        used_cpu += cpu if lse else usage_cpu
        used_memory += usage_memory
        max_cpu += cpu if cpu > usage_cpu else usage_cpu
        max_memory += memory if memory > usage_memory else usage_memory
    listed = node.active_keys
    for key, (priority, usage) in metrics.items():
        if key in listed or priority in LOW_PRIORITIES:
            continue
        used_cpu += usage[0]
        used_memory += usage[1]
        max_cpu += usage[0]
        max_memory += usage[1]
    return used_cpu, used_memory, max_cpu, max_memory


def hp_sums(node: NodeInput, metric: MetricInput) -> HPSums:
    """Sum the HP pods' requests and usage; metrics of pods not listed count by their own priority.

    An HP pod without a metric counts its request as usage but adds nothing to max(request, usage)
    (Koordinator's node-level quirk); an LSE pod counts its request for cpu. (Summed in plain
    integers: this runs for every pod of every node, every round.)"""
    used_cpu, used_memory, max_cpu, max_memory = _hp_sums(node, metric)
    return HPSums(node.hp_request, (used_cpu, used_memory), (max_cpu, max_memory))


def batch_by_policy(
    strategy: ColocationStrategy, capacity: Res, margin: Res, reserved: Res, system: Res, hp: HPSums
) -> Res:
    """`CalculateBatchResourceByPolicy`: cpu by usage or maxUsageRequest, memory by usage, request or
    maxUsageRequest, each capped by its batch threshold percent of the capacity when set."""
    return _by_policy(strategy, capacity, margin, reserved, system, hp.request[1], hp.used, hp.max_used_request)


def _by_policy(
    strategy: ColocationStrategy,
    capacity: Res,
    margin: Res,
    reserved: Res,
    system: Res,
    request_memory: int,
    used: Res,
    max_used: Res,
) -> Res:
    """`batch_by_policy` over the HP sums' parts (in plain integers: this runs for every node, every round)."""
    # max(system, reserved) per resource, and the capacity less the margin
    system_cpu = system[0] if system[0] > reserved[0] else reserved[0]
    system_memory = system[1] if system[1] > reserved[1] else reserved[1]
    base_cpu, base_memory = capacity[0] - margin[0], capacity[1] - margin[1]
    by_max = strategy.cpu_calculate_policy == CALCULATE_BY_MAX_USAGE_REQUEST
    cpu = base_cpu - system_cpu - (max_used[0] if by_max else used[0])
    if strategy.memory_calculate_policy == CALCULATE_BY_REQUEST:
        memory = base_memory - reserved[1] - request_memory
    else:
        by_max = strategy.memory_calculate_policy == CALCULATE_BY_MAX_USAGE_REQUEST
        memory = base_memory - system_memory - (max_used[1] if by_max else used[1])
    return (
        _at_most_percent(cpu, strategy.batch_cpu_threshold_percent, capacity[0], multiply_milli),
        _at_most_percent(memory, strategy.batch_memory_threshold_percent, capacity[1], multiply_value),
    )


def _at_most_percent(amount: int, percent: int | None, capacity: int, multiply: Callable[[int, float], int]) -> int:
    """The amount, at least 0 and, when a batch threshold percent is set, at most that share of the capacity."""
    amount = amount if amount > 0 else 0
    return amount if percent is None else min(amount, multiply(capacity, float(percent) / 100))


def node_batch(strategy: ColocationStrategy, node: NodeInput, metric: MetricInput) -> Res:
    """The node-level batch allocatable: cpu in milli-cores (whole), memory in milli-bytes."""
    capacity = node.capacity
    used_cpu, used_memory, max_cpu, max_memory = _hp_sums(node, metric)
    return at_most(
        capacity,
        _by_policy(
            strategy,
            capacity,
            safety_margin(strategy, capacity),
            node.reserved,
            system_used(metric, PriorityClass.BATCH),
            node.hp_request[1],
            (used_cpu, used_memory),
            (max_cpu, max_memory),
        ),
    )
