"""LoadAwareScheduling's vector path (`LoadColumns`, the plugin's `vector`): its Filter and Score
for many nodes at once. The per-node inputs of Filter and Score are kept as numpy rows,
refreshed from the plugin's own per-node helpers (read through `NodeInputs`, the plugin's public
face) whenever a node changes, so the vector answers are the per-node answers by construction
(and tests/scheduler_plugins/scheduler/test_vector_paths.py holds them equal).

Per-resource tables are stored resource-major (`[resource, node]`): a window of nodes is then a
view of each resource's row, and a reduction over resources is an elementwise operation on whole
rows instead of a reduction along a short axis (which numpy does slowly)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from policies.apis.constants import PriorityClass
from scheduler_plugins.clock import Clock
from scheduler_plugins.scheduler.framework.columns import DirtyRows, grow
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.interfaces import ClusterView, NodeIndex
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.plugins.loadaware.args import LoadAwareSchedulingArgs
from scheduler_plugins.scheduler.plugins.loadaware.cache import AssignCache, Vec
from scheduler_plugins.scheduler.plugins.loadaware.view import Check, NodeView
from scheduler_plugins.scheduler.podinfo import PodInfo

NO_LIMIT = np.iinfo(np.int64).max
VARIANTS = (False, True)  # is the pod judged as a prod pod on this node?


def grow_columns(table: np.ndarray, size: int, fill: object = 0) -> np.ndarray:
    """A resource-major table extended to `size` node columns with `fill`."""
    if table.shape[1] >= size:
        return table
    extra = np.full((table.shape[0], size - table.shape[1]), fill, dtype=table.dtype)
    return np.concatenate([table, extra], axis=1)


class NodeInputs(Protocol):
    """What the columns read from LoadAwareScheduling: its settings and the per-node helpers its
    Filter and Score use, so a column holds exactly what the per-node path computes."""

    @property
    def args(self) -> LoadAwareSchedulingArgs: ...

    @property
    def resources(self) -> Sequence[str]: ...

    @property
    def weights(self) -> Sequence[int]: ...

    @property
    def cache(self) -> AssignCache: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def score_enabled(self) -> bool: ...

    def pod_estimate(self, state: CycleState, pod: PodInfo) -> Vec:
        """The pod's estimated usage, once per cycle."""
        ...

    def node_view(self, node: NodeInfo) -> NodeView:
        """The node's allocatable and threshold profile, cached per version of its load."""
        ...

    def kept_filter_checks(self, view: NodeView, node: NodeInfo, prod_pod: bool) -> list[Check] | None:
        """Filter's checks on the node, kept in its view; None when no threshold applies."""
        ...

    def kept_score_usage(self, view: NodeView, node: NodeInfo, prod_pod: bool) -> Vec | None:
        """The usage Score adds the pod's estimate to, kept in the node's view; None when the node
        reports none."""
        ...


