"""Where the scheduler's `ClusterState` comes from: a snapshot directory or the API server.

Both fill the one `ClusterStore` (`colocate.cluster.store`) and the state is an index of it. A snapshot
directory holds YAML or JSON files (searched recursively, in sorted path order), each with one
object, several YAML documents, or a `List`/`*List` with `items`; Nodes, NodeMetrics, Pods,
Reservations, PodGroups, ElasticQuotas, Devices and NodeResourceTopologies are used (an Available
Reservation holds its capacity on its node from the start; a pending one is scheduled as its
reserve pod). A Pod with `spec.nodeName` is bound, without one it is pending.

From the API server only bound, non-terminated pods are watched (the field selector below):
kube-scheduler sends the pod being scheduled with every call, so pending pods are none of the
extender's business (ElasticQuota counts the pod being scheduled in its quota's request). Reservations
and PodGroups are always watched; the CRD kinds ElasticQuota, Device and NodeResourceTopology only
when a plugin reading them is enabled. Every change is applied on the event loop, in arrival order, so the plugins'
listeners only ever run there, between two extender requests. The source is ready once the store
is synced (every kind listed once) *and* the loop has applied what was listed; it stays ready
while a broken watch recovers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from kubernetes.client import ApiClient

from colocate.cluster.files import load_directory
from colocate.cluster.kinds import WatchedKind
from colocate.cluster.kube import KubeSource
from colocate.cluster.reflector import ReflectorSettings
from colocate.cluster.store import ClusterStore, LoopIndex, ObjectKey
from policies.apis.constants import (
    DEVICE_KIND,
    ELASTIC_QUOTA_KIND,
    NODE_RESOURCE_TOPOLOGY_KIND,
    POD_GROUP_KIND,
    RESERVATION_KIND,
)
from policies.apis.kinds import NODE_METRIC_KIND
from scheduler_plugins.scheduler.cluster.state import SCHEDULER_KINDS, ClusterState
from scheduler_plugins.scheduler.errors import SnapshotError

if TYPE_CHECKING:
    from scheduler_plugins.clock import Clock
    from scheduler_plugins.scheduler.framework.handle import ClusterClient

log = logging.getLogger("colocate.extender.source")

BOUND_PODS: Final = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
EXTENDER_KINDS: Final = (
    WatchedKind.of("Node"),
    WatchedKind.of(NODE_METRIC_KIND),
    WatchedKind.of("Pod", field_selector=BOUND_PODS),
    WatchedKind.of(RESERVATION_KIND),
    WatchedKind.of(POD_GROUP_KIND),
)
#: Kinds watched only when a plugin that reads them is enabled: a cluster without that CRD would
#: otherwise never sync (the reflector retries a 404 forever).
PLUGIN_KINDS: Final[Mapping[str, str]] = {
    "ElasticQuota": ELASTIC_QUOTA_KIND,
    "DeviceShare": DEVICE_KIND,
    "NodeNUMAResource": NODE_RESOURCE_TOPOLOGY_KIND,
}


def _plugin_kinds(plugins: Iterable[str]) -> list[WatchedKind]:
    return [WatchedKind.of(kind) for kind in dict.fromkeys(PLUGIN_KINDS[p] for p in plugins if p in PLUGIN_KINDS)]


def extender_kinds(plugins: Iterable[str] = ()) -> tuple[WatchedKind, ...]:
    """What the extender watches: nodes, metrics, bound pods, Reservations and PodGroups, and the
    kinds `plugins` read."""
    return (*EXTENDER_KINDS, *_plugin_kinds(plugins))


class ClusterSource(Protocol):
    def load(self) -> ClusterState: ...


@runtime_checkable
class LiveClusterSource(ClusterSource, Protocol):
    """A source that keeps its `ClusterState` current while `run()` is awaited on the event loop."""

    store: ClusterStore

    def synced(self) -> bool: ...

    async def run(self) -> None: ...

    def client(self, clock: Clock) -> ClusterClient: ...


def load_snapshot(directory: str | Path) -> ClusterState:
    """The state of a snapshot directory, read once; anything unreadable is a `SnapshotError`."""
    path = Path(directory)
    if not path.is_dir():
        raise SnapshotError(f"{path}: not a directory")
    store = load_directory(path, SCHEDULER_KINDS)
    if store.problems:
        problem = store.problems[0]
        raise SnapshotError(f"{problem.source}: {problem.message}")
    return ClusterState.of_store(store)


#: Every live pod, pending ones included (what ElasticQuota's request counts).
LIVE_PODS: Final = "status.phase!=Succeeded,status.phase!=Failed"


def load_live_once(
    api: ApiClient, plugins: Iterable[str] = (), settings: ReflectorSettings = ReflectorSettings()
) -> ClusterState:
    """The state of a live cluster, listed once (`colocate scheduler quota --kubeconfig`): nodes,
    metrics, every live pod and the kinds `plugins` read. A failed list raises `SnapshotError`."""
    kinds = [
        WatchedKind.of("Node"),
        WatchedKind.of(NODE_METRIC_KIND),
        WatchedKind.of("Pod", field_selector=LIVE_PODS),
        *_plugin_kinds(plugins),
    ]
    store = ClusterStore([k.kind for k in kinds])
    state = ClusterState.of_store(store)
    try:
        KubeSource(api, kinds, store, settings).list_once()
    except Exception as exc:  # an unreachable server, an HTTP error, a bad body: one message
        raise SnapshotError(f"cannot list the cluster: {type(exc).__name__}: {exc}") from exc
    return state


class SnapshotDirectorySource:
    """A `ClusterSource` backed by files on disk, re-read on every `load()`."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def load(self) -> ClusterState:
        return load_snapshot(self.directory)


