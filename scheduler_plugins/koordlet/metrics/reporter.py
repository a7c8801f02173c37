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

from policies.durations import parse_duration
from policies.kinds import NODE_METRIC_KIND, kind_named
from policies.objects import metadata_of
from policies.qos import defaulted_priority_class, defaulted_qos_class
from scheduler_plugins.clock import format_time
from scheduler_plugins.koordlet.metrics.cache import MetricCache
from scheduler_plugins.koordlet.metrics.collector import NODE_CPU, NODE_MEMORY
from scheduler_plugins.koordlet.states import NodeState

log = logging.getLogger("colocate.koordlet.reporter")

PERCENTILES: tuple[tuple[str, float], ...] = (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99))
DEFAULT_DURATIONS = (300.0, 600.0, 1800.0)


def go_duration(seconds: float) -> str:
    """Seconds as Go's `time.Duration.String()` for whole seconds: 300 -> "5m0s"."""
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


@dataclass(frozen=True)
class CollectPolicy:
    aggregate_seconds: float = 300.0
    report_interval: float = 60.0
    durations: tuple[float, ...] = DEFAULT_DURATIONS

    @classmethod
    def of(cls, metric: Mapping[str, Any] | None) -> CollectPolicy:
        policy = ((metric or {}).get("spec") or {}).get("metricCollectPolicy") or {}
        durations: Sequence[Any] = (policy.get("nodeAggregatePolicy") or {}).get("durations") or ()
        parsed = []
        for text in durations:
            try:
                parsed.append(parse_duration(text))
            except ValueError:
                continue
        return cls(
            float(policy.get("aggregateDurationSeconds") or 300),
            float(policy.get("reportIntervalSeconds") or 60),
            tuple(parsed) or DEFAULT_DURATIONS,
        )


def _resources(cpu: float | None, memory: float | None) -> dict[str, Any]:
    found: dict[str, str] = {}
    if cpu is not None:
        found["cpu"] = f"{max(0, int(cpu))}m"
    if memory is not None:
        found["memory"] = str(max(0, int(memory)))
    return {"resources": found}


def node_metric_status(
    cache: MetricCache, state: NodeState, now: float, wall: float, policy: CollectPolicy
) -> dict[str, Any]:
    """The status to write; `now` is the cache's clock, `wall` the updateTime."""
    window = policy.aggregate_seconds
    node_metric: dict[str, Any] = {
        "nodeUsage": _resources(cache.average(NODE_CPU, now, window), cache.average(NODE_MEMORY, now, window)),
    }
    aggregated = []
    for duration in policy.durations:
        cpu = cache.percentiles(NODE_CPU, now, duration, [p for _, p in PERCENTILES])
        memory = cache.percentiles(NODE_MEMORY, now, duration, [p for _, p in PERCENTILES])
        if cpu is None and memory is None:
            continue
        aggregated.append(
            {
                "usage": {name: _resources((cpu or {}).get(p), (memory or {}).get(p)) for name, p in PERCENTILES},
                "duration": go_duration(duration),
            }
        )
    if aggregated:
        node_metric["aggregatedNodeUsages"] = aggregated
    pods = []
    for pod in state.pods:
        metadata = metadata_of(pod)
        uid = str(metadata.get("uid") or "")
        pod_cpu = cache.average(f"pod/{uid}/cpu", now, window)
        pod_memory = cache.average(f"pod/{uid}/memory", now, window)
        if pod_cpu is None and pod_memory is None:
            continue
        qos = defaulted_qos_class(pod)
        pods.append(
            {
                "namespace": str(metadata.get("namespace") or "default"),
                "name": str(metadata.get("name")),
                "priority": str(defaulted_priority_class(pod, qos)),
                "qos": str(qos),
                "podUsage": _resources(pod_cpu, pod_memory),
            }
        )
    apps = []
    for app in state.node_slo.host_applications if state.node_slo else ():
        app_cpu = cache.average(f"hostapp/{app.name}/cpu", now, window)
        app_memory = cache.average(f"hostapp/{app.name}/memory", now, window)
        if app_cpu is None and app_memory is None:
            continue
        apps.append(
            {"name": app.name, "usage": _resources(app_cpu, app_memory), "priority": app.priority, "qos": app.qos}
        )
    return {
        "nodeMetric": node_metric,
        "podsMetric": pods,
        "hostApplicationMetric": apps,
        "updateTime": format_time(wall),
    }


def node_metric_path(name: str) -> str:
    return f"{kind_named(NODE_METRIC_KIND).collection_path()}/{quote(name, safe='')}"


def write_status(api: Any, name: str, status: Mapping[str, Any]) -> bool:
    """Merge-patch `status` into NodeMetric `name` (created with an empty spec if missing);
    blocking, best effort: a failure is logged and the next report tries again."""
    from cluster.rest import ApiError, request

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
