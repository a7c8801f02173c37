"""The descheduler's view of the cluster: an index of the one `ClusterStore` (nodes, the pods
bound to each, NodeMetrics), from which every round takes an immutable `Snapshot`.

Pods that are pending or have finished (Succeeded/Failed) are on no node: they use nothing there
and cannot be evicted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from cluster.kinds import WatchedKind
from cluster.store import ClusterStore, Object, ObjectKey
from policies.kinds import NODE_METRIC_KIND
from policies.objects import spec_of

#: what a descheduler reads: nodes, NodeMetrics, pods (bound and running)
DESCHEDULER_KINDS: Final = ("Node", NODE_METRIC_KIND, "Pod")
ACTIVE_BOUND_PODS: Final = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
WATCHED_KINDS: Final = (
    WatchedKind.of("Node"),
    WatchedKind.of(NODE_METRIC_KIND),
    WatchedKind.of("Pod", field_selector=ACTIVE_BOUND_PODS),
)
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})


def bound_node(pod: Object) -> str:
    """The node an active pod runs on, "" when it is pending or has finished."""
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return ""
    return str(spec_of(pod).get("nodeName") or "")


@dataclass(frozen=True)
class Snapshot:
    nodes: tuple[Object, ...]
    pods_by_node: Mapping[str, tuple[Object, ...]]
    node_metrics: Mapping[str, Object]

    def pods_on(self, node_name: str) -> tuple[Object, ...]:
        return self.pods_by_node.get(node_name, ())


class DeschedulerView:
    """Keeps nodes, pods by node and NodeMetrics current as the store changes (a `StoreIndex`)."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        #: called (from the writing thread) once every kind has been listed or loaded
        self.on_synced: Callable[[], None] | None = None
        self._synced = False
        self._nodes: dict[str, Object] = {}
        self._metrics: dict[str, Object] = {}
        self._pods: dict[str, dict[ObjectKey, Object]] = {}
        self._pod_node: dict[ObjectKey, str] = {}
        store.subscribe(self)

    def object_put(self, kind: str, key: ObjectKey, obj: Object, old: Object | None, source: str) -> None:
        if kind == "Node":
            self._nodes[key[1]] = obj
        elif kind == NODE_METRIC_KIND:
            self._metrics[key[1]] = obj
        elif kind == "Pod":
            self._drop_pod(key)
            node = bound_node(obj)
            if node:
                self._pods.setdefault(node, {})[key] = obj
                self._pod_node[key] = node

    def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
        if kind == "Node":
            self._nodes.pop(key[1], None)
        elif kind == NODE_METRIC_KIND:
            self._metrics.pop(key[1], None)
        elif kind == "Pod":
            self._drop_pod(key)

    def changes_applied(self) -> None:
        if not self._synced and self.store.synced():
            self._synced = True
            if self.on_synced is not None:
                self.on_synced()

    @property
    def synced(self) -> bool:
        return self._synced

    def _drop_pod(self, key: ObjectKey) -> None:
        node = self._pod_node.pop(key, None)
        if node is not None:
            pods = self._pods.get(node, {})
            pods.pop(key, None)
            if not pods:
                self._pods.pop(node, None)

    def snapshot(self) -> Snapshot:
        with self.store.lock:
            return Snapshot(
                tuple(self._nodes[name] for name in sorted(self._nodes)),
                {node: tuple(pods.values()) for node, pods in self._pods.items()},
                dict(self._metrics),
            )


def is_ready(node: Mapping[str, Any]) -> bool:
    """The descheduler's IsReady: no condition says otherwise (Ready not True, or a pressure/
    network condition True). A node that reports no conditions counts as ready."""
    for condition in (node.get("status") or {}).get("conditions") or []:
        kind, status = condition.get("type"), condition.get("status")
        if kind == "Ready" and status != "True":
            return False
        if kind in ("OutOfDisk", "NetworkUnavailable") and status != "False":
            return False
    return True