def bound_pod_count(state: ClusterState) -> int:
    """Pods bound to a node, whether or not that node is known yet (the "synced" log line)."""
    return sum(len(node.pods) for node in state.nodes.values()) + sum(len(p) for p in state.homeless.values())


class _ReadyWhenApplied:
    """The state's index on the loop; notes when what the store had synced is applied."""

    def __init__(self, state: ClusterState, store: ClusterStore) -> None:
        self.state, self.store, self.ready = state, store, False

    def object_put(
        self, kind: str, key: ObjectKey, obj: Mapping[str, Any], old: Mapping[str, Any] | None, source: str
    ) -> None:
        self.state.object_put(kind, key, obj, old, source)

    def object_deleted(self, kind: str, key: ObjectKey, old: Mapping[str, Any]) -> None:
        self.state.object_deleted(kind, key, old)

    def changes_applied(self) -> None:
        if not self.ready and self.store.synced():
            self.ready = True
            log.info(
                "cluster state synced from the API server: %d nodes, %d NodeMetrics, %d bound pods",
                len(self.state.nodes),
                len(self.state.node_metrics),
                bound_pod_count(self.state),
            )


class ApiServerClusterSource:
    """A `LiveClusterSource` whose state follows the API server while `run()` is awaited."""

    def __init__(
        self,
        api: ApiClient,
        settings: ReflectorSettings = ReflectorSettings(),
        kinds: tuple[WatchedKind, ...] = EXTENDER_KINDS,
    ) -> None:
        self.api = api
        self.store = ClusterStore([k.kind for k in kinds])
        self.state = ClusterState()
        self.state.tracks_pending = False  # BOUND_PODS: pending pods are not watched
        self._applied = _ReadyWhenApplied(self.state, self.store)
        self._source = KubeSource(api, kinds, self.store, settings)

    def load(self) -> ClusterState:
        """The live state: empty until `run()` has synced, then kept current by it."""
        return self.state

    def synced(self) -> bool:
        return self._applied.ready

    def client(self, clock: Clock) -> ClusterClient:
        """Binds and patches go to the same API server the state is watched from."""
        from scheduler_plugins.scheduler.cluster.apiclient import ApiServerClient

        return ApiServerClient(self.api, self.state, clock)

    async def run(self) -> None:
        """List and watch until cancelled, applying everything on this event loop."""
        self.store.subscribe(LoopIndex(self._applied, asyncio.get_running_loop()))
        await self._source.run()

    def close(self) -> None:
        self._source.close()
