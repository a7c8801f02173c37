"""Tiny builders for scheduler tests: `make_pod(qos="BE", requests={"cpu": "1"})`."""
from __future__ import annotations

import json
from typing import Any

from scheduler_plugins.clock import fixed_clock, parse_time
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import parse_config
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.registry import in_tree_registry
from scheduler_plugins.scheduler.wiring import build_framework

NOW = "2024-05-01T10:01:00Z"
METRIC_TIME = "2024-05-01T10:00:00Z"


def make_pod(name: str = "p", namespace: str = "default", *, qos: str | None = None, priority: int | None = None,
             priority_class: str | None = None, requests: dict | None = None, limits: dict | None = None,
             node: str = "", labels: dict | None = None, annotations: dict | None = None,
             scheduled_at: str | None = None, initialized_at: str | None = None, owner_kind: str | None = None,
             created: str | None = None, phase: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {}),
                            "annotations": dict(annotations or {})}
    if qos:
        meta["labels"]["koordinator.sh/qosClass"] = qos
    if priority_class:
        meta["labels"]["koordinator.sh/priority-class"] = priority_class
    if owner_kind:
        meta["ownerReferences"] = [{"kind": owner_kind, "name": "owner"}]
    if created:
        meta["creationTimestamp"] = created
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": resources}]}
    if priority is not None:
        spec["priority"] = priority
    if node:
        spec["nodeName"] = node
    status: dict[str, Any] = {"conditions": []}
    if scheduled_at:
        status["conditions"].append({"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled_at})
    if initialized_at:
        status["conditions"].append({"type": "Initialized", "status": "True", "lastTransitionTime": initialized_at})
    if phase:
        status["phase"] = phase
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def make_node(name: str = "node-1", *, cpu: str = "32", memory: str = "128Gi", extra: dict | None = None,
              annotations: dict | None = None, raw_allocatable: dict | None = None) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", **(extra or {})}
    notes = dict(annotations or {})
    if raw_allocatable:
        notes["node.koordinator.sh/raw-allocatable"] = json.dumps(raw_allocatable)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": notes},
            "status": {"allocatable": allocatable}}


def make_metric(name: str = "node-1", *, cpu: str | None = "0", memory: str | None = "0",
                update_time: str | None = METRIC_TIME, pods: list[dict] | None = None,
                aggregated: list[dict] | None = None, system: dict | None = None,
                report_interval: int | None = 60, no_node_metric: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if update_time:
        status["updateTime"] = update_time
    if not no_node_metric:
        usage = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
        node_metric: dict[str, Any] = {"nodeUsage": {"resources": usage} if usage else {}}
        if aggregated:
            node_metric["aggregatedNodeUsages"] = aggregated
        if system:
            node_metric["systemUsage"] = {"resources": system}
        status["nodeMetric"] = node_metric
    if pods:
        status["podsMetric"] = pods
    spec = {"metricCollectPolicy": {"reportIntervalSeconds": report_interval}} if report_interval else {}
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name},
            "spec": spec, "status": status}


def pod_metric(name: str, namespace: str = "default", *, cpu: str = "0", memory: str = "0",
               priority: str = "koord-prod") -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "priority": priority,
            "podUsage": {"resources": {"cpu": cpu, "memory": memory}}}


def make_config(plugin_config: dict[str, dict] | None = None, plugins: dict | None = None, **top: Any):
    profile: dict[str, Any] = {"schedulerName": "koord-scheduler"}
    if plugins:
        profile["plugins"] = plugins
    if plugin_config:
        profile["pluginConfig"] = [{"name": n, "args": a} for n, a in plugin_config.items()]
    return parse_config({"profiles": [profile], **top}, in_tree_registry())


def make_framework(objects: list[dict], config=None, now: str = NOW):
    cluster = ClusterState.from_objects(objects)
    fwk = build_framework(config or make_config(), in_tree_registry(), cluster, fixed_clock(parse_time(now)))
    return fwk, cluster


SCORE_ONLY = ("NodeResourcesFitPlus", "ScarceResourceAvoidance", "NetworkTraffic")


def plugin_of(objects: list[dict], name: str, args: dict | None = None, now: str = NOW):
    """The named plugin built inside a framework over `objects`, plus the cluster."""
    plugins = None
    if name in SCORE_ONLY:
        plugins = {"score": {"enabled": [{"name": name}]}}
        if name != "NetworkTraffic":
            plugins["preScore"] = {"enabled": [{"name": name}]}
    config = make_config({name: args} if args is not None else None, plugins)
    fwk, cluster = make_framework(objects, config, now)
    return fwk.plugins[name], cluster


def filter_node(plugin, cluster: ClusterState, pod: dict, node: str = "node-1"):
    state = CycleState()
    return plugin.filter(state, PodInfo(pod), cluster.nodes[node])


def score_node(plugin, cluster: ClusterState, pod: dict, node: str = "node-1") -> int:
    state = CycleState()
    info = PodInfo(pod)
    if hasattr(plugin, "pre_score"):
        plugin.pre_score(state, info, [cluster.nodes[node]])
    value, status = plugin.score(state, info, cluster.nodes[node])
    assert status.is_success, status
    return value
