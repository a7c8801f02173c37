"""LoadAwareScheduling (Koordinator's `pkg/scheduler/plugins/loadaware/load_aware.go`): rejects
nodes whose estimated usage would pass a threshold and prefers the least loaded nodes, judged from
NodeMetric reports plus estimates of pods the report does not reflect yet.

Extension points: PreFilter (computes the pod's estimate once), Filter, Score (no
normalisation), Reserve/Unreserve (the assign cache). No PreFilter extensions, as Koordinator's
`PreFilterExtensions()` returns nil: Filter reads the NodeMetric and the assign cache, never the
trial node of a preemption, so a victim removed or reprieved changes nothing it sees (preemption
never makes room for load, and a node over its threshold is no candidate). It listens to the
cluster state for bound and deleted pods and for NodeMetric changes, as the Go plugin's informer
handlers do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policies.apis.constants import ANNOTATION_USAGE_THRESHOLDS, PriorityClass
from policies.apis.durations import parse_duration
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.framework.interfaces import PreFilterResult
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.scoring import least_requested
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status, error, unschedulable
from scheduler_plugins.scheduler.plugins.loadaware import estimator
from scheduler_plugins.scheduler.plugins.loadaware.args import LoadAwareSchedulingArgs, resource_vector
from scheduler_plugins.scheduler.plugins.loadaware.cache import AssignCache, Vec
from scheduler_plugins.scheduler.plugins.loadaware.vector import LoadColumns
from scheduler_plugins.scheduler.plugins.loadaware.view import Check, NodeView, threshold_checks
from scheduler_plugins.scheduler.podinfo import PodInfo

NAME = "LoadAwareScheduling"
_STATE_KEY = NAME + "/estimate"
REASON_EXPIRED = "node(s) nodeMetric expired"
_MISSING: Any = object()


@dataclass(frozen=True)
class Thresholds:
    """The thresholds that apply on one node: args, possibly replaced by the node annotation."""

    usage: Mapping[str, int]
    prod: Mapping[str, int]
    agg_usage: Mapping[str, int] = field(default_factory=dict)
    agg_type: str = ""
    agg_duration: float = 0.0

    @property
    def is_aggregated(self) -> bool:
        return bool(self.agg_usage) and bool(self.agg_type)


def _int_map(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): int(v) for k, v in raw.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def node_thresholds(base: Thresholds, annotation: str | None) -> Thresholds:
    """Apply `scheduling.koordinator.sh/usage-thresholds`; unparsable JSON is ignored and each part
    replaces the args' part only when non-empty."""
    if not annotation:
        return base
    try:
        raw = json.loads(annotation)
        usage, prod = _int_map(raw.get("usageThresholds")), _int_map(raw.get("prodUsageThresholds"))
        agg = raw.get("aggregatedUsage") or {}
        agg_usage, agg_type = _int_map(agg.get("usageThresholds")), agg.get("usageAggregationType") or ""
        agg_duration = parse_duration(agg.get("usageAggregatedDuration"))
    except (ValueError, TypeError, AttributeError):
        return base
    with_agg = bool(agg_usage) and bool(agg_type)
    return Thresholds(
        usage=usage or base.usage,
        prod=prod or base.prod,
        agg_usage=agg_usage if with_agg else base.agg_usage,
        agg_type=agg_type if with_agg else base.agg_type,
        agg_duration=agg_duration if with_agg else base.agg_duration,
    )


def load_aware_score(dominant_weight: int, weights: list[int], used: Vec, capacity: Vec) -> int:
    """NOTE: the dominant term is the minimum over every resource of the vector, weight 0 included."""
    node_score, weight_sum = 0, dominant_weight
    dominant = 100 if dominant_weight != 0 else 0
    for i, weight in enumerate(weights):
        score = least_requested(used[i], capacity[i])
        node_score += score * weight
        weight_sum += weight
        dominant = min(dominant, score)
    node_score += dominant * dominant_weight
    return 0 if weight_sum <= 0 else node_score // weight_sum


