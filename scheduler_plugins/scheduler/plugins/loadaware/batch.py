"""LoadAwareScheduling for many nodes at once: the per-node inputs of Filter and Score (§3.6–3.7)
kept as numpy rows, refreshed from the plugin's own per-node helpers whenever a node changes, so
the batch answers are the per-node answers by construction (and a test checks they agree)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler_plugins.scheduler.framework.columns import DirtyRows, grow

if TYPE_CHECKING:
    from scheduler_plugins.scheduler.plugins.loadaware.plugin import LoadAwareScheduling

NO_LIMIT = np.iinfo(np.int64).max
VARIANTS = (False, True)  # is the pod judged as a prod pod on this node?


class LoadColumns:
    def __init__(self, plugin: LoadAwareScheduling) -> None:
        self.plugin = plugin
        self.cluster = plugin.handle.cluster
        self.rows = DirtyRows(self.cluster)
        width = len(plugin.resources)
        self.valid = np.zeros(0, dtype=bool)
        self.has_load = np.zeros(0, dtype=bool)
        self.has_node_metric = np.zeros(0, dtype=bool)
        self.update_time = np.zeros(0, dtype=np.float64)
        self.has_prod = np.zeros(0, dtype=bool)
        self.allocatable = np.zeros((0, width), dtype=np.int64)
        self.all_zero = {v: np.zeros(0, dtype=bool) for v in VARIANTS}
        self.limits = {v: np.zeros((0, width), dtype=np.int64) for v in VARIANTS}
        self.has_usage = {v: np.zeros(0, dtype=bool) for v in VARIANTS}
        self.usage = {v: np.zeros((0, width), dtype=np.int64) for v in VARIANTS}

    def _grow(self, size: int) -> None:
        for name in ("valid", "has_load", "has_node_metric", "update_time", "has_prod", "allocatable"):
            setattr(self, name, grow(getattr(self, name), size))
        for table in (self.all_zero, self.limits, self.has_usage, self.usage):
            for v in VARIANTS:
                table[v] = grow(table[v], size)

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
            load = plugin.cache.loads.get(node.name)
            self.has_load[i] = load is not None
            self.has_node_metric[i] = load is not None and load.has_node_metric
            self.update_time[i] = np.nan if load is None or load.update_time is None else load.update_time
            view = plugin._view(node)
            self.has_prod[i] = view.has_prod_thresholds
            self.allocatable[i] = view.allocatable
            for v in VARIANTS:
                checks = plugin._filter_checks(node, v)
                self.all_zero[v][i] = checks is None
                self.limits[v][i] = NO_LIMIT
                for r, limit, _ in checks or ():
                    self.limits[v][i, r] = limit
                usage = plugin._score_usage(node, v)
                self.has_usage[v][i] = usage is not None
                self.usage[v][i] = usage if usage is not None else 0

    def expired(self, index: np.ndarray | slice) -> np.ndarray:
        update_time = self.update_time[index]
        with np.errstate(invalid="ignore"):
            expiry = self.plugin.args.node_metric_expiration_seconds
            expired: np.ndarray = np.isnan(update_time) | (self.plugin.clock() - update_time >= expiry)
            return expired

    def filter_mask(self, estimate: list[int], pod_is_prod: bool, daemonset: bool, index: np.ndarray) -> np.ndarray:
        self.refresh()
        if daemonset:
            valid: np.ndarray = self.valid[index].copy()
            return valid
        args = self.plugin.args
        if pod_is_prod and self.has_prod[index].any():
            prod = self.has_prod[index]
            limits = np.where(prod[:, None], self.limits[True][index], self.limits[False][index])
            all_zero = np.where(prod, self.all_zero[True][index], self.all_zero[False][index])
        else:
            limits, all_zero = self.limits[False][index], self.all_zero[False][index]
        passes = np.all(np.asarray(estimate, dtype=np.int64)[None, :] < limits, axis=1)
        passes |= ~self.has_node_metric[index]
        if args.filter_expired_node_metrics:
            passes = np.where(self.expired(index), args.enable_schedule_when_node_metrics_expired, passes)
        passes |= all_zero
        passes |= ~self.has_load[index]
        mask: np.ndarray = passes & self.valid[index]
        return mask

    def score_array(self, estimate: list[int], prod_pod: bool, index: np.ndarray) -> np.ndarray | None:
        """Computed over the whole table (views, no copies) and then selected: cheaper than
        gathering every input column for a subset of rows."""
        self.refresh()
        if not self.valid[index].all():
            return None  # the per-node path reports the missing node as an error
        plugin = self.plugin
        rows = slice(0, self.rows.size())
        est = np.asarray(estimate, dtype=np.int64)[None, :]
        used = np.where(self.has_usage[prod_pod][rows][:, None], self.usage[prod_pod][rows] + est, est)
        capacity = self.allocatable[rows]
        scores = np.where((capacity == 0) | (used > capacity), 0, (capacity - used) * 100 // np.maximum(capacity, 1))
        dominant_weight = plugin.args.dominant_resource_weight
        weights = np.asarray(plugin.weights, dtype=np.int64)
        weight_sum = dominant_weight + int(weights.sum())
        node_score = scores @ weights
        if dominant_weight:
            node_score = node_score + scores.min(axis=1) * dominant_weight
        result = node_score // weight_sum if weight_sum > 0 else np.zeros(len(node_score), dtype=np.int64)
        zero = ~self.has_load[rows] | ~self.has_node_metric[rows] | self.expired(rows)
        selected: np.ndarray = np.where(zero, 0, result)[index]
        return selected
