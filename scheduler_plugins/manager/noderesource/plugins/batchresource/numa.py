"""Batch resources per NUMA zone, for the NodeResourceTopology (`batchresource/plugin.go`
calculateOnNUMALevel, `plugins/util/util.go` GetPodNUMARequestAndUsage).

NUMA-level metrics are not reported, so the node's system usage and reservation are split evenly
over the zones; a pod bound to NUMA nodes (its resource-status annotation) spreads over those, any
other pod over all zones. Each share is rounded up at milli precision, as Koordinator's
`DivideResourceList` does with a float division.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from policies.apis.constants import PriorityClass
from policies.apis.slo_config.colocation import ColocationStrategy
from scheduler_plugins.manager.noderesource.inputs import (
    ZERO,
    MetricInput,
    NodeInput,
    PodInput,
    Res,
    ZoneInput,
    add,
    is_low_priority,
    is_lse,
    rmax,
    system_used,
)
from scheduler_plugins.manager.noderesource.plugins.batchresource.batch import (
    HPSums,
    batch_by_policy,
    safety_margin,
)


def divide(amount: Res, divisor: int) -> Res:
    """`DivideResourceList`: ceil(milli / divisor), computed in float64 as Go does."""
    if divisor == 0:
        return amount
    return (math.ceil(float(amount[0]) / divisor), math.ceil(float(amount[1]) / divisor))


def _spread(pod: PodInput, amount: Res, zones: int) -> list[Res]:
    """The pod's share on each zone: over its valid bound NUMA nodes, else over all zones."""
    bound = sum(1 for n in pod.numa_nodes if 0 <= n < zones)
    if bound <= 0:
        share = divide(amount, zones)
        return [share] * zones
    share = divide(amount, bound)
    on = set(pod.numa_nodes)
    return [share if i in on else ZERO for i in range(zones)]


def zone_hp_sums(node: NodeInput, metric: MetricInput, zones: int) -> list[HPSums]:
    """HP sums per zone; unlike the node level, a pod without metric counts in max(request, usage)."""
    request = [ZERO] * zones
    used = [ZERO] * zones
    max_used = [ZERO] * zones
    dangling = dict(metric.pods)
    for pod in node.pods:
        if not pod.active:
            continue
        found = metric.pods.get(pod.key)
        if found is not None:
            dangling.pop(pod.key, None)
        if is_low_priority(pod.priority):
            continue
        zone_request = _spread(pod, pod.request, zones)
        if found is None:
            for i in range(zones):
                request[i] = add(request[i], zone_request[i])
                used[i] = add(used[i], zone_request[i])
                max_used[i] = add(max_used[i], zone_request[i])
            continue
        zone_usage = _spread(pod, found[1], zones)
        for i in range(zones):
            request[i] = add(request[i], zone_request[i])
            if is_lse(pod.qos):
                used[i] = add(used[i], (zone_request[i][0], zone_usage[i][1]))
            else:
                used[i] = add(used[i], zone_usage[i])
            max_used[i] = add(max_used[i], rmax(zone_usage[i], zone_request[i]))
    for priority, usage in dangling.values():
        if is_low_priority(priority):
            continue
        share = divide(usage, zones)
        for i in range(zones):
            used[i] = add(used[i], share)
            max_used[i] = add(max_used[i], share)
    return [HPSums(request[i], used[i], max_used[i]) for i in range(zones)]


def zone_batch(
    strategy: ColocationStrategy, node: NodeInput, metric: MetricInput, zones: Sequence[ZoneInput]
) -> dict[str, Res]:
    """Zone name -> batch (cpu milli-cores, memory milli-bytes); {} without zones."""
    count = len(zones)
    if count == 0:
        return {}
    system = divide(system_used(metric, PriorityClass.BATCH), count)
    reserved = divide(node.reserved, count)
    sums = zone_hp_sums(node, metric, count)
    result: dict[str, Res] = {}
    for zone, hp in zip(zones, sums, strict=True):
        capacity = zone.allocatable
        result[zone.name] = batch_by_policy(strategy, capacity, safety_margin(strategy, capacity), reserved, system, hp)
    return result
