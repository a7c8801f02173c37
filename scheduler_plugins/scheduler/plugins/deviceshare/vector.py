"""DeviceShare's vector path: its `filter` for many nodes at once (the framework's batch Filter
asks every active Filter plugin for a mask). DeviceShare's Filter has no columnar form: a node
without GPUs is a dictionary lookup in the plain `filter`, which this asks node by node.

tests/scheduler_plugins/scheduler/test_vector_paths.py holds it equal to the plain `filter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from scheduler_plugins.scheduler.framework.columns import each_node_mask
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.interfaces import NodeIndex
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.status import Status
from scheduler_plugins.scheduler.podinfo import PodInfo


class PlainFilter(Protocol):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status: ...


class DeviceShareVector:
    """`VectorFilter` of one DeviceShare plugin."""

    def __init__(self, plugin: PlainFilter) -> None:
        self.plugin = plugin

    def filter_mask(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], index: NodeIndex
    ) -> npt.NDArray[np.bool_] | None:
        return each_node_mask(self.plugin.filter, state, pod, nodes)
