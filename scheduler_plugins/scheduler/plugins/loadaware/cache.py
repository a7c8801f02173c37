"""The per-node assign cache and the usage aggregates rebuilt from each NodeMetric
(`pkg/scheduler/plugins/loadaware/pod_assign_cache.go`).

`AssignCache` remembers every pod bound or assumed on a node with its estimate, and for nodes
that have a NodeMetric keeps `NodeLoad`: the reported usage plus the deltas of pods the metric
does not reflect yet. `deletePod` subtracts exactly what `addPod` added (contributions are stored
per pod), so the aggregates never drift.

A NodeMetric is read when it is first needed, not when it arrives: koordlets report every 60 s per
node (and `colocate whatif` writes every node's each step), while a NodeLoad is read only when a
pod is filtered or scored. The cache holds the NodeMetric object it was given and builds the
node's `NodeLoad` from it on the first read (`load`), keyed on that very object: the store
replaces a NodeMetric when it changes, never edits it, so a NodeLoad built from the object held is
the one the eager rebuild would have made (its pods' contributions are sums, whatever order they
are added in), and pods assigned or removed afterwards update it as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policies.apis.constants import PriorityClass
from policies.apis.nodemetric import read_node_metric
from policies.apis.timestamps import parse_time
from scheduler_plugins.clock import Clock
from scheduler_plugins.scheduler.plugins.loadaware.estimator import EstimationWindows
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.reservations import is_reserve_pod

Vec = list[int]
log = logging.getLogger(__name__)


@dataclass
class AssignedPod:
    pod: PodInfo
    timestamp: float
    estimated: Vec | None
    deadline: float | None


@dataclass
class NodeLoad:
    update_time: float | None
    report_interval: float
    has_node_metric: bool
    node_usage: Vec | None
    pod_usage: dict[str, Vec]
    prod_pods: set[str]
    agg_usage: dict[tuple[str, float], Vec]
    prod_usage: Vec
    node_delta: Vec
    prod_delta: Vec
    node_estimated: Vec
    contributions: dict[str, tuple[Vec, Vec, Vec, Vec]] = field(default_factory=dict)


def _add(a: Vec, b: Sequence[int]) -> None:
    for i, v in enumerate(b):
        a[i] += v


def _sub(a: Vec, b: Sequence[int]) -> None:
    for i, v in enumerate(b):
        a[i] -= v


def _positive_delta(estimated: Sequence[int], usage: Sequence[int] | None) -> Vec:
    if usage is None:
        return [max(0, e) for e in estimated]
    return [max(0, e - u) for e, u in zip(estimated, usage, strict=False)]


class AssignCache:
    def __init__(
        self,
        resources: Sequence[str],
        estimate: Callable[[PodInfo], Vec],
        windows: Callable[[PodInfo], EstimationWindows],
        prod_usage_include_sys: bool,
        clock: Clock,
    ) -> None:
        self.resources = tuple(resources)
        self._estimate = estimate
        self._windows = windows
        self._include_sys = prod_usage_include_sys
        self._clock = clock
        self.pods: dict[str, dict[str, AssignedPod]] = {}
        #: each node's NodeMetric as last given (read on demand: `load`)
        self._metrics: dict[str, Mapping[str, Any]] = {}
        #: each node's NodeLoad with the NodeMetric object it was built from (None: unreadable)
        self._loads: dict[str, tuple[Mapping[str, Any], NodeLoad | None]] = {}
        #: bumped on every change to a node's pods or metric, so derived views know to rebuild
        self.versions: dict[str, int] = {}

    def _touch(self, node_name: str) -> None:
        self.versions[node_name] = self.versions.get(node_name, 0) + 1

    def _vector(self, amounts: Mapping[str, int] | None) -> Vec:
        amounts = amounts or {}
        return [amounts.get(name, 0) for name in self.resources]

    def _zero(self) -> Vec:
        return [0] * len(self.resources)

    # --- pods ------------------------------------------------------------------------------------
    def assign(self, node_name: str, pod: PodInfo, estimated: Vec | None = None) -> None:
        """Add (or refresh) a pod on a node; terminated pods and reserve pods (a Reservation being
        scheduled: what it holds is not load a workload puts on the node) are not cached (as
        `pod_assign_cache.go`)."""
        self.unassign(node_name, pod.key)
        self._touch(node_name)
        if pod.is_terminated or is_reserve_pod(pod):
            return
        now = self._clock()
        timestamp = parse_time(pod.condition_time("PodScheduled")) or now
        windows = self._windows(pod)
        deadline = None
        initialized = parse_time(pod.condition_time("Initialized"))
        if windows.after_initialized > 0 and initialized is not None:
            deadline = initialized + windows.after_initialized
        elif windows.after_pod_scheduled > 0:
            deadline = timestamp + windows.after_pod_scheduled
        if estimated is None:  # else the caller's estimate of this very pod (Reserve: the cycle's)
            estimated = self._estimate(pod)
        entry = AssignedPod(pod, timestamp, estimated if any(estimated) else None, deadline)
        self.pods.setdefault(node_name, {})[pod.key] = entry
        load = self._built(node_name)
        if load is not None:  # else the pod is counted when the NodeLoad is built
            self._add_pod(load, entry)

    def unassign(self, node_name: str, key: str) -> None:
        entry = self.pods.get(node_name, {}).pop(key, None)
        if entry is not None:
            self._touch(node_name)
        load = self._built(node_name)
        if entry is not None and load is not None:
            node_delta, prod_delta, prod_usage, estimated = load.contributions.pop(key)
            _sub(load.node_delta, node_delta)
            _sub(load.prod_delta, prod_delta)
            _sub(load.prod_usage, prod_usage)
            _sub(load.node_estimated, estimated)

    def _add_pod(self, load: NodeLoad, entry: AssignedPod) -> None:
        key = entry.pod.key
        usage = load.pod_usage.get(key)
        prod = entry.pod.priority_class == PriorityClass.PROD
        active_prod = prod and key in load.prod_pods
        zero = self._zero()
        prod_usage = usage if (active_prod and usage is not None) else zero
        node_delta, prod_delta, estimated = zero, zero, zero
        e = entry.estimated
        if e is not None:
            should = (
                usage is None
                or load.update_time is None
                or load.update_time - load.report_interval < entry.timestamp
                or (entry.deadline is not None and entry.deadline > load.update_time)
            )
            if should:
                node_delta = _positive_delta(e, usage)
            estimated = e
            if prod:
                if not active_prod and usage is not None:
                    usage, should = None, True
                if should:
                    prod_delta = _positive_delta(e, usage)
        if prod_usage is not zero:  # (adding the zero vector changes nothing)
            _add(load.prod_usage, prod_usage)
        if node_delta is not zero:
            _add(load.node_delta, node_delta)
        if prod_delta is not zero:
            _add(load.prod_delta, prod_delta)
        if estimated is not zero:
            _add(load.node_estimated, estimated)
        load.contributions[key] = (node_delta, prod_delta, prod_usage, estimated)

    # --- NodeMetrics -----------------------------------------------------------------------------
    def set_metric(self, node_name: str, metric: Mapping[str, Any] | None) -> None:
        """A (new) NodeMetric for the node, read when the node's load is first asked for (`load`);
        None drops it."""
        self._touch(node_name)
        self._loads.pop(node_name, None)
        if metric is None:
            self._metrics.pop(node_name, None)
        else:
            self._metrics[node_name] = metric

    def load(self, node_name: str) -> NodeLoad | None:
        """The node's NodeLoad (None without a NodeMetric), built from the NodeMetric held on the
        first read since it was given. A NodeMetric that cannot be read (a malformed quantity or
        shape) counts as none, as in Koordinator, whose informer cannot decode such an object
        (`load_aware.go`: a node without a NodeMetric is not filtered and scores 0)."""
        metric = self._metrics.get(node_name)
        if metric is None:
            return None
        cached = self._loads.get(node_name)
        if cached is not None and cached[0] is metric:
            return cached[1]
        load: NodeLoad | None
        try:
            load = self._build(node_name, metric)
        except (ValueError, TypeError, AttributeError) as exc:
            log.warning(
                "NodeMetric %s cannot be read (%s): its node counts as one without a NodeMetric", node_name, exc
            )
            load = None
        self._loads[node_name] = (metric, load)
        return load

    def _built(self, node_name: str) -> NodeLoad | None:
        """The node's NodeLoad if it is built from the NodeMetric held (pods assigned or removed
        update it; one not built yet counts them when it is)."""
        cached = self._loads.get(node_name)
        if cached is not None and cached[0] is self._metrics.get(node_name):
            return cached[1]
        return None

    def _build(self, node_name: str, metric: Mapping[str, Any]) -> NodeLoad:
        """The node's aggregates from scratch from its NodeMetric and the pods assigned to it."""
        reading = read_node_metric(metric)
        pod_usage = {pod.key: self._vector(pod.usage) for pod in reading.pods if pod.usage is not None}
        prod_pods = {pod.key for pod in reading.pods if pod.priority == PriorityClass.PROD}
        agg_usage: dict[tuple[str, float], Vec] = {}
        longest: dict[str, float] = {}
        for aggregated in reading.aggregated:
            for kind, usage in aggregated.usage.items():
                agg_usage[(kind, aggregated.duration)] = self._vector(usage)
                if aggregated.duration >= longest.get(kind, -1.0):
                    longest[kind] = aggregated.duration
                    agg_usage[(kind, 0.0)] = agg_usage[(kind, aggregated.duration)]
        load = NodeLoad(
            update_time=parse_time(reading.update_time),
            report_interval=float(reading.report_interval_seconds),
            has_node_metric=reading.has_node_metric,
            node_usage=self._vector(reading.node_usage) if reading.node_usage is not None else None,
            pod_usage=pod_usage,
            prod_pods=prod_pods,
            agg_usage=agg_usage,
            prod_usage=self._vector(reading.system_usage) if self._include_sys else self._zero(),
            node_delta=self._zero(),
            prod_delta=self._zero(),
            node_estimated=self._zero(),
        )
        for entry in self.pods.get(node_name, {}).values():
            self._add_pod(load, entry)
        return load

    def estimated_usage(self, node_name: str, prod_pod: bool, agg_type: str, agg_duration: float) -> Vec | None:
        """`pod_assign_cache.go`: usage of the node including pods the metric does not reflect yet;
        None when the node has no NodeMetric."""
        load = self.load(node_name)
        if load is None:
            return None
        if prod_pod:
            return [u + d for u, d in zip(load.prod_usage, load.prod_delta, strict=False)]
        base = load.node_usage
        if agg_type:
            base = load.agg_usage.get((agg_type, agg_duration))
            if base is None and agg_duration == 0:
                base = load.node_usage
        if base is None:
            return list(load.node_estimated)
        return [u + d for u, d in zip(base, load.node_delta, strict=False)]
