"""The descheduler's view of the cluster: an index of the one `ClusterStore` (nodes, the pods
bound to each, NodeMetrics), from which every round takes an immutable `Snapshot`.

Pods that are pending or have finished are on no node (`colocate.cluster.views.bound_node`): they use
nothing there and cannot be evicted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from colocate.cluster.kinds import WatchedKind
from colocate.cluster.store import ClusterStore, Object, ObjectKey
from colocate.cluster.views import ACTIVE_BOUND_PODS, BoundPods, SyncedView
from policies.apis.kinds import NODE_METRIC_KIND
from policies.apis.objects import status_of

#: what a descheduler reads: nodes, NodeMetrics, pods (bound and running)
DESCHEDULER_KINDS: Final = ("Node", NODE_METRIC_KIND, "Pod")
WATCHED_KINDS: Final = (
    WatchedKind.of("Node"),
    WatchedKind.of(NODE_METRIC_KIND),
    WatchedKind.of("Pod", field_selector=ACTIVE_BOUND_PODS),
)


@dataclass(frozen=True)
class Snapshot:
    nodes: tuple[Object, ...]
    pods_by_node: Mapping[str, tuple[Object, ...]]
    node_metrics: Mapping[str, Object]

    def pods_on(self, node_name: str) -> tuple[Object, ...]:
        return self.pods_by_node.get(node_name, ())


class DeschedulerView(SyncedView):
    """Keeps nodes, pods by node and NodeMetrics current as the store changes (a `StoreIndex`)."""

    def __init__(self, store: ClusterStore) -> None:
        super().__init__(store)
        self._nodes: dict[str, Object] = {}
        self._metrics: dict[str, Object] = {}
        self._pods = BoundPods()
        store.subscribe(self)

    def object_put(self, kind: str, key: ObjectKey, obj: Object, old: Object | None, source: str) -> None:
        if kind == "Node":
            self._nodes[key[1]] = obj
        elif kind == NODE_METRIC_KIND:
            self._metrics[key[1]] = obj
        elif kind == "Pod":
            self._pods.put(key, obj)

    def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
        if kind == "Node":
            self._nodes.pop(key[1], None)
        elif kind == NODE_METRIC_KIND:
            self._metrics.pop(key[1], None)
        elif kind == "Pod":
            self._pods.drop(key)

    def snapshot(self) -> Snapshot:
        with self.store.lock:
            return Snapshot(
                tuple(self._nodes[name] for name in sorted(self._nodes)),
                self._pods.by_node(),
                dict(self._metrics),
            )


def is_ready(node: Mapping[str, Any]) -> bool:
    """The descheduler's IsReady: no condition says otherwise (Ready not True, or a pressure/
    network condition True). A node that reports no conditions counts as ready."""
    for condition in status_of(node).get("conditions") or []:
        kind, status = condition.get("type"), condition.get("status")
        if kind == "Ready" and status != "True":
            return False
        if kind in ("OutOfDisk", "NetworkUnavailable") and status != "False":
            return False
    return True
