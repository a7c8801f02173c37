"""Reading a NodeMetric (`slo.koordinator.sh/v1alpha1`) as the koordlet reports it.

The one reader of the schema: the scheduler's LoadAware cache and the descheduler's LowNodeLoad
both take their usage from here, and the koordlet writes NodeMetrics in the same shape. Amounts are
the scheduler's integer scalars (`policies.quantity.resource_list`: millicores for cpu, base units
otherwise); a malformed quantity raises `QuantityError`. Times stay the RFC 3339 text the object
carries (parsing a time is the caller's, who owns the clock).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.constants import RESOURCE_CPU
from policies.durations import parse_duration
from policies.quantity import milli_value, value

#: koordlet's default `spec.metricCollectPolicy.reportIntervalSeconds`
DEFAULT_REPORT_INTERVAL_SECONDS: Final = 60

Amounts = dict[str, int]


@dataclass(frozen=True, slots=True)
class PodMetric:
    """One `status.podsMetric` entry. `usage` is None when the entry reports no resources."""

    key: str  # namespace/name
    priority: str  # the priority class the koordlet saw ("koord-prod", ...), "" when absent
    usage: Amounts | None


@dataclass(frozen=True, slots=True)
class AggregatedUsage:
    """One `aggregatedNodeUsages` entry: percentile kind ("p95", ...) -> usage, over `duration` seconds."""

    duration: float
    usage: Mapping[str, Amounts]


@dataclass(frozen=True, slots=True)
class NodeMetricReading:
    update_time: str | None
    report_interval_seconds: int
    #: whether `status.nodeMetric` is present at all
    has_node_metric: bool
    #: `status.nodeMetric.nodeUsage` (None without a nodeMetric)
    node_usage: Amounts | None
    #: `status.nodeMetric.systemUsage` (empty when absent)
    system_usage: Amounts
    aggregated: tuple[AggregatedUsage, ...]
    pods: tuple[PodMetric, ...]
    #: `status.hostApplicationMetric`: (priority class, usage) per host application
    host_applications: tuple[tuple[str, Amounts], ...] = ()
    #: `status.prodReclaimableMetric.resource` (None when absent or without resources)
    prod_reclaimable: Amounts | None = None


def _amounts(raw: Mapping[str, Any] | None) -> Amounts:
    """A ResourceMap (`{"resources": {...}}`) as scalars (`resource_list`, without its comprehension's
    frame: a NodeMetric has several, read on every report)."""
    resources = raw.get("resources") if raw else None
    out: Amounts = {}
    if resources:
        for resource, text in resources.items():
            out[resource] = milli_value(text) if resource == RESOURCE_CPU else value(text)
    return out


#: the reading of each node's NodeMetric, by node name, while its `spec` and `status` are the very
#: objects read (a reading depends on nothing else): the scheduler, the descheduler and the manager
#: read the same stored object, or shallow copies of it, when they share a process (`colocate
#: whatif`). A stored object is replaced when it changes, never edited, so its reading stays true
#: while it is the one held. One entry per node (cleared past the bound).
_READ_CACHE_SIZE: Final = 1 << 16
_read_cache: dict[str, tuple[object, object, NodeMetricReading]] = {}


def read_node_metric(metric: Mapping[str, Any]) -> NodeMetricReading:
    """The NodeMetric's reading (the same value for the same spec and status: see `_read_cache`)."""
    name = str((metric.get("metadata") or {}).get("name") or "")
    spec, status = metric.get("spec"), metric.get("status")
    cached = _read_cache.get(name)
    if cached is not None and cached[0] is spec and cached[1] is status:
        return cached[2]
    reading = _read(metric)
    if len(_read_cache) >= _READ_CACHE_SIZE:
        _read_cache.clear()
    _read_cache[name] = (spec, status, reading)
    return reading


def _read(metric: Mapping[str, Any]) -> NodeMetricReading:
    spec, status = metric.get("spec") or {}, metric.get("status") or {}
    interval = (spec.get("metricCollectPolicy") or {}).get("reportIntervalSeconds") or DEFAULT_REPORT_INTERVAL_SECONDS
    node_metric = status.get("nodeMetric")
    pods = []
    # `resource_list` inlined (no frame per pod or per amount): this runs for every pod of every
    # node, every report; `milli_value`/`value` are the cached parsers `scalar_of` picks between
    for item in status.get("podsMetric") or ():
        pod_usage = item.get("podUsage")
        resources = pod_usage.get("resources") if pod_usage else None
        usage: Amounts | None = None
        if resources:
            usage = {}
            for resource, text in resources.items():
                usage[resource] = milli_value(text) if resource == RESOURCE_CPU else value(text)
        key = f"{item.get('namespace') or 'default'}/{item.get('name', '')}"
        pods.append(PodMetric(key, str(item.get("priority") or ""), usage))
    aggregated = []
    for entry in (node_metric or {}).get("aggregatedNodeUsages") or []:
        by_kind = {str(kind): _amounts(raw) for kind, raw in (entry.get("usage") or {}).items()}
        aggregated.append(AggregatedUsage(parse_duration(entry.get("duration")), by_kind))
    host_items = status.get("hostApplicationMetric")
    hosts = (
        tuple(
            (str(item.get("priority") or ""), _amounts(item.get("usage")))
            for item in host_items
            if isinstance(item, Mapping)
        )
        if host_items
        else ()
    )
    reclaimable = (status.get("prodReclaimableMetric") or {}).get("resource") or {}
    return NodeMetricReading(
        host_applications=hosts,
        prod_reclaimable=_amounts(reclaimable) if reclaimable.get("resources") is not None else None,
        update_time=status.get("updateTime") or None,
        report_interval_seconds=int(interval),
        has_node_metric=node_metric is not None,
        node_usage=_amounts(node_metric.get("nodeUsage")) if node_metric is not None else None,
        system_usage=_amounts((node_metric or {}).get("systemUsage")),
        aggregated=tuple(aggregated),
        pods=tuple(pods),
    )