class LoadAwareScheduling:
    name = NAME

    def __init__(self, args: LoadAwareSchedulingArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.clock = handle.clock
        self.resources = resource_vector(args)
        self.weights = [args.resource_weights.get(r, 0) for r in self.resources]
        self.score_enabled = any(self.weights) or args.dominant_resource_weight != 0
        agg = args.aggregated
        self.thresholds = Thresholds(
            dict(args.usage_thresholds),
            dict(args.prod_usage_thresholds),
            dict(agg.usage_thresholds),
            agg.usage_aggregation_type,
            agg.usage_aggregated_duration,
        )
        self.cache = AssignCache(
            self.resources, self._estimate, self._windows, args.prod_usage_include_sys, handle.clock
        )
        self._node_thresholds: dict[str, tuple[str | None, Thresholds]] = {}
        self._node_allocatable: dict[str, tuple[Any, Vec]] = {}
        self._views: dict[str, NodeView] = {}
        self._last_estimate: tuple[CycleState, PodInfo, Vec] | None = None
        #: the optional vector path (numpy), held equal to `filter` and `score`
        self.vector = LoadColumns(self, handle.cluster)

    # --- estimation ------------------------------------------------------------------------------
    def _estimate(self, pod: PodInfo) -> Vec:
        factors = estimator.scaling_factors(
            pod, self.args.estimated_scaling_factors, self.args.allow_customize_estimation
        )
        return estimator.estimate_pod(pod, self.resources, factors)

    def _windows(self, pod: PodInfo) -> estimator.EstimationWindows:
        a = self.args
        return estimator.estimation_windows(
            pod,
            a.estimated_seconds_after_pod_scheduled,
            a.estimated_seconds_after_initialized,
            a.allow_customize_estimation,
        )

    def pod_estimate(self, state: CycleState, pod: PodInfo) -> Vec:
        last = self._last_estimate
        if last is not None and last[0] is state and last[1] is pod:
            return last[2]
        cached: Vec | None = state.read(_STATE_KEY)
        if cached is None:
            cached = self._estimate(pod)
            state.write(_STATE_KEY, cached)
        self._last_estimate = (state, pod, cached)  # holds the state, so its identity is not reused
        return cached

    def _thresholds_of(self, node: NodeInfo) -> Thresholds:
        annotation = node.annotations.get(ANNOTATION_USAGE_THRESHOLDS)
        cached = self._node_thresholds.get(node.name)
        if cached is None or cached[0] != annotation:
            cached = (annotation, node_thresholds(self.thresholds, annotation))
            self._node_thresholds[node.name] = cached
        return cached[1]

    def _allocatable(self, node: NodeInfo) -> Vec:
        """EstimateNode, cached per node object (allocatable does not change with pods)."""
        cached = self._node_allocatable.get(node.name)
        if cached is None or cached[0] is not node.node:
            cached = (node.node, estimator.estimate_node(node.node or {}, node.allocatable, self.resources))
            self._node_allocatable[node.name] = cached
        return cached[1]

    def _expired(self, update_time: float | None) -> bool:
        return update_time is None or self.clock() - update_time >= self.args.node_metric_expiration_seconds

    # --- extension points ------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status]:
        self.pod_estimate(state, pod)
        return None, SUCCESS

    def node_view(self, node: NodeInfo) -> NodeView:
        version = self.cache.versions.get(node.name, 0)
        view = self._views.get(node.name)
        if view is None or view.version != version or view.node is not node.node:
            view = self._views[node.name] = NodeView(
                version, node.node, self._allocatable(node), bool(self._thresholds_of(node).prod)
            )
        return view

    def filter_checks(self, node: NodeInfo, prod_pod: bool) -> list[Check] | None:
        """None when every applicable threshold is 0 (nothing to filter)."""
        profile = self._thresholds_of(node)
        aggregated = not prod_pod and profile.is_aggregated
        thresholds = profile.prod if prod_pod else (profile.agg_usage if aggregated else profile.usage)
        if not any(thresholds.values()):
            return None
        agg_type, agg_duration = (profile.agg_type, profile.agg_duration) if aggregated else ("", 0.0)
        usage = self.cache.estimated_usage(node.name, prod_pod, agg_type, agg_duration)
        return threshold_checks(self.resources, thresholds, self._allocatable(node), usage, aggregated)

    def kept_filter_checks(self, view: NodeView, node: NodeInfo, prod_pod: bool) -> list[Check] | None:
        """`filter_checks`, kept in the node's view (per version of its load): Filter, the reasons
        asked of it for rejected nodes and the batch table's refresh read the one value."""
        checks: list[Check] | None = view.filter.get(prod_pod, _MISSING)
        if checks is _MISSING:
            checks = view.filter[prod_pod] = self.filter_checks(node, prod_pod)
        return checks

    def kept_score_usage(self, view: NodeView, node: NodeInfo, prod_pod: bool) -> Vec | None:
        """`score_usage`, kept in the node's view as `kept_filter_checks` is."""
        usage: Vec | None = view.score.get(prod_pod, _MISSING)
        if usage is _MISSING:
            usage = view.score[prod_pod] = self.score_usage(node, prod_pod)
        return usage

    def score_usage(self, node: NodeInfo, prod_pod: bool) -> Vec | None:
        agg = self.args.aggregated
        agg_type = agg.score_aggregation_type if not prod_pod else ""
        return self.cache.estimated_usage(
            node.name, prod_pod, agg_type, agg.score_aggregated_duration if agg_type else 0.0
        )

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if node.node is None:
            return error("node not found")
        if pod.is_daemonset_pod:
            return SUCCESS
        load = self.cache.load(node.name)
        if load is None:
            return SUCCESS  # nodes without koordlet are never rejected
        view = self.node_view(node)
        prod_pod = view.has_prod_thresholds and pod.priority_class == PriorityClass.PROD
        checks = self.kept_filter_checks(view, node, prod_pod)
        if checks is None:
            return SUCCESS
        if self.args.filter_expired_node_metrics and self._expired(load.update_time):
            return SUCCESS if self.args.enable_schedule_when_node_metrics_expired else unschedulable(REASON_EXPIRED)
        if not load.has_node_metric:
            return SUCCESS
        estimate = self.pod_estimate(state, pod)
        for i, limit, status in checks:
            if estimate[i] >= limit:
                return status
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        if not self.score_enabled:
            return 0, SUCCESS
        if node.node is None:
            return 0, error("node not found")
        load = self.cache.load(node.name)
        if load is None or self._expired(load.update_time) or not load.has_node_metric:
            return 0, SUCCESS
        prod_pod = self.args.score_according_prod_usage and pod.priority_class == PriorityClass.PROD
        view = self.node_view(node)
        usage = self.kept_score_usage(view, node, prod_pod)
        estimate = self.pod_estimate(state, pod)
        used = estimate if usage is None else [u + e for u, e in zip(usage, estimate, strict=False)]
        return load_aware_score(self.args.dominant_resource_weight, self.weights, used, view.allocatable), SUCCESS

    def warm_up(self) -> None:
        self.vector.refresh()

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self.cache.assign(node_name, pod, self.pod_estimate(state, pod))
        self.handle.cluster.touch(node_name)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.cache.unassign(node_name, pod.key)
        self.handle.cluster.touch(node_name)

    # --- cluster events --------------------------------------------------------------------------
    def on_pod_assigned(self, pod: PodInfo, node_name: str) -> None:
        self.cache.assign(node_name, pod)
        self.handle.cluster.touch(node_name)

    def on_pod_deleted(self, pod: PodInfo, node_name: str) -> None:
        self.cache.unassign(node_name, pod.key)
        self.handle.cluster.touch(node_name)

    def on_node_metric(self, node_name: str, metric: dict[str, Any] | None) -> None:
        self.cache.set_metric(node_name, metric)


def new(args: LoadAwareSchedulingArgs, handle: Handle) -> LoadAwareScheduling:
    return LoadAwareScheduling(args, handle)
