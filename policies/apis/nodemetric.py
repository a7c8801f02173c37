"""Reading a NodeMetric (`slo.koordinator.sh/v1alpha1`) as the koordlet reports it, and rendering one.

The one reader of the schema: the scheduler's LoadAware cache and the descheduler's LowNodeLoad
both take their usage from here, and the koordlet writes NodeMetrics in the same shape. Amounts are
the scheduler's integer scalars (`policies.apis.quantity.resource_list`: millicores for cpu, base units
otherwise); a malformed quantity raises `QuantityError`. Times stay the RFC 3339 text the object
carries (parsing a time is the caller's, who owns the clock).

`render_node_metric` is the inverse, for a reporter (the koordlet's NodeMetric report, `colocate
whatif`'s sampler): it writes a reading as the object's `status`, and since reading that object back
gives the very reading it was rendered from (`tests/policies/test_nodemetric_render.py` proves it
over many readings), it hands the reading to `read_node_metric`'s cache instead of having it parsed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Final

from policies.apis.constants import RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.durations import go_duration, parse_duration
from policies.apis.kinds import NODE_METRIC_KIND, kind_named
from policies.apis.quantity import resource_list, scalar_text

#: koordlet's default `spec.metricCollectPolicy.reportIntervalSeconds`
DEFAULT_REPORT_INTERVAL_SECONDS: Final = 60

Amounts = dict[str, int]


@dataclass(frozen=True, slots=True)
class PodMetric:
    """One `status.podsMetric` entry. `usage` is None when the entry reports no resources."""

    key: str  # namespace/name
    priority: str  # the priority class the koordlet saw ("koord-prod", ...), "" when absent
    usage: Amounts | None
    #: the pod's QoS class the koordlet saw ("LS", "BE", ...), "" when absent (last, defaulted:
    #: `colocate whatif`'s sampler builds these positionally without one)
    qos: str = ""


@dataclass(frozen=True, slots=True)
class HostApplicationMetric:
    """One `status.hostApplicationMetric` entry: a host application (NodeSLO `hostApplications`) and
    its usage; "" for a field the entry does not carry."""

    name: str
    priority: str
    qos: str
    usage: Amounts


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
    #: `status.hostApplicationMetric`, in its order
    host_applications: tuple[HostApplicationMetric, ...] = ()
    #: `status.prodReclaimableMetric.resource` (None when absent or without resources)
    prod_reclaimable: Amounts | None = None


def _amounts(raw: Mapping[str, Any] | None) -> Amounts:
    """A ResourceMap (`{"resources": {...}}`) as scalars."""
    return resource_list((raw or {}).get("resources"))


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
    _remember(name, spec, status, reading)
    return reading


def _remember(name: str, spec: object, status: object, reading: NodeMetricReading) -> None:
    if len(_read_cache) >= _READ_CACHE_SIZE:
        _read_cache.clear()
    _read_cache[name] = (spec, status, reading)


def _interval(spec: Mapping[str, Any]) -> Any:
    return (spec.get("metricCollectPolicy") or {}).get("reportIntervalSeconds") or DEFAULT_REPORT_INTERVAL_SECONDS


def _read(metric: Mapping[str, Any]) -> NodeMetricReading:
    spec, status = metric.get("spec") or {}, metric.get("status") or {}
    interval = _interval(spec)
    node_metric = status.get("nodeMetric")
    pods = []
    for item in status.get("podsMetric") or ():
        pod_usage = item.get("podUsage")
        usage = _amounts(pod_usage) if pod_usage and pod_usage.get("resources") else None
        key = f"{item.get('namespace') or 'default'}/{item.get('name', '')}"
        pods.append(PodMetric(key, str(item.get("priority") or ""), usage, str(item.get("qos") or "")))
    aggregated = []
    for entry in (node_metric or {}).get("aggregatedNodeUsages") or []:
        by_kind = {str(kind): _amounts(raw) for kind, raw in (entry.get("usage") or {}).items()}
        aggregated.append(AggregatedUsage(parse_duration(entry.get("duration")), by_kind))
    host_items = status.get("hostApplicationMetric")
    hosts = (
        tuple(
            HostApplicationMetric(
                str(item.get("name") or ""),
                str(item.get("priority") or ""),
                str(item.get("qos") or ""),
                _amounts(item.get("usage")),
            )
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


@lru_cache(maxsize=1 << 16)
def cpu_text(milli: int) -> str:
    """Millicores as quantity text (`scalar_text`; `_amounts` reads it back to the same integer),
    cached: a reporter writes the same few amounts again and again."""
    return scalar_text(RESOURCE_CPU, milli)


@lru_cache(maxsize=1 << 16)
def memory_text(amount: int) -> str:
    """Bytes as quantity text (`scalar_text`), cached as `cpu_text` is."""
    return scalar_text(RESOURCE_MEMORY, amount)


@lru_cache(maxsize=1 << 12)
def _text(resource: str, amount: int) -> str:
    return scalar_text(resource, amount)


def _resources(amounts: Amounts) -> dict[str, Any]:
    # a loop, not a comprehension (no frame of its own), and cpu and memory by their own caches
    # (keyed by the integer alone): this runs for every pod of every report
    resources = {}
    for resource, amount in amounts.items():
        if resource == RESOURCE_CPU:
            resources[resource] = cpu_text(amount)
        elif resource == RESOURCE_MEMORY:
            resources[resource] = memory_text(amount)
        else:
            resources[resource] = _text(resource, amount)
    return {"resources": resources}


def render_status(reading: NodeMetricReading) -> dict[str, Any]:
    """The NodeMetric `status` that reads as `reading` (but for `report_interval_seconds`, which is
    the `spec`'s). Raises ValueError for a reading no status reads as: a pod key that is not
    `namespace/name` with a namespace, an empty pod usage (read as none), an empty `update_time`,
    node-level usage without a `nodeMetric`, an aggregation window `go_duration` cannot write exactly."""
    if reading.update_time == "":
        raise ValueError("an empty updateTime reads as none")
    status: dict[str, Any] = {}
    if reading.update_time is not None:
        status["updateTime"] = reading.update_time
    if reading.has_node_metric:
        if reading.node_usage is None:
            raise ValueError("a nodeMetric always reads with a nodeUsage")
        node_metric: dict[str, Any] = {"nodeUsage": _resources(reading.node_usage)}
        if reading.system_usage:  # absent reads as empty: a reporter that measures none writes none
            node_metric["systemUsage"] = _resources(reading.system_usage)
        if reading.aggregated:
            node_metric["aggregatedNodeUsages"] = [_aggregated(entry) for entry in reading.aggregated]
        status["nodeMetric"] = node_metric
    elif reading.node_usage is not None or reading.system_usage or reading.aggregated:
        raise ValueError("node usage without a nodeMetric")
    items = []
    for pod in reading.pods:  # inline (no call per pod): this runs for every pod of every report
        namespace, slash, name = pod.key.partition("/")
        if not namespace or not slash:
            raise ValueError(f"pod key {pod.key!r} is not namespace/name")
        item: dict[str, Any] = {"namespace": namespace, "name": name}
        if pod.priority:
            item["priority"] = pod.priority
        if pod.qos:
            item["qos"] = pod.qos
        usage = pod.usage
        if usage is not None:
            if not usage:
                raise ValueError(f"pod {pod.key}: an empty usage reads as none")
            item["podUsage"] = _resources(usage)
        items.append(item)
    status["podsMetric"] = items
    if reading.host_applications:
        status["hostApplicationMetric"] = [_host_application(app) for app in reading.host_applications]
    if reading.prod_reclaimable is not None:
        status["prodReclaimableMetric"] = {"resource": _resources(reading.prod_reclaimable)}
    return status


def _host_application(app: HostApplicationMetric) -> dict[str, Any]:
    item: dict[str, Any] = {}
    if app.name:
        item["name"] = app.name
    item["usage"] = _resources(app.usage)
    if app.priority:
        item["priority"] = app.priority
    if app.qos:
        item["qos"] = app.qos
    return item


def _aggregated(entry: AggregatedUsage) -> dict[str, Any]:
    # Go's text, as the koordlet's `metav1.Duration` marshals ("5m0s")
    duration = go_duration(entry.duration)
    if parse_duration(duration) != entry.duration:
        raise ValueError(f"aggregation window {entry.duration}s has no exact duration text")
    return {"duration": duration, "usage": {kind: _resources(usage) for kind, usage in entry.usage.items()}}


def render_node_metric(
    name: str, reading: NodeMetricReading, current: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The node's NodeMetric reporting `reading`: `current` (the stored object) with its `status`
    replaced, or a new object without a `spec`. Its reading (`read_node_metric`) is `reading` with
    the `spec`'s report interval: that is what the cache is handed, so readers do not parse it."""
    status = render_status(reading)
    if current is None:
        metric: dict[str, Any] = {
            "apiVersion": kind_named(NODE_METRIC_KIND).api_version,
            "kind": NODE_METRIC_KIND,
            "metadata": {"name": name},
            "status": status,
        }
    else:
        metric = {**current, "status": status}
    spec = metric.get("spec")
    interval = int(_interval(spec or {}))
    if interval != reading.report_interval_seconds:
        reading = replace(reading, report_interval_seconds=interval)
    _remember(str((metric.get("metadata") or {}).get("name") or ""), spec, status, reading)
    return metric
