"""NodeResourcesFit's vector path: its `filter` and `score` for many nodes at once, over numpy
columns of the nodes' allocatable and requested amounts (`framework/columns.py`).

The plugin's own `filter` and `score` (noderesourcesfit.py) are the rules; this wraps them, and
tests/scheduler_plugins/scheduler/test_vector_paths.py holds the two equal node by node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from policies.apis.constants import RESOURCE_PODS
from scheduler_plugins.scheduler.framework.columns import ColumnSet
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.interfaces import ClusterView, NodeIndex
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.podinfo import PodInfo

#: (resource, weight, pod request, counted with non-zero defaults?)
ScoringRow = tuple[str, int, int, bool]


class PlainFit(Protocol):
    """What the vector path reads of NodeResourcesFit: the helpers its `filter` and `score` use."""

    def allocatable(self, node: NodeInfo, name: str) -> int: ...

    def requests(self, state: CycleState, pod: PodInfo) -> tuple[tuple[str, int], ...]: ...

    def pod_scoring(self, state: CycleState, pod: PodInfo) -> list[ScoringRow]: ...


class NodeResourcesFitVector:
    """`VectorFilter` and `VectorScore` of one NodeResourcesFit plugin."""

    def __init__(self, plugin: PlainFit, cluster: ClusterView) -> None:
        self.plugin = plugin
        self.columns = ColumnSet(cluster, self._extract)

    def _extract(self, node: NodeInfo, key: tuple[str, str]) -> int:
        """One cell of the columns: what the plain `filter`/`score` read of the node."""
        kind, name = key
        if kind == "count":
            return len(node.pods)
        if kind == "alloc":
            return self.plugin.allocatable(node, name)
        if kind == "qos":
            return node.qos_requested.get(name, 0)
        return (node.non_zero_requested if kind == "nz" else node.requested).get(name, 0)

    def filter_mask(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], index: NodeIndex
    ) -> npt.NDArray[np.bool_]:
        cols = self.columns
        cols.refresh()
        ok: npt.NDArray[np.bool_] = cols.get(("count", ""))[index] + 1 <= cols.get(("alloc", RESOURCE_PODS))[index]
        for name, amount in self.plugin.requests(state, pod):
            ok &= amount <= cols.get(("alloc", name))[index] - cols.get(("qos", name))[index]
        return ok

    def score_array(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], index: NodeIndex
    ) -> npt.NDArray[np.int64]:
        cols = self.columns
        cols.refresh()
        total: npt.NDArray[np.int64] | None = None
        weights: npt.NDArray[np.int64] | None = None
        for name, weight, request, non_zero in self.plugin.pod_scoring(state, pod):
            capacity = cols.get(("alloc", name))[index]
            used = cols.get(("nz" if non_zero else "req", name))[index] + request
            present = capacity > 0
            score = np.where(present & (used <= capacity), (capacity - used) * 100 // np.maximum(capacity, 1), 0)
            total = score * weight if total is None else total + score * weight
            weights = present * weight if weights is None else weights + present * weight
        if total is None or weights is None:
            return np.zeros(len(nodes), dtype=np.int64)
        scores: npt.NDArray[np.int64] = np.where(weights > 0, total // np.maximum(weights, 1), 0)
        return scores
