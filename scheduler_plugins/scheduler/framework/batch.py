"""The batch Filter path: every Filter plugin answers for all nodes at once (`filter_mask`), and
the table indexes of recent node lists are remembered, since the cluster's node list and the last
feasible list recur from cycle to cycle. `Framework.find_feasible` uses it when every active Filter
plugin has a batch form; the per-node walk stays the reference it must agree with."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scheduler_plugins.scheduler.framework import interfaces as fi
from scheduler_plugins.scheduler.framework.columns import node_indexes
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status, error
from scheduler_plugins.scheduler.podinfo import PodInfo

INDEX_CACHE_SIZE = 4


class BatchFilter:
    def __init__(self) -> None:
        self._cache: list[tuple[list[NodeInfo], fi.NodeIndex | None, int]] = []

    def find_feasible(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo],
                      plugins: list[fi.BatchFilterPlugin], wanted: int, start: int,
                      overrides: Mapping[str, Status]) -> tuple[list[NodeInfo], dict[str, Status], int] | None:
        """`find_feasible` with every Filter plugin answering for all nodes at once; the walk in
        rotation order and the rejection reasons (asked of each plugin's `filter`) are the same."""
        index = self.indexes(nodes)
        if index is None:
            return None
        mask = None
        for plugin in plugins:
            passed = plugin.filter_mask(state, pod, nodes, index)
            if passed is None:
                return None
            mask = passed if mask is None else mask & passed
        if mask is None:  # no Filter plugin left to ask: the per-node walk takes every node
            return None
        if overrides:  # nodes a BeforeFilter transformer changed: their own per-node outcome
            mask = mask.copy()
            for i, node in enumerate(nodes):
                if node.name in overrides:
                    mask[i] = overrides[node.name].is_success
        total = len(nodes)
        order = np.roll(np.arange(total), -start) if start else np.arange(total)
        rotated = mask[order]
        passing = np.flatnonzero(rotated)
        cut = int(passing[wanted - 1]) + 1 if len(passing) >= wanted else total
        chosen = order[passing[:wanted]]
        feasible = [nodes[i] for i in chosen.tolist()]
        self.remember(feasible, chosen if isinstance(index, slice) else index[chosen])
        failed: dict[str, Status] = {}
        for i in order[np.flatnonzero(~rotated[:cut])].tolist():
            node = nodes[i]
            if node.name in overrides:
                failed[node.name] = overrides[node.name]
                continue
            status = SUCCESS
            for plugin in plugins:
                status = plugin.filter(state, pod, node)
                if not status.is_success:
                    status = status.with_plugin(plugin.name)
                    break
            if status.is_success:  # the batch answer disagreed with the plugin's own filter
                status = error("internal error: batch filter disagrees with filter")
            failed[node.name] = status
        return feasible, failed, cut

    def indexes(self, nodes: list[NodeInfo]) -> fi.NodeIndex | None:
        """Table indexes of a node list, remembered for the last few lists seen (the cluster's node
        list and the last feasible list recur). Entries hold the list, so identities are not reused."""
        for position, (cached, index, length) in enumerate(self._cache):
            if cached is nodes and len(nodes) == length:
                if position:  # most recently used first
                    self._cache.insert(0, self._cache.pop(position))
                return index
        index = node_indexes(nodes)
        self.remember(nodes, index)
        return index

    def remember(self, nodes: list[NodeInfo], index: fi.NodeIndex | None) -> None:
        self._cache = [(nodes, index, len(nodes))] + self._cache[:INDEX_CACHE_SIZE - 1]
