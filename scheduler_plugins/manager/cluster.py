"""The manager's view of the cluster: an index of the one `ClusterStore` (nodes, the active pods
bound to each, NodeMetrics, NodeResourceTopologies, NodeSLOs, the slo-controller-config ConfigMap),
and the set of nodes whose inputs changed since the last round (`pkg/slo-controller/noderesource`
event handlers: a Node change, a NodeMetric status change or deletion, an NRT change).

Pods that finished are left out (`colocate.cluster.views.bound_node`): Koordinator skips them too, and
their metrics then count by the metric's own priority whether the pod is listed or not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from colocate.cluster.kinds import WatchedKind
from colocate.cluster.store import ClusterStore, Object, ObjectKey
from colocate.cluster.views import ACTIVE_BOUND_PODS, BoundPods, SyncedView
from policies.apis.constants import NODE_RESOURCE_TOPOLOGY_KIND, SLO_CONFIG_NAME, SLO_CONFIG_NAMESPACE
from policies.apis.kinds import NODE_METRIC_KIND, NODE_SLO_KIND

#: the kinds every round reads; a plugin table's setup may add its own (`PluginTable.watched_kinds`)
MANAGER_KINDS: Final = ("Node", "Pod", NODE_METRIC_KIND, NODE_RESOURCE_TOPOLOGY_KIND, NODE_SLO_KIND, "ConfigMap")
WATCHED_KINDS: Final = (
    WatchedKind.of("Node"),
    WatchedKind.of("Pod", field_selector=ACTIVE_BOUND_PODS),
    WatchedKind.of(NODE_METRIC_KIND),
    WatchedKind.of(NODE_RESOURCE_TOPOLOGY_KIND),
    WatchedKind.of(NODE_SLO_KIND),
    WatchedKind.of("ConfigMap", namespace=SLO_CONFIG_NAMESPACE, field_selector=f"metadata.name={SLO_CONFIG_NAME}"),
)


def manager_kinds(plugin_kinds: Iterable[str]) -> tuple[str, ...]:
    """The store's kinds: the manager's own and those its plugins watch."""
    return MANAGER_KINDS + tuple(kind for kind in plugin_kinds if kind not in MANAGER_KINDS)


def watched_kinds(plugin_kinds: Iterable[str]) -> tuple[WatchedKind, ...]:
    """What the reflectors list and watch: the manager's own kinds and those its plugins watch."""
    return WATCHED_KINDS + tuple(WatchedKind.of(kind) for kind in manager_kinds(plugin_kinds)[len(MANAGER_KINDS) :])


NO_WATCHED: Final[Mapping[str, Object | None]] = {}


@dataclass(frozen=True)
class Snapshot:
    """One round's inputs, immutable."""

    nodes: Mapping[str, Object]
    pods_by_node: Mapping[str, tuple[Object, ...]]
    node_metrics: Mapping[str, Object]
    topologies: Mapping[str, Object]
    node_slos: Mapping[str, Object]
    configmap: Object | None
    #: kind -> node name -> the object of a kind the plugins' setup asked for, named after its node
    watched: Mapping[str, Mapping[str, Object]] = field(default_factory=dict)

    def watched_of(self, name: str) -> Mapping[str, Object | None]:
        """The node's objects of the watched kinds (None for a kind without one)."""
        if not self.watched:
            return NO_WATCHED
        return {kind: objects.get(name) for kind, objects in self.watched.items()}

    def pods_on(self, name: str) -> tuple[Object, ...]:
        return self.pods_by_node.get(name, ())


@dataclass
class Changes:
    """What changed since the last round: nodes to reconcile, NodeMetrics deleted, the config."""

    nodes: set[str]
    forgotten: set[str]
    config: bool


