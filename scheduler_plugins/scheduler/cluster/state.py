"""The scheduler's view of the cluster: NodeInfos, NodeMetrics, bound and pending pods.

Plugins that keep their own caches (LoadAwareScheduling's assign cache) subscribe as listeners and
are told about every change, the way informer event handlers are; `subscribe` first replays the
current state so a listener built late sees the same world as one built early.

The state is an index of the one `ClusterStore` (`colocate.cluster.store`): the store tells it of every
Node, NodeMetric and Pod put or deleted, whether it reads a snapshot directory or the API server.
A live source applies watch events in whatever order the kinds arrive: a pod bound to a node the
state does not know (yet, or any more) is kept aside and counted once its node is added, as
kube-scheduler's cache keeps a node's pods across the node's deletion.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from colocate.cluster.store import ClusterStore, ObjectKey
from policies.apis.constants import (
    DEVICE_KIND,
    ELASTIC_QUOTA_KIND,
    NODE_RESOURCE_TOPOLOGY_KIND,
    POD_GROUP_KIND,
    RESERVATION_KIND,
)
from policies.apis.disruption import PDB_KIND
from policies.apis.kinds import NODE_METRIC_KIND, kind_named
from policies.apis.objects import metadata_of, node_name_of, status_of
from scheduler_plugins.scheduler.cluster.reservations import ReservationIndex
from scheduler_plugins.scheduler.framework.interfaces import (
    ClusterListener,
    ObjectListener,
    PodListener,
    ReservationListener,
)
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.podinfo import PodInfo


def _name(obj: dict[str, Any]) -> str:
    return metadata_of(obj).get("name") or ""


class ClusterState:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.node_metrics: dict[str, dict[str, Any]] = {}
        self.pending: dict[str, PodInfo] = {}
        #: pods bound to a node missing from `nodes`, by node name; adopted when the node is added
        self.homeless: dict[str, dict[str, PodInfo]] = {}
        self._listeners: list[ClusterListener] = []
        self._pod_listeners: list[PodListener] = []
        self._object_listeners: list[ObjectListener] = []
        self._reservation_listeners: list[ReservationListener] = []
        #: objects of the kinds only some plugins read (OBJECT_KINDS), by kind and name
        #: ("namespace/name" for a namespaced kind)
        self.objects: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in OBJECT_KINDS}
        self._node_list: list[NodeInfo] | None = None
        #: bumped whenever a node is added, replaced or deleted (what a node name resolves to changes)
        self.node_version = 0
        self._allocatable_total: dict[str, int] | None = None
        #: nodes by table index, and a per-index counter bumped on every change to that node (its
        #: pods, its object, or a plugin's cache of it via `touch`): batch plugins compare it with
        #: what they last saw to refresh only the rows that changed.
        self.by_index: list[NodeInfo] = []
        self.generations = np.zeros(64, dtype=np.int64)
        self.reservations = ReservationIndex(self)
        #: whether `pending` holds every pending pod (a snapshot) or only what was handed to us
        #: (the extender watches bound pods only)
        self.tracks_pending = True

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
        if old is not None:  # the same pods: their sums carry over (a Node's status is written often)
            info.take_pods_of(old)
        else:
            for pod in self.homeless.pop(info.name, {}).values():
                info.add_pod(pod)
        self.nodes[info.name] = info
        self.reservations.node_added(info.name)
        self._node_list = None
        self.node_version += 1
        self._allocatable_total = None
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
        self.node_version += 1
        self._allocatable_total = None
        self._bump(old.index)

    @property
    def pod_groups(self) -> dict[str, dict[str, Any]]:
        """PodGroup objects by `namespace/name` (gang definitions for Coscheduling)."""
        return self.objects[POD_GROUP_KIND]

    def disruption_budgets(self) -> list[dict[str, Any]]:
        """The PodDisruptionBudgets of the cluster (preemption's victims are weighed against them)."""
        return list(self.objects[PDB_KIND].values())

    def allocatable_total(self) -> dict[str, int]:
        """Σ allocatable of every node (what the top-level ElasticQuotas share)."""
        if self._allocatable_total is None:
            total: dict[str, int] = {}
            for node in self.nodes.values():
                for name, amount in node.allocatable.items():
                    total[name] = total.get(name, 0) + amount
            self._allocatable_total = total
        return self._allocatable_total

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
            for pod_listener in self._pod_listeners:
                pod_listener.on_pod_added(pod)
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
        for pod_listener in self._pod_listeners:
            pod_listener.on_pod_added(pod)
        node = self.nodes.get(node_name)
        if node is not None:
            node.add_pod(pod)
        else:
            self.homeless.setdefault(node_name, {})[pod.key] = pod
        self.reservations.pod_bound(pod)
        for listener in self._listeners:
            listener.on_pod_assigned(pod, node_name)

    def delete_pod(self, key: str, node_name: str | None = None) -> None:
        """Forget a pod; `node_name`, when known, spares a walk over every node."""
        self.pending.pop(key, None)
        for pod_listener in self._pod_listeners:
            pod_listener.on_pod_removed(key)
        names = [node_name] if node_name else [*self.nodes, *self.homeless]
        for name in names:
            node = self.nodes.get(name)
            pod = node.remove_pod(key) if node is not None else self._unhouse(name, key)
            if pod is not None:
                self.reservations.pod_deleted(pod)
                for listener in self._listeners:
                    listener.on_pod_deleted(pod, name)

    def _unhouse(self, node_name: str, key: str) -> PodInfo | None:
        pods = self.homeless.get(node_name, {})
        pod = pods.pop(key, None)
        if not pods:
            self.homeless.pop(node_name, None)
        return pod

    def node_named(self, name: str) -> NodeInfo | None:
        return self.nodes.get(name)

    def add_pending(self, pod: PodInfo) -> None:
        """A pod waits to be scheduled (a Reservation's reserve pod, put by `reservations`)."""
        self.pending[pod.key] = pod

    def drop_pending(self, key: str) -> None:
        self.pending.pop(key, None)

    def reservation_held(self, reserve_pod: PodInfo, node_name: str) -> None:
        """An Available reservation holds `reserve_pod` on the node (put by `reservations`)."""
        for listener in self._reservation_listeners:
            listener.on_reservation_held(reserve_pod, node_name)

    def reservation_released(self, reserve_pod: PodInfo, node_name: str) -> None:
        for listener in self._reservation_listeners:
            listener.on_reservation_released(reserve_pod, node_name)

    def find_pod(self, namespace: str, name: str) -> tuple[PodInfo | None, str]:
        key = f"{namespace}/{name}"
        if key in self.pending:
            return self.pending[key], ""
        for node in self.nodes.values():
            if key in node.pods:
                return node.pods[key], node.name
        return None, ""

    # --- listeners -------------------------------------------------------------------------------
    def subscribe(self, listener: object) -> None:
        """Subscribe a listener of any of the three kinds (or several in one), replaying first."""
        if isinstance(listener, ObjectListener):
            self._object_listeners.append(listener)
            for kind in sorted(listener.listened_kinds & self.objects.keys()):
                for name, obj in sorted(self.objects[kind].items()):
                    listener.on_object(kind, name, obj)
        if isinstance(listener, PodListener):
            self._pod_listeners.append(listener)
            for pod in self.pending.values():
                listener.on_pod_added(pod)
            for pods in [*(n.pods for n in self.nodes.values()), *self.homeless.values()]:
                for pod in pods.values():
                    listener.on_pod_added(pod)
        if isinstance(listener, ReservationListener):
            self._reservation_listeners.append(listener)
            for pod, node_name in self.reservations.held_pods():
                listener.on_reservation_held(pod, node_name)
        if isinstance(listener, ClusterListener):
            self._listeners.append(listener)
            for name, metric in self.node_metrics.items():
                listener.on_node_metric(name, metric)
            for node in self.nodes.values():
                for pod in node.pods.values():
                    listener.on_pod_assigned(pod, node.name)

    def _object_changed(self, kind: str, key: ObjectKey, obj: Mapping[str, Any] | None) -> None:
        name = f"{key[0] or 'default'}/{key[1]}" if kind_named(kind).namespaced else key[1]
        if obj is None:
            self.objects[kind].pop(name, None)
        else:
            self.objects[kind][name] = dict(obj)
        for listener in self._object_listeners:
            if kind in listener.listened_kinds:
                listener.on_object(kind, name, obj)

    # --- an index of the cluster store ------------------------------------------------------------
    def object_put(
        self, kind: str, key: ObjectKey, obj: Mapping[str, Any], old: Mapping[str, Any] | None, source: str
    ) -> None:
        if kind == "Node":
            self.add_node(dict(obj))
        elif kind == NODE_METRIC_KIND:
            self.set_node_metric(dict(obj))
        elif kind in self.objects:
            self._object_changed(kind, key, obj)
        elif kind == "Pod":
            pod_key = _pod_key(key)
            node, previous = node_name_of(obj or {}), node_name_of(old or {})
            if previous and previous != node:
                self.delete_pod(pod_key, previous)
            if status_of(obj).get("phase") in TERMINATED_PHASES:
                self.delete_pod(pod_key, node or None)  # finished: no longer counts
                return
            self.add_pod(dict(obj))
        elif kind == RESERVATION_KIND:
            self.reservations.put(obj)

    def object_deleted(self, kind: str, key: ObjectKey, old: Mapping[str, Any]) -> None:
        if kind == "Node":
            self.delete_node(key[1])
        elif kind == NODE_METRIC_KIND:
            self.delete_node_metric(key[1])
        elif kind in self.objects:
            self._object_changed(kind, key, None)
        elif kind == "Pod":
            self.delete_pod(_pod_key(key), node_name_of(old or {}) or None)
        elif kind == RESERVATION_KIND:
            self.reservations.delete(key[1])

    def changes_applied(self) -> None:
        """Every change is applied as it comes: nothing to finish."""

    @classmethod
    def of_store(cls, store: ClusterStore) -> ClusterState:
        """A state that follows `store` from now on (built from what it holds already)."""
        state = cls()
        store.subscribe(state)
        return state

    @classmethod
    def from_objects(cls, objects: Iterable[dict[str, Any]]) -> ClusterState:
        """The state of a fixed set of objects, whatever order they come in."""
        objects = list(objects)
        store = ClusterStore(SCHEDULER_KINDS)
        for kind in SCHEDULER_KINDS:
            store.replace(kind, [obj for obj in objects if obj.get("kind") == kind])
        return cls.of_store(store)


#: Kinds kept as plain objects (`ClusterState.objects`) for the plugins that read them
#: (ElasticQuota, DeviceShare, NodeNUMAResource as `ObjectListener`s; Coscheduling's PodGroups;
#: the PodDisruptionBudgets preemption reads).
OBJECT_KINDS = (ELASTIC_QUOTA_KIND, DEVICE_KIND, NODE_RESOURCE_TOPOLOGY_KIND, POD_GROUP_KIND, PDB_KIND)
#: The kinds the scheduler reads, in the order a new state is built from (nodes before their pods,
#: quota objects before the pods they count, Reservations after the pods that use them, so a bound
#: owner's allocation is known when they hold).
SCHEDULER_KINDS = ("Node", NODE_METRIC_KIND, *OBJECT_KINDS, "Pod", RESERVATION_KIND)
TERMINATED_PHASES = frozenset({"Succeeded", "Failed"})


def _pod_key(key: ObjectKey) -> str:
    return f"{key[0] or 'default'}/{key[1]}"  # as PodInfo.key spells it
