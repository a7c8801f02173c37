"""The batch Filter path: every Filter plugin answers for a window of nodes at once
(`filter_mask`), window after window until enough feasible nodes are found (kube-scheduler's
percentageOfNodesToScore), and the table indexes of recent node lists are remembered, since the
cluster's node list and the last feasible list recur from cycle to cycle. `Framework.find_feasible`
uses it when every active Filter plugin has a batch form; the per-node walk stays the reference it
must agree with (`Framework.batch = False` forces it)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from scheduler_plugins.scheduler.framework import interfaces as fi
from scheduler_plugins.scheduler.framework.columns import node_indexes
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.status import Status, error
from scheduler_plugins.scheduler.podinfo import PodInfo

INDEX_CACHE_SIZE = 4
#: nodes the first filter window holds beyond `wanted` + 25 %, for the ones that fail
WINDOW_SLACK = 16


def windows(start: int, total: int, size: int) -> Iterator[tuple[int, int]]:
    """Contiguous [low, high) runs of positions 0..total-1 in rotation order from `start`: the
    first `size` nodes, then twice as many as so far, and so on; a run that reaches the end of the
    list is cut there and continued from position 0 within the same budget."""
    target, done = size, 0
    for begin, end in ((start, total), (0, start)):
        low = begin
        while low < end:
            high = min(end, low + target - done)
            yield low, high
            done += high - low
            low = high
            if done >= target:
                target = done * 3  # the next window is twice what was walked so far


def _sub_index(index: fi.NodeIndex, low: int, high: int) -> fi.NodeIndex:
    """Table indexes of positions low..high-1 of a node list whose indexes are `index`."""
    if isinstance(index, slice):
        base = index.start or 0
        return slice(base + low, base + high)
    return index[low:high]


class BatchFilter:
    def __init__(self) -> None:
        self._cache: list[tuple[list[NodeInfo], fi.NodeIndex | None, int]] = []

    def find_feasible(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: list[NodeInfo],
        plugins: list[tuple[fi.FilterPlugin, fi.VectorFilter]],
        wanted: int,
        start: int,
        overrides: Mapping[str, Status],
    ) -> tuple[list[NodeInfo], dict[str, Status], int] | None:
        """`find_feasible` with every Filter plugin's vector path (`plugins`: each plugin and its
        path) answering for a window of nodes at once; the
        walk in rotation order, where it stops and the rejection reasons (asked of each plugin's
        `filter`) are the same. Windows are contiguous runs of `nodes` (so a window of the
        cluster's own node list is a slice of the table: numpy reads it by view), the first one
        a little larger than `wanted`, each next one twice what was walked: kube-scheduler too stops
        filtering once it has found enough feasible nodes. A rejected node's reason is asked of
        the first plugin whose mask rejects it: the plugins before it pass it (their masks agree
        with their `filter`), so that is the first failing status of the per-node walk."""
        index = self.indexes(nodes)
        if index is None:
            return None
        total = len(nodes)
        feasible: list[NodeInfo] = []
        chosen: list[np.ndarray] = []
        failed: dict[str, Status] = {}
        processed = 0
        size = wanted + wanted // 4 + WINDOW_SLACK
        for low, high in windows(start, total, size):
            mask = None
            part = nodes[low:high]
            rows = _sub_index(index, low, high)
            masks = []
            for _, vector in plugins:
                passed = vector.filter_mask(state, pod, part, rows)
                if passed is None:
                    return None
                masks.append(passed)
                mask = passed if mask is None else mask & passed
            if mask is None:  # no Filter plugin left to ask: the per-node walk takes every node
                return None
            if overrides:  # nodes a BeforeFilter transformer changed: their own per-node outcome
                mask = mask.copy()
                for i, node in enumerate(part):
                    if node.name in overrides:
                        mask[i] = overrides[node.name].is_success
            passing = np.flatnonzero(mask)
            needed = wanted - len(feasible)
            cut = int(passing[needed - 1]) + 1 if len(passing) >= needed else high - low
            taken = passing[:needed]
            feasible.extend(part if len(taken) == len(part) else [part[i] for i in taken.tolist()])
            chosen.append(taken + low)
            rejected = np.flatnonzero(~mask[:cut])
            if len(rejected):  # which plugin rejects each first: its mask's first False
                firsts = np.argmin(np.vstack([m[:cut][rejected] for m in masks]), axis=0).tolist()
            for i, first in zip(rejected.tolist(), firsts if len(rejected) else (), strict=True):
                node = part[i]
                failed[node.name] = (
                    overrides[node.name] if node.name in overrides else self._reason(state, pod, node, plugins, first)
                )
            processed += cut
            if len(feasible) >= wanted:
                break
        positions = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
        self.remember(feasible, positions + (index.start or 0) if isinstance(index, slice) else index[positions])
        return feasible, failed, processed

    @staticmethod
    def _reason(
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        plugins: list[tuple[fi.FilterPlugin, fi.VectorFilter]],
        first: int,
    ) -> Status:
        """The rejection of a node the batch masks failed: `filter` of the first plugin whose mask
        rejects it (the ones before pass it: their masks agree with their `filter`)."""
        for plugin, _ in plugins[first:] if first else plugins:
            status = plugin.filter(state, pod, node)
            if not status.is_success:
                return status.with_plugin(plugin.name)
        # the batch answer disagreed with the plugin's own filter
        return error("internal error: batch filter disagrees with filter")

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
        self._cache = [(nodes, index, len(nodes))] + self._cache[: INDEX_CACHE_SIZE - 1]
