"""The usage a round reads: the node's, each pod's and each host application's latest CPU and
memory, and BE's windowed CPU figures. In `run` it comes from the metric cache (the machine); in
`plan` from a NodeMetric's `status` (`usage_of_node_metric`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from policies.apis.constants import RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.nodemetric import NodeMetricReading, read_node_metric
from policies.apis.objects import status_of
from policies.apis.quantity import QuantityError, milli_value, resource_list, value


@dataclass(frozen=True)
class ResourceUsage:
    cpu_milli: int = 0
    memory: int = 0


@dataclass(frozen=True)
class BECPU:
    """BE's CPU over the eviction window (averages, millicores): used, requested, really allowed."""

    usage_milli: int
    request_milli: int
    limit_milli: int | None  # None: not known yet (the cgroup was not read)


@dataclass(frozen=True)
class Usage:
    node: ResourceUsage | None = None
    #: by pod "namespace/name"; a cgroup with no pod object is keyed "uid:<uid>" (counts as non-BE)
    pods: Mapping[str, ResourceUsage] = field(default_factory=dict)
    host_apps: Mapping[str, ResourceUsage] = field(default_factory=dict)
    be_cpu: BECPU | None = None


@lru_cache(maxsize=4096)
def _cpu_memory(cpu: str, memory: str) -> ResourceUsage | None:
    """A ResourceList of exactly cpu and memory texts (what a NodeMetric holds; the texts repeat)."""
    try:
        return ResourceUsage(milli_value(cpu), value(memory))
    except QuantityError:
        return None


def _usage(raw: Any) -> ResourceUsage | None:
    if not isinstance(raw, Mapping):
        return None
    resources = raw.get("resources")
    if type(resources) is dict and len(resources) == 2:
        cpu, memory = resources.get(RESOURCE_CPU), resources.get(RESOURCE_MEMORY)
        if type(cpu) is str and type(memory) is str:
            return _cpu_memory(cpu, memory)
    try:
        amounts = resource_list(raw.get("resources") if isinstance(raw.get("resources"), Mapping) else None)
    except QuantityError:
        return None
    return ResourceUsage(amounts.get(RESOURCE_CPU, 0), amounts.get(RESOURCE_MEMORY, 0))


def usage_of_node_metric(metric: Mapping[str, Any] | None, be_cpu: BECPU | None = None) -> Usage:
    """The latest usage a NodeMetric's status reports (with `be_cpu`, BE's windowed figures, which a
    NodeMetric does not hold): from the one reading of the object
    (`policies.apis.nodemetric.read_node_metric`, shared with the manager and the scheduler). A
    NodeMetric the reading refuses (a malformed quantity or shape) is read entry by entry instead:
    the koordlet skips what it cannot read rather than all of it."""
    if metric is None:
        return Usage(None, {}, {}, be_cpu)
    try:
        reading = read_node_metric(metric)
    except (ValueError, TypeError, AttributeError):
        return _tolerant_usage(metric, be_cpu)
    return _usage_of_reading(status_of(metric), reading, be_cpu)


def _usage_of_reading(status: Mapping[str, Any], reading: NodeMetricReading, be_cpu: BECPU | None) -> Usage:
    """The reading as the koordlet takes it (the same as `_tolerant_usage` of a readable status):
    the reading has the amounts, `status` says which entries the koordlet counts — a node usage
    and each pod's or host application's usage only when present as an object, a pod or host
    application only when named."""
    node_metric = status.get("nodeMetric") or {}
    node = None
    if reading.node_usage is not None and _is_map(node_metric.get("nodeUsage")):
        node = _resource_usage(reading.node_usage)
    pods: dict[str, ResourceUsage] = {}
    for item, pod in zip(status.get("podsMetric") or [], reading.pods, strict=True):
        if item.get("name"):
            pod_usage = item.get("podUsage")
            # `_is_map` and `_resource_usage` inlined: this runs per pod of every node every round
            if type(pod_usage) is dict or isinstance(pod_usage, Mapping):
                amounts = pod.usage
                pods[pod.key] = (
                    _ZERO
                    if amounts is None
                    else _cpu_memory_usage(amounts.get(RESOURCE_CPU, 0), amounts.get(RESOURCE_MEMORY, 0))
                )
    apps: dict[str, ResourceUsage] = {}
    if reading.host_applications:
        named = [item for item in status.get("hostApplicationMetric") or [] if isinstance(item, Mapping)]
        for item, app in zip(named, reading.host_applications, strict=True):
            if app.name and _is_map(item.get("usage")):
                apps[app.name] = _resource_usage(app.usage)
    return Usage(node, pods, apps, be_cpu)


def _is_map(value: object) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # `dict` first: the ABC check costs more


_ZERO = ResourceUsage()


def _resource_usage(amounts: Mapping[str, int]) -> ResourceUsage:
    return _cpu_memory_usage(amounts.get(RESOURCE_CPU, 0), amounts.get(RESOURCE_MEMORY, 0))


@lru_cache(maxsize=4096)
def _cpu_memory_usage(cpu: int, memory: int) -> ResourceUsage:
    """One shared value per pair (immutable; the amounts repeat as their texts do)."""
    return ResourceUsage(cpu, memory)


def _tolerant_usage(metric: Mapping[str, Any], be_cpu: BECPU | None = None) -> Usage:
    """A NodeMetric's usage entry by entry, skipping what is malformed."""
    status = status_of(metric)
    node = _usage((status.get("nodeMetric") or {}).get("nodeUsage"))
    pods: dict[str, ResourceUsage] = {}
    for item in status.get("podsMetric") or []:
        if isinstance(item, Mapping) and item.get("name"):
            found = _usage(item.get("podUsage"))
            if found is not None:
                pods[f"{item.get('namespace') or 'default'}/{item['name']}"] = found
    apps: dict[str, ResourceUsage] = {}
    for item in status.get("hostApplicationMetric") or []:
        if isinstance(item, Mapping) and item.get("name"):
            found = _usage(item.get("usage"))
            if found is not None:
                apps[str(item["name"])] = found
    return Usage(node, pods, apps, be_cpu)
