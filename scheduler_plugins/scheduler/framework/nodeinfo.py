"""NodeInfo: one node, the pods on it and the resources they request.

Allocatable and requested are integer vectors in the scheduler's units (millicores for `cpu`,
base units otherwise), including the batch and mid extended resources. `qos_requested` sums each
pod's requests in the band it consumes (`PodInfo.qos_requests`), which is what a BE pod is fit
against; `requested` and `non_zero_requested` are the upstream raw sums used by scoring.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

from policies.apis.object_view import ObjectView
from policies.apis.quantity import resource_list
from scheduler_plugins.scheduler.podinfo import PodInfo, Vector


def _add(into: Vector, other: Mapping[str, int], sign: int) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + sign * amount


class NodeInfo(ObjectView):
    """One node (None: a node the cluster knows only from its pods), the pods on it and their sums."""

    __slots__ = (
        "node",
        "pods",
        "requested",
        "non_zero_requested",
        "qos_requested",
        "generation",
        "index",
        "on_change",
    )

    def __init__(self, node: dict[str, Any] | None) -> None:
        super().__init__(node if node is not None else {})
        self.node = node
        self.pods: dict[str, PodInfo] = {}
        self.requested: Vector = {}
        self.non_zero_requested: Vector = {}
        self.qos_requested: Vector = {}
        self.generation = 0
        #: position in the cluster's node table (-1: not part of a cluster), and the hook the
        #: cluster uses to learn that this node changed (see ClusterState.generations)
        self.index = -1
        self.on_change: Callable[[int], None] | None = None

    @cached_property
    def allocatable(self) -> Vector:
        return resource_list(self.status.get("allocatable"))

    def copy(self) -> NodeInfo:
        """A detached copy (no table index, no change hook) with the same pods and sums: what
        preemption removes its victims from."""
        other = NodeInfo(self.node)
        other.take_pods_of(self)
        return other

    def take_pods_of(self, other: NodeInfo) -> None:
        """Hold the pods of `other` (the object this one replaces) with their sums, as adding each
        of them would; `other` keeps its own."""
        self.pods = dict(other.pods)
        self.requested = dict(other.requested)
        self.non_zero_requested = dict(other.non_zero_requested)
        self.qos_requested = dict(other.qos_requested)

    def add_pod(self, pod: PodInfo) -> None:
        """Count `pod` on this node; adding a pod already present replaces it."""
        if pod.key in self.pods:
            self.remove_pod(pod.key)
        self.pods[pod.key] = pod
        self._account(pod, +1)

    def remove_pod(self, key: str) -> PodInfo | None:
        pod = self.pods.pop(key, None)
        if pod is not None:
            self._account(pod, -1)
        return pod

    def _account(self, pod: PodInfo, sign: int) -> None:
        _add(self.requested, pod.requests, sign)
        _add(self.non_zero_requested, pod.non_zero_requests, sign)
        _add(self.qos_requested, pod.qos_requests, sign)
        self.generation += 1
        if self.on_change is not None:
            self.on_change(self.index)

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"
