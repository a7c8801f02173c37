"""The scheduler's view of the cluster: NodeInfos, NodeMetrics, bound and pending pods.

Plugins that keep their own caches (LoadAwareScheduling's assign cache) subscribe as listeners and
are told about every change, the way informer event handlers are; `subscribe` first replays the
current state so a listener built late sees the same world as one built early.

A live source applies watch events in whatever order the kinds arrive: a pod bound to a node the
state does not know (yet, or any more) is kept aside and counted once its node is added, as
kube-scheduler's cache keeps a node's pods across the node's deletion.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from scheduler_plugins.scheduler.framework.interfaces import ClusterListener
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.podinfo import PodInfo


def _name(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


class ClusterState:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.node_metrics: dict[str, dict[str, Any]] = {}
        self.pending: dict[str, PodInfo] = {}
        #: pods bound to a node missing from `nodes`, by node name; adopted when the node is added
        self.homeless: dict[str, dict[str, PodInfo]] = {}
        self._listeners: list[ClusterListener] = []
        self._node_list: list[NodeInfo] | None = None
        #: nodes by table index, and a per-index counter bumped on every change to that node (its
        #: pods, its object, or a plugin's cache of it via `touch`): batch plugins compare it with
        #: what they last saw to refresh only the rows that changed.
        self.by_index: list[NodeInfo] = []
        self.generations = np.zeros(64, dtype=np.int64)

    def _bump(self, index: int) -> None:
        self.generations[index] += 1

    def touch(self, name: str) -> None:
        """Something derived from this node changed (a NodeMetric, a plugin cache entry)."""
        node = self.nodes.get(name)
        if node is not None:
            self._bump(node.index)

    # --- nodes and metrics -----------------------------------------------------------------------
    def add_node(self, obj: dict[str, Any]) -> NodeInfo:
        info = NodeInfo(obj)
        old = self.nodes.get(info.name)
        if old is not None:
            info.index = old.index
            self.by_index[info.index] = info
            old.on_change = None
        else:
            info.index = len(self.by_index)
            self.by_index.append(info)
            if info.index >= len(self.generations):
                self.generations = np.concatenate([self.generations, np.zeros(len(self.generations), np.int64)])
        info.on_change = self._bump
        for pod in (old.pods if old is not None else self.homeless.pop(info.name, {})).values():
            info.add_pod(pod)
        self.nodes[info.name] = info
        self._node_list = None
        self._bump(info.index)
        return info

    def delete_node(self, name: str) -> None:
        """Drop a node; its table row becomes an empty slot (indexes stay stable for batch
        plugins) and its pods wait in `homeless` until they are deleted or the node returns."""
        old = self.nodes.pop(name, None)
        if old is None:
            return
        old.on_change = None
        if old.pods:
            self.homeless[name] = dict(old.pods)
        slot = NodeInfo(None)
        slot.index = old.index
        self.by_index[old.index] = slot
        self._node_list = None
        self._bump(old.index)

    def node_list(self) -> list[NodeInfo]:
        """All nodes, sorted by name (the order the simulator walks them in)."""
        if self._node_list is None:
            self._node_list = [self.nodes[name] for name in sorted(self.nodes)]
        return self._node_list

    def set_node_metric(self, obj: dict[str, Any]) -> None:
        name = _name(obj)
        self.node_metrics[name] = obj
        for listener in self._listeners:
            listener.on_node_metric(name, obj)
        self.touch(name)

    def delete_node_metric(self, name: str) -> None:
        self.node_metrics.pop(name, None)
        for listener in self._listeners:
            listener.on_node_metric(name, None)
        self.touch(name)

    # --- pods ------------------------------------------------------------------------------------
    def add_pod(self, obj: dict[str, Any]) -> PodInfo:
        """A pod with `spec.nodeName` is bound (counted on its node), otherwise pending."""
        pod = PodInfo(obj)
        if pod.node_name:
            self.bind(pod, pod.node_name)
        else:
            self.pending[pod.key] = pod
        return pod

    def assume(self, pod: PodInfo, node_name: str) -> None:
        """Count the pod on the node before binding finishes (kube-scheduler's AssumePod)."""
        self.nodes[node_name].add_pod(pod)

    def forget(self, pod: PodInfo, node_name: str) -> None:
        node = self.nodes.get(node_name)
        if node is not None:
            node.remove_pod(pod.key)

    def bind(self, pod: PodInfo, node_name: str) -> None:
        """Record a pod as bound: it leaves the pending set and is counted on its node."""
        self.pending.pop(pod.key, None)
        if pod.is_terminated:
            return
        node = self.nodes.get(node_name)
        if node is not None:
            node.add_pod(pod)
        else:
            self.homeless.setdefault(node_name, {})[pod.key] = pod
        for listener in self._listeners:
            listener.on_pod_assigned(pod, node_name)

    def delete_pod(self, key: str, node_name: str | None = None) -> None:
        """Forget a pod; `node_name`, when known, spares a walk over every node."""
        self.pending.pop(key, None)
        names = [node_name] if node_name else [*self.nodes, *self.homeless]
        for name in names:
            node = self.nodes.get(name)
            pod = node.remove_pod(key) if node is not None else self._unhouse(name, key)
            if pod is not None:
                for listener in self._listeners:
                    listener.on_pod_deleted(pod, name)

    def _unhouse(self, node_name: str, key: str) -> PodInfo | None:
        pods = self.homeless.get(node_name, {})
        pod = pods.pop(key, None)
        if not pods:
            self.homeless.pop(node_name, None)
        return pod

    def find_pod(self, namespace: str, name: str) -> tuple[PodInfo | None, str]:
        key = f"{namespace}/{name}"
        if key in self.pending:
            return self.pending[key], ""
        for node in self.nodes.values():
            if key in node.pods:
                return node.pods[key], node.name
        return None, ""

    # --- listeners -------------------------------------------------------------------------------
    def subscribe(self, listener: ClusterListener) -> None:
        self._listeners.append(listener)
        for name, metric in self.node_metrics.items():
            listener.on_node_metric(name, metric)
        for node in self.nodes.values():
            for pod in node.pods.values():
                listener.on_pod_assigned(pod, node.name)

    @classmethod
    def from_objects(cls, objects: Iterable[dict[str, Any]]) -> "ClusterState":
        """Nodes first, then NodeMetrics, then pods, whatever order the objects come in."""
        state = cls()
        objects = list(objects)
        for kind, handler in (("Node", state.add_node), ("NodeMetric", state.set_node_metric),
                              ("Pod", state.add_pod)):
            for obj in objects:
                if obj.get("kind") == kind:
                    handler(obj)
        return state
