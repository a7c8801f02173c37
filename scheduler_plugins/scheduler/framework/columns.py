"""Support for plugins' vector paths: per-node numeric columns refreshed only for nodes that changed.

A plugin's vector path (`interfaces.vector_path`: `VectorFilter`, `VectorScore`) answers for many
nodes at once with numpy; it keeps its per-node inputs in arrays indexed by `NodeInfo.index` and asks a
`DirtyRows` which rows changed since it last looked (`ClusterView.generations`). Each vector
method must agree exactly with the plugin's per-node method: the per-node method stays the
reference (explain uses it, and so does the framework for the reasons of rejected nodes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.interfaces import ClusterView, NodeIndex
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.status import Status
from scheduler_plugins.scheduler.podinfo import PodInfo


class DirtyRows:
    """Tracks which node rows of a cluster changed since the last `take()`."""

    def __init__(self, cluster: ClusterView) -> None:
        self.cluster = cluster
        self.seen = np.full(0, -1, dtype=np.int64)

    def size(self) -> int:
        return len(self.cluster.by_index)

    def take(self) -> np.ndarray:
        """Indexes of rows that changed (or are new); they count as seen afterwards."""
        size = self.size()
        if len(self.seen) < size:
            self.seen = np.concatenate([self.seen, np.full(size - len(self.seen), -1, dtype=np.int64)])
        generations = self.cluster.generations[:size]
        rows = np.flatnonzero(generations != self.seen[:size])
        self.seen[rows] = generations[rows]
        return rows


def grow(array: np.ndarray, size: int, fill: object = 0) -> np.ndarray:
    """`array` extended along its first axis to `size` rows with `fill`."""
    if len(array) >= size:
        return array
    extra = np.full((size - len(array),) + array.shape[1:], fill, dtype=array.dtype)
    return np.concatenate([array, extra])


def node_indexes(nodes: Sequence[NodeInfo]) -> NodeIndex | None:
    """Table indexes of `nodes` (None when one is not part of the cluster table). When the nodes
    are exactly rows 0..n-1 in order, a slice: numpy then selects by view instead of by copy."""
    index = np.fromiter((n.index for n in nodes), dtype=np.int64, count=len(nodes))
    if len(index) and index.min() < 0:
        return None
    if (
        len(index)
        and index[0] == 0
        and index[-1] == len(index) - 1
        and (len(index) == 1 or np.all(np.diff(index) == 1))
    ):
        return slice(0, len(index))
    return index


class ColumnSet:
    """Named per-node integer columns, each filled by `extract(node, key)`, kept fresh lazily:
    `refresh()` re-extracts only the rows that changed; a column asked for the first time is
    built for every node."""

    def __init__(self, cluster: ClusterView, extract: Callable[[NodeInfo, Any], int]) -> None:
        self.cluster = cluster
        self.rows = DirtyRows(cluster)
        self.extract = extract
        self.columns: dict[object, np.ndarray] = {}

    def refresh(self) -> None:
        size = self.rows.size()
        dirty = self.rows.take().tolist()
        if not dirty:
            return
        nodes = self.cluster.by_index
        for key, column in self.columns.items():
            column = grow(column, size)
            for i in dirty:
                column[i] = self.extract(nodes[i], key)
            self.columns[key] = column

    def get(self, key: object) -> np.ndarray:
        column = self.columns.get(key)
        if column is None:
            nodes = self.cluster.by_index
            column = self.columns[key] = np.fromiter((self.extract(n, key) for n in nodes), np.int64, len(nodes))
        return column


class PlainFilter(Protocol):
    """A Filter plugin's plain `filter`, which a vector path asks node by node."""

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status: ...


P = TypeVar("P", bound=PlainFilter)


class EachNodeFilter(Generic[P]):
    """A vector path that asks the plugin's plain `filter` node by node: the whole path of a
    plugin whose Filter has no columnar form (DeviceShare: a node without GPUs is a dictionary
    lookup), and the base of those that only add cheap shortcuts around it (NodeNUMAResource,
    Reservation), which override `filter_mask`."""

    def __init__(self, plugin: P) -> None:
        self.plugin = plugin

    def filter_mask(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], index: NodeIndex
    ) -> npt.NDArray[np.bool_] | None:
        return self.each_node(state, pod, nodes)

    def each_node(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> npt.NDArray[np.bool_]:
        filter_ = self.plugin.filter
        return np.fromiter((filter_(state, pod, n).is_success for n in nodes), np.bool_, len(nodes))