class LoadColumns:
    """`VectorFilter` and `VectorScore` of one LoadAwareScheduling plugin."""

    def __init__(self, plugin: NodeInputs, cluster: ClusterView) -> None:
        self.plugin = plugin
        self.cluster = cluster
        self.rows = DirtyRows(self.cluster)
        width = len(plugin.resources)
        self.width = width
        self.valid = np.zeros(0, dtype=bool)
        self.has_load = np.zeros(0, dtype=bool)
        self.has_node_metric = np.zeros(0, dtype=bool)
        self.update_time = np.zeros(0, dtype=np.float64)
        self.has_prod = np.zeros(0, dtype=bool)
        self.allocatable = np.zeros((width, 0), dtype=np.int64)
        self.all_zero = {v: np.zeros(0, dtype=bool) for v in VARIANTS}
        self.limits = {v: np.zeros((width, 0), dtype=np.int64) for v in VARIANTS}
        self.has_usage = {v: np.zeros(0, dtype=bool) for v in VARIANTS}
        self.usage = {v: np.zeros((width, 0), dtype=np.int64) for v in VARIANTS}

    def _grow(self, size: int) -> None:
        if len(self.valid) >= size:
            return
        for name in ("valid", "has_load", "has_node_metric", "update_time", "has_prod"):
            setattr(self, name, grow(getattr(self, name), size))
        self.allocatable = grow_columns(self.allocatable, size)
        for flags in (self.all_zero, self.has_usage):
            for v in VARIANTS:
                flags[v] = grow(flags[v], size)
        for table in (self.limits, self.usage):
            for v in VARIANTS:
                table[v] = grow_columns(table[v], size)

    def refresh(self) -> None:
        dirty = self.rows.take().tolist()
        if not dirty:
            return
        self._grow(self.rows.size())
        plugin = self.plugin
        for i in dirty:
            node = self.cluster.by_index[i]
            self.valid[i] = node.node is not None
            if node.node is None:
                continue
            load = plugin.cache.load(node.name)
            self.has_load[i] = load is not None
            self.has_node_metric[i] = load is not None and load.has_node_metric
            self.update_time[i] = np.nan if load is None or load.update_time is None else load.update_time
            view = plugin.node_view(node)
            self.has_prod[i] = view.has_prod_thresholds
            self.allocatable[:, i] = view.allocatable
            for v in VARIANTS:
                # the prod variant is read only where it applies: Filter on nodes with prod
                # thresholds, Score when scoreAccordingProdUsage is set. They are the values the
                # per-node Filter and Score read (kept in the node's view: the reasons of rejected
                # nodes are asked of Filter)
                checks = plugin.kept_filter_checks(view, node, v) if not v or view.has_prod_thresholds else None
                self.all_zero[v][i] = checks is None
                limits = self.limits[v]
                limits[:, i] = NO_LIMIT
                for r, limit, _ in checks or ():
                    limits[r, i] = limit
                usage = (
                    plugin.kept_score_usage(view, node, v) if not v or plugin.args.score_according_prod_usage else None
                )
                self.has_usage[v][i] = usage is not None
                self.usage[v][:, i] = usage if usage is not None else 0

    def expired(self, index: NodeIndex) -> np.ndarray:
        update_time = self.update_time[index]
        with np.errstate(invalid="ignore"):
            expiry = self.plugin.args.node_metric_expiration_seconds
            expired: np.ndarray = np.isnan(update_time) | (self.plugin.clock() - update_time >= expiry)
            return expired

    def filter_mask(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], index: NodeIndex) -> np.ndarray:
        estimate = self.plugin.pod_estimate(state, pod)
        return self.passing(estimate, pod.priority_class == PriorityClass.PROD, pod.is_daemonset_pod, index)

    def score_array(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], index: NodeIndex
    ) -> np.ndarray | None:
        plugin = self.plugin
        if not plugin.score_enabled:
            return np.zeros(len(nodes), dtype=np.int64)
        prod_pod = plugin.args.score_according_prod_usage and pod.priority_class == PriorityClass.PROD
        return self.scores(plugin.pod_estimate(state, pod), prod_pod, index)

    def passing(self, estimate: list[int], pod_is_prod: bool, daemonset: bool, index: NodeIndex) -> np.ndarray:
        """Filter's answer on the rows `index`, for a pod of this estimate."""
        self.refresh()
        if daemonset:
            valid: np.ndarray = self.valid[index].copy()
            return valid
        args = self.plugin.args
        prod = self.has_prod[index] if pod_is_prod else None
        if prod is not None and prod.any():
            all_zero = np.where(prod, self.all_zero[True][index], self.all_zero[False][index])
            limit_rows = [
                np.where(prod, self.limits[True][r, index], self.limits[False][r, index]) for r in range(self.width)
            ]
        else:
            all_zero = self.all_zero[False][index]
            limit_rows = [self.limits[False][r, index] for r in range(self.width)]
        passes = ~self.has_node_metric[index]
        if limit_rows:  # the node passes every check: the estimate is below each limit
            below = estimate[0] < limit_rows[0]
            for r in range(1, self.width):
                below &= estimate[r] < limit_rows[r]
            passes |= below
        else:
            passes[:] = True
        if args.filter_expired_node_metrics:
            passes = np.where(self.expired(index), args.enable_schedule_when_node_metrics_expired, passes)
        passes |= all_zero
        passes |= ~self.has_load[index]
        mask: np.ndarray = passes & self.valid[index]
        return mask

    def scores(self, estimate: list[int], prod_pod: bool, index: NodeIndex) -> np.ndarray | None:
        """Score's answer, computed on the given rows only (a view for a window of the table, else a gather)."""
        self.refresh()
        valid = self.valid[index]
        if not valid.all():
            return None  # the per-node path reports the missing node as an error
        plugin = self.plugin
        dominant_weight = plugin.args.dominant_resource_weight
        has_usage = self.has_usage[prod_pod][index]
        usage = self.usage[prod_pod]
        node_score = np.zeros(len(valid), dtype=np.int64)
        dominant = np.full(len(valid), 100 if dominant_weight else 0, dtype=np.int64)
        weight_sum = dominant_weight
        for r, weight in enumerate(plugin.weights):
            capacity = self.allocatable[r, index]
            used = np.where(has_usage, usage[r, index] + estimate[r], estimate[r])
            score = np.where((capacity == 0) | (used > capacity), 0, (capacity - used) * 100 // np.maximum(capacity, 1))
            if weight:
                node_score += score * weight
            weight_sum += weight
            if dominant_weight:
                np.minimum(dominant, score, out=dominant)
        if dominant_weight:
            node_score += dominant * dominant_weight
        result = node_score // weight_sum if weight_sum > 0 else np.zeros(len(valid), dtype=np.int64)
        zero = ~self.has_load[index] | ~self.has_node_metric[index] | self.expired(index)
        result[zero] = 0
        return result
