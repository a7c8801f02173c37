"""Per-pool arithmetic of LowNodeLoad (Koordinator's
`pkg/descheduler/framework/plugins/loadaware/utilization_util.go`): thresholds, node usage from
NodeMetrics, and the classification of each node. Pure: nodes, pods and metrics in, values out.

Amounts are integer scalars (millicores for cpu, base units otherwise; `pods` counts pods).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from policies.apis.constants import ANNOTATION_RAW_ALLOCATABLE, RESOURCE_MEMORY, RESOURCE_PODS, PriorityClass
from policies.apis.nodemetric import read_node_metric
from policies.apis.objects import annotations_of, name_of, spec_of, status_of
from policies.apis.qos import defaulted_priority_class
from policies.apis.quantity import QuantityError, resource_list
from policies.apis.timestamps import parse_time
from scheduler_plugins.descheduler.framework.evictor import pod_key
from scheduler_plugins.descheduler.plugins.lownodeload.args import NodePool, Thresholds

Amounts = dict[str, int]
Object = Mapping[str, Any]

HIGH: Final = "high"
PROD_HIGH: Final = "prodHigh"
LOW: Final = "low"
PROD_LOW: Final = "prodLow"
BOTH_LOW: Final = "bothLow"
NONE: Final = "none"


@dataclass(frozen=True)
class PoolThresholds:
    """A pool's percentages completed by `new_thresholds`: every resource named anywhere (and
    memory) has a low and a high, so an unconfigured resource is never over or under (100 %)."""

    low: Thresholds
    high: Thresholds
    prod_low: Thresholds
    prod_high: Thresholds

    @property
    def resource_names(self) -> list[str]:
        return list(self.low)


def new_thresholds(pool: NodePool) -> PoolThresholds:
    names = list(dict.fromkeys([*pool.low, *pool.high, *pool.prod_low, *pool.prod_high, RESOURCE_MEMORY]))
    fill = 0.0 if pool.use_deviation_thresholds else 100.0
    low, high = dict(pool.low), dict(pool.high)
    prod_low, prod_high = dict(pool.prod_low), dict(pool.prod_high)
    for name in names:
        if name not in low:
            low[name] = high[name] = fill
        high.setdefault(name, fill)
        if name not in prod_low:
            prod_low[name] = prod_high[name] = fill
        prod_high.setdefault(name, fill)
    return PoolThresholds(low, high, prod_low, prod_high)


@dataclass
class NodeUsage:
    """One node of a pool: its capacity, usage (NodeMetric), pods, and absolute thresholds."""

    node: Object
    name: str
    unschedulable: bool
    capacity: Amounts
    usage: Amounts
    prod_usage: Amounts
    pods: list[Object]
    prod_pods: list[Object]
    pod_usage: dict[str, Amounts]  # namespace/name -> usage reported for it
    low: Amounts = field(default_factory=dict)
    high: Amounts = field(default_factory=dict)
    prod_low: Amounts = field(default_factory=dict)
    prod_high: Amounts = field(default_factory=dict)

    def percent(self, resource: str, amount: int | None = None) -> float:
        capacity = self.capacity.get(resource, 0)
        used = self.usage.get(resource, 0) if amount is None else amount
        return 100.0 * used / capacity if capacity else 0.0


def node_capacity(node: Object) -> Amounts:
    """The raw-allocatable annotation when present (the allocatable before amplification), else
    `status.allocatable`."""
    raw = annotations_of(node).get(ANNOTATION_RAW_ALLOCATABLE)
    if raw:
        try:
            parsed = json.loads(raw)
            if isinstance(parsed, Mapping):
                return resource_list(parsed)
        except (ValueError, QuantityError):
            pass
    try:
        return resource_list(status_of(node).get("allocatable"))
    except QuantityError:
        return {}


def is_prod(pod: Object) -> bool:
    return defaulted_priority_class(pod) == PriorityClass.PROD


def node_usage(
    node: Object,
    pods: Sequence[Object],
    metric: Object | None,
    resource_names: Sequence[str],
    now: float,
    expiration_seconds: int,
) -> NodeUsage | None:
    """The node's usage as `utilization_util.go` computes it, None when its NodeMetric is missing,
    empty or expired."""
    if metric is None:
        return None
    try:
        reading = read_node_metric(metric)
    except (QuantityError, ValueError):
        return None
    updated = parse_time(reading.update_time)
    if not reading.has_node_metric or updated is None or now - updated > expiration_seconds:
        return None
    prod_pods = [p for p in pods if is_prod(p)]
    prod_keys = {pod_key(p) for p in prod_pods}
    # every pod the NodeMetric lists, with empty usage too (a best-effort pod): Koordinator's podMetrics
    pod_usage = {m.key: m.usage or {} for m in reading.pods}
    usage: Amounts = {}
    prod_usage: Amounts = {}
    for resource in resource_names:
        if resource == RESOURCE_PODS:
            continue
        usage[resource] = reading.system_usage.get(resource, 0) + sum(u.get(resource, 0) for u in pod_usage.values())
        prod_usage[resource] = sum(u.get(resource, 0) for k, u in pod_usage.items() if k in prod_keys)
    usage[RESOURCE_PODS], prod_usage[RESOURCE_PODS] = len(pods), len(prod_pods)
    return NodeUsage(
        node,
        name_of(node),
        bool(spec_of(node).get("unschedulable")),
        node_capacity(node),
        usage,
        prod_usage,
        list(pods),
        prod_pods,
        pod_usage,
    )


def _clamp(value: float) -> float:
    return min(max(value, 0.0), 100.0)


def _average(nodes: Sequence[NodeUsage], resource: str, prod: bool) -> float:
    total = 0.0
    for node in nodes:
        capacity = node.capacity.get(resource, 0)
        if capacity:
            total += (node.prod_usage if prod else node.usage).get(resource, 0) / capacity * 100
    return total / len(nodes) if nodes else 0.0


def set_thresholds(nodes: Sequence[NodeUsage], pool: NodePool, thresholds: PoolThresholds) -> None:
    """Absolute thresholds per node: fixed percentages of capacity, or (deviation) the pool's
    average usage minus/plus the percentages."""
    for prod, (low, high) in (
        (False, (thresholds.low, thresholds.high)),
        (True, (thresholds.prod_low, thresholds.prod_high)),
    ):
        averages = {r: _average(nodes, r, prod) for r in low} if pool.use_deviation_thresholds else {}
        for node in nodes:
            low_t: Amounts = {}
            high_t: Amounts = {}
            for resource, low_pct in low.items():
                capacity = node.capacity.get(resource, 0)
                if not pool.use_deviation_thresholds:
                    low_t[resource] = int(low_pct * 0.01 * capacity)
                    high_t[resource] = int(high[resource] * 0.01 * capacity)
                elif low_pct == 0:
                    low_t[resource] = high_t[resource] = capacity
                else:
                    average = averages[resource]
                    low_t[resource] = int(capacity * _clamp(average - low_pct) / 100)
                    high_t[resource] = int(capacity * _clamp(average + high[resource]) / 100)
            if prod:
                node.prod_low, node.prod_high = low_t, high_t
            else:
                node.low, node.high = low_t, high_t


def underutilized(usage: Mapping[str, int], thresholds: Mapping[str, int]) -> bool:
    return all(usage[r] <= t for r, t in thresholds.items() if r in usage)


def overutilized(usage: Mapping[str, int], thresholds: Mapping[str, int]) -> bool:
    return any(usage[r] > t for r, t in thresholds.items() if r in usage)


def classify(node: NodeUsage) -> str:
    """`utilization_util.go`'s classification: high, prodHigh, low, prodLow, bothLow, or none
    (appropriately utilised)."""
    if not node.unschedulable and underutilized(node.usage, node.low):
        if overutilized(node.prod_usage, node.prod_high):
            return PROD_HIGH
        if underutilized(node.prod_usage, node.prod_low):
            return BOTH_LOW
        return LOW
    if overutilized(node.usage, node.high):
        return HIGH
    if overutilized(node.prod_usage, node.prod_high):
        return PROD_HIGH
    if not node.unschedulable and underutilized(node.prod_usage, node.prod_low):
        return PROD_LOW
    return NONE
