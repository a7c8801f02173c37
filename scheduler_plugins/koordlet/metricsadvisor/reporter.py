"""The NodeMetric reporter: `status` in the schema LoadAware reads (nodeMetric.nodeUsage and
aggregatedNodeUsages with durations, podsMetric, hostApplicationMetric, updateTime), on the
intervals of the NodeMetric's `spec.metricCollectPolicy`.

Usage is averaged over `aggregateDurationSeconds` (Koordinator's default 300 s); each aggregated
entry holds the p50/p90/p95/p99 of the node's samples over its duration.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from policies.apis.constants import RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.durations import go_duration, parse_duration
from policies.apis.kinds import NODE_METRIC_KIND, kind_named
from policies.apis.nodemetric import (
    AggregatedUsage,
    Amounts,
    HostApplicationMetric,
    NodeMetricReading,
    PodMetric,
    render_status,
)
from policies.apis.objects import metadata_of, spec_of
from policies.apis.qos import defaulted_priority_class, defaulted_qos_class
from scheduler_plugins.clock import format_time
from scheduler_plugins.koordlet.metricsadvisor.cache import MetricCache
from scheduler_plugins.koordlet.metricsadvisor.collector import NODE_CPU, NODE_MEMORY
from scheduler_plugins.koordlet.states import NodeState

log = logging.getLogger("colocate.koordlet.reporter")

PERCENTILES: tuple[tuple[str, float], ...] = (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99))
DEFAULT_DURATIONS = (300.0, 600.0, 1800.0)


@dataclass(frozen=True)
class CollectPolicy:
    aggregate_seconds: float = 300.0
    report_interval: float = 60.0
    durations: tuple[float, ...] = DEFAULT_DURATIONS

    @classmethod
    def of(cls, metric: Mapping[str, Any] | None) -> CollectPolicy:
        policy = spec_of(metric or {}).get("metricCollectPolicy") or {}
        durations: Sequence[Any] = (policy.get("nodeAggregatePolicy") or {}).get("durations") or ()
        parsed = []
        for text in durations:
            try:
                # to the nanosecond, as Go holds a `metav1.Duration`: the window is then one
                # `go_duration` writes exactly (`render_status` refuses one it cannot)
                parsed.append(parse_duration(go_duration(parse_duration(text))))
            except ValueError:
                continue
        return cls(
            float(policy.get("aggregateDurationSeconds") or 300),
            float(policy.get("reportIntervalSeconds") or 60),
            tuple(parsed) or DEFAULT_DURATIONS,
        )


def _amounts(cpu: float | None, memory: float | None) -> Amounts:
    """Millicores and bytes as the reading's scalars: negatives clamp to 0, an unmeasured one is left out."""
    found: Amounts = {}
    if cpu is not None:
        found[RESOURCE_CPU] = max(0, int(cpu))
    if memory is not None:
        found[RESOURCE_MEMORY] = max(0, int(memory))
    return found


def node_metric_reading(
    cache: MetricCache, state: NodeState, now: float, wall: float, policy: CollectPolicy
) -> NodeMetricReading:
    """What the koordlet reports: `now` is the cache's clock, `wall` the updateTime. A pod or host
    application without a sample in the window is left out."""
    window = policy.aggregate_seconds
    aggregated = []
    for duration in policy.durations:
        cpu = cache.percentiles(NODE_CPU, now, duration, [p for _, p in PERCENTILES])
        memory = cache.percentiles(NODE_MEMORY, now, duration, [p for _, p in PERCENTILES])
        if cpu is None and memory is None:
            continue
        usage = {name: _amounts((cpu or {}).get(p), (memory or {}).get(p)) for name, p in PERCENTILES}
        aggregated.append(AggregatedUsage(duration, usage))
    pods = []
    for pod in state.pods:
        metadata = metadata_of(pod)
        uid = str(metadata.get("uid") or "")
        pod_cpu = cache.average(f"pod/{uid}/cpu", now, window)
        pod_memory = cache.average(f"pod/{uid}/memory", now, window)
        if pod_cpu is None and pod_memory is None:
            continue
        qos = defaulted_qos_class(pod)
        key = f"{metadata.get('namespace') or 'default'}/{metadata.get('name')}"
        priority = str(defaulted_priority_class(pod, qos))
        pods.append(PodMetric(key, priority, _amounts(pod_cpu, pod_memory), str(qos)))
    apps = []
    for app in state.node_slo.host_applications if state.node_slo else ():
        app_cpu = cache.average(f"hostapp/{app.name}/cpu", now, window)
        app_memory = cache.average(f"hostapp/{app.name}/memory", now, window)
        if app_cpu is None and app_memory is None:
            continue
        apps.append(HostApplicationMetric(app.name, app.priority, app.qos, _amounts(app_cpu, app_memory)))
    return NodeMetricReading(
        update_time=format_time(wall),
        report_interval_seconds=int(policy.report_interval),
        has_node_metric=True,
        node_usage=_amounts(cache.average(NODE_CPU, now, window), cache.average(NODE_MEMORY, now, window)),
        system_usage={},
        aggregated=tuple(aggregated),
        pods=tuple(pods),
        host_applications=tuple(apps),
    )


def node_metric_status(
    cache: MetricCache, state: NodeState, now: float, wall: float, policy: CollectPolicy
) -> dict[str, Any]:
    """The status to write (`render_status` of `node_metric_reading`). `write_status` merge-patches
    it, where a key left out keeps the stored value: an empty list of host applications is written
    as one, so that the last application's entry goes when it does."""
    status = render_status(node_metric_reading(cache, state, now, wall, policy))
    status.setdefault("hostApplicationMetric", [])
    return status


def node_metric_path(name: str) -> str:
    return f"{kind_named(NODE_METRIC_KIND).collection_path()}/{quote(name, safe='')}"


def write_status(api: Any, name: str, status: Mapping[str, Any]) -> bool:
    """Merge-patch `status` into NodeMetric `name` (created with an empty spec if missing);
    blocking, best effort: a failure is logged and the next report tries again."""
    from colocate.cluster.rest import ApiError, request

    kind = kind_named(NODE_METRIC_KIND)
    merge = "application/merge-patch+json"
    try:
        code, _ = request(api, "PATCH", node_metric_path(name) + "/status", {"status": status}, merge)
        if code == 404:
            body = {"apiVersion": kind.api_version, "kind": NODE_METRIC_KIND, "metadata": {"name": name}, "spec": {}}
            request(api, "POST", kind.collection_path(), body)
            code, _ = request(api, "PATCH", node_metric_path(name) + "/status", {"status": status}, merge)
    except ApiError as exc:
        log.warning("NodeMetric %s not reported: %s", name, exc)
        return False
    if not 200 <= code < 300:
        log.warning("NodeMetric %s not reported: HTTP %s", name, code)
        return False
    return True
