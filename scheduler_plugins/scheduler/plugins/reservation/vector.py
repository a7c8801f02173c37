"""Reservation's vector path: its `filter` for many nodes at once. Only the nodes where the pod
matched a reservation (or every node, for a reserve pod) are asked of the plain `filter`; every
other node passes, or fails a pod with reservation affinity, as `filter` says of it.

tests/scheduler_plugins/scheduler/test_vector_paths.py holds it equal to the plain `filter`.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from scheduler_plugins.scheduler.framework.columns import EachNodeFilter, PlainFilter
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.interfaces import NodeIndex
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.reservations import is_reserve_pod


class ReservationFilter(PlainFilter, Protocol):
    def filter_scope(self, state: CycleState) -> tuple[Container[str], bool]:
        """The nodes where the pod matched a reservation (`filter` judges them one by one), and
        what `filter` says of every other node (False: the pod requires a reservation)."""
        ...


class ReservationVector(EachNodeFilter[ReservationFilter]):
    """`VectorFilter` of one Reservation plugin."""

    def filter_mask(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], index: NodeIndex
    ) -> npt.NDArray[np.bool_] | None:
        if is_reserve_pod(pod):
            return self.each_node(state, pod, nodes)
        filter_ = self.plugin.filter
        matched, others_pass = self.plugin.filter_scope(state)
        mask = np.full(len(nodes), others_pass, dtype=np.bool_)
        if matched:
            for i, node in enumerate(nodes):
                if node.name in matched:
                    mask[i] = filter_(state, pod, node).is_success
        return mask
