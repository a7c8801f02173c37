"""What the controllers' views of the one `ClusterStore` share (the manager's `ManagerView`, the
descheduler's `DeschedulerView`): the active pods indexed by the node they are bound to, and the
moment the store is first synced.

Pods that are pending or finished (Succeeded/Failed) are on no node: they use nothing there, and
Koordinator's controllers skip them too. The watch selects the same pods (`ACTIVE_BOUND_PODS`); a
directory source does not, hence `bound_node`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from colocate.cluster.store import ClusterStore, Object, ObjectKey
from policies.apis.objects import node_name_of

#: the field selector of the pods a controller's view holds
ACTIVE_BOUND_PODS: Final = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})


def bound_node(pod: Object) -> str:
    """The node an active pod runs on, "" when it is pending or has finished."""
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return ""
    return node_name_of(pod)


class BoundPods:
    """The active pods by node; a pod that moves, ends or goes is dropped from its old node."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[ObjectKey, Object]] = {}
        self._node_of: dict[ObjectKey, str] = {}
        #: each node's pods as the tuple `by_node` last handed out, while they are unchanged (a
        #: controller that keeps something per node can tell "the same pods" by the tuple's identity)
        self._tuples: dict[str, tuple[Object, ...]] = {}

    def put(self, key: ObjectKey, pod: Object) -> None:
        self.drop(key)
        node = bound_node(pod)
        if node:
            self._by_node.setdefault(node, {})[key] = pod
            self._node_of[key] = node
            self._tuples.pop(node, None)

    def drop(self, key: ObjectKey) -> None:
        node = self._node_of.pop(key, None)
        if node is not None:
            self._tuples.pop(node, None)
            pods = self._by_node.get(node, {})
            pods.pop(key, None)
            if not pods:
                self._by_node.pop(node, None)

    def by_node(self) -> dict[str, tuple[Object, ...]]:
        """A copy, for a snapshot (take it under the store's lock); a node's tuple is the very one of
        the last call while its pods are unchanged."""
        tuples = self._tuples
        out: dict[str, tuple[Object, ...]] = {}
        for node, pods in self._by_node.items():
            found = tuples.get(node)
            if found is None:
                found = tuples[node] = tuple(pods.values())
            out[node] = found
        return out


class SyncedView:
    """A store subscriber that says once when every kind has been listed or loaded: `on_synced` is
    called from the writing thread, by `changes_applied` (which a subclass extends)."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self.on_synced: Callable[[], None] | None = None
        self._synced = False

    @property
    def synced(self) -> bool:
        return self._synced

    def changes_applied(self) -> None:
        if not self._synced and self.store.synced():
            self._synced = True
            if self.on_synced is not None:
                self.on_synced()
