"""NodeNUMAResource's vector path: its `filter` for many nodes at once. A pod that binds no CPU
and has no NUMA policy is judged only on the nodes whose labels could change that (the rest pass),
so the common pod costs a label lookup per node; every other pod is asked of the plain `filter`
node by node.

tests/scheduler_plugins/scheduler/test_vector_paths.py holds it equal to the plain `filter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from policies.apis.constants import LABEL_NODE_CPU_BIND_POLICY, LABEL_NODE_NUMA_TOPOLOGY_POLICY
from scheduler_plugins.scheduler.framework.columns import EachNodeFilter, PlainFilter
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.interfaces import NodeIndex
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.plugins.nodenumaresource.request import PodState
from scheduler_plugins.scheduler.podinfo import PodInfo


class NUMAFilter(PlainFilter, Protocol):
    def filter_state(self, state: CycleState) -> PodState | None:
        """What PreFilter learnt of the pod, as `filter` reads it."""
        ...


class NodeNUMAResourceVector(EachNodeFilter[NUMAFilter]):
    """`VectorFilter` of one NodeNUMAResource plugin."""

    def filter_mask(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], index: NodeIndex
    ) -> npt.NDArray[np.bool_] | None:
        st = self.plugin.filter_state(state)
        if st is None:  # `filter` passes every node
            return np.ones(len(nodes), dtype=np.bool_)
        filter_ = self.plugin.filter
        if st.bind or st.numa_policy:
            return self.each_node(state, pod, nodes)
        return np.fromiter(
            (not has_policy_labels(n) or filter_(state, pod, n).is_success for n in nodes), np.bool_, len(nodes)
        )


def has_policy_labels(node: NodeInfo) -> bool:
    """Whether the node's labels ask for a CPU bind or NUMA policy (without them, a pod that binds
    no CPU and has no NUMA policy of its own passes `filter`)."""
    labels = node.labels
    return LABEL_NODE_CPU_BIND_POLICY in labels or LABEL_NODE_NUMA_TOPOLOGY_POLICY in labels