class ManagerView(SyncedView):
    """Keeps the manager's inputs current as the store changes (a `StoreIndex`); `on_change` is
    called from the writing thread whenever some node needs a round."""

    def __init__(self, store: ClusterStore, plugin_kinds: Iterable[str] = ()) -> None:
        super().__init__(store)
        self.on_change: Callable[[], None] | None = None
        self._nodes: dict[str, Object] = {}
        self._metrics: dict[str, Object] = {}
        self._nrts: dict[str, Object] = {}
        self._slos: dict[str, Object] = {}
        self._configmap: Object | None = None
        self._pods = BoundPods()
        self._dirty: set[str] = set()
        self._forgotten: set[str] = set()
        self._config_changed = True
        #: kind -> node name -> object, for the kinds the plugins watch
        self._watched: dict[str, dict[str, Object]] = {
            kind: {} for kind in manager_kinds(plugin_kinds)[len(MANAGER_KINDS) :]
        }
        store.subscribe(self)

    def _mark(self, name: str) -> None:
        self._dirty.add(name)

    def object_put(self, kind: str, key: ObjectKey, obj: Object, old: Object | None, source: str) -> None:
        name = key[1]
        if kind == "Node":
            self._nodes[name] = obj
            self._mark(name)
        elif kind == NODE_METRIC_KIND:
            self._metrics[name] = obj
            # Koordinator reconciles on a NodeMetric update whose status (or, for its nodemetric
            # controller, spec) changed; a creation alone triggers nothing (the next resync covers it)
            if old is not None and (old.get("status") != obj.get("status") or old.get("spec") != obj.get("spec")):
                self._mark(name)
        elif kind == NODE_RESOURCE_TOPOLOGY_KIND:
            self._nrts[name] = obj
            self._mark(name)
        elif kind == NODE_SLO_KIND:
            self._slos[name] = obj
            if old is None or old.get("spec") != obj.get("spec"):
                self._mark(name)
        elif kind == "ConfigMap":
            if key == (SLO_CONFIG_NAMESPACE, SLO_CONFIG_NAME):
                if self._configmap is None or self._configmap.get("data") != obj.get("data"):
                    self._config_changed = True
                self._configmap = obj
        elif kind == "Pod":
            self._pods.put(key, obj)
        elif kind in self._watched:
            self._watched[kind][name] = obj
            self._mark(name)

    def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
        name = key[1]
        if kind == "Node":
            self._nodes.pop(name, None)
            self._forgotten.add(name)
        elif kind == NODE_METRIC_KIND:
            self._metrics.pop(name, None)
            self._forgotten.add(name)
            self._mark(name)
        elif kind == NODE_RESOURCE_TOPOLOGY_KIND:
            self._nrts.pop(name, None)
            self._mark(name)
        elif kind == NODE_SLO_KIND:
            self._slos.pop(name, None)
            self._mark(name)
        elif kind == "Pod":
            self._pods.drop(key)
        elif kind in self._watched:
            self._watched[kind].pop(name, None)
            self._mark(name)
        # a deleted ConfigMap changes nothing until restart (Koordinator ignores the delete)

    def changes_applied(self) -> None:
        super().changes_applied()
        if (self._dirty or self._config_changed or self._forgotten) and self.on_change is not None:
            self.on_change()

    def take_changes(self) -> Changes:
        """The changes since the last call (and forget them)."""
        with self.store.lock:
            changes = Changes(self._dirty, self._forgotten, self._config_changed)
            self._dirty, self._forgotten, self._config_changed = set(), set(), False
            return changes

    def snapshot(self) -> Snapshot:
        with self.store.lock:
            return Snapshot(
                dict(self._nodes),
                self._pods.by_node(),
                dict(self._metrics),
                dict(self._nrts),
                dict(self._slos),
                self._configmap,
                {kind: dict(objects) for kind, objects in self._watched.items()},
            )


def snapshot_of(store: ClusterStore, plugin_kinds: Iterable[str] = ()) -> Snapshot:
    """A snapshot of a store loaded once (the offline plan)."""
    return ManagerView(store, plugin_kinds).snapshot()
