"""Pods nominated to a node and not bound yet (kube-scheduler's `PodNominator`).

A pod whose preemption evicted victims on a node is nominated there (`status.nominatedNodeName`)
until it is bound or gone: the victims take time to terminate, and meanwhile the room they free is
promised to it. Every other pod's Filter counts the nominated pods of equal or higher priority on
the node (`Framework.run_filter_with_nominated_pods`), so a lower-priority pod arriving later does
not take that room. A pod read from a snapshot with `status.nominatedNodeName` is nominated the
same way. Bounded by the pending pods: a pod is nominated at most once.
"""

from __future__ import annotations

from policies.apis.objects import status_of
from scheduler_plugins.scheduler.podinfo import PodInfo


def nominated_node_of(pod: PodInfo) -> str:
    """The pod's `status.nominatedNodeName`, or ""."""
    return str(status_of(pod.obj).get("nominatedNodeName") or "")


class Nominator:
    __slots__ = ("_by_node", "_node_of")

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._node_of)

    def add(self, pod: PodInfo, node_name: str) -> None:
        """Nominate `pod` to `node_name` (replacing an earlier nomination); "" removes it."""
        self.delete(pod.key)
        if node_name:
            self._by_node.setdefault(node_name, {})[pod.key] = pod
            self._node_of[pod.key] = node_name

    def delete(self, key: str) -> None:
        """The pod was bound, assumed or deleted (`DeleteNominatedPodIfExists`)."""
        node_name = self._node_of.pop(key, None)
        if node_name is not None:
            pods = self._by_node[node_name]
            pods.pop(key, None)
            if not pods:
                del self._by_node[node_name]

    def node_of(self, key: str) -> str:
        return self._node_of.get(key, "")

    def nodes(self) -> frozenset[str]:
        """Nodes with at least one nominated pod."""
        return frozenset(self._by_node)

    def pods_for(self, node_name: str) -> list[PodInfo]:
        """The pods nominated to `node_name` (`NominatedPodsForNode`)."""
        return list(self._by_node.get(node_name, {}).values())
