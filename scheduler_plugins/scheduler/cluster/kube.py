"""`KubeClusterSource`: the extender's cluster state listed and watched from the API server.

It reuses the webhook's `Reflector` (one thread per kind: paged list, watch with bookmarks, relist
on 410 Gone, capped backoff). The reflector threads never touch the `ClusterState`: every list and
event is handed to the event loop with `call_soon_threadsafe` and applied there, in arrival order,
so the plugins' listeners (LoadAwareScheduling's assign cache) only ever run on the loop, between
two extender requests. A relist is applied as a diff against what the source last applied, so an
object that vanished while the watch was down is deleted and an unchanged one costs nothing.

Only bound, non-terminated pods are watched (the field selector below): kube-scheduler sends the
pod being scheduled with every call, so pending pods are none of the extender's business.
`synced()` turns true once every kind has been listed once and stays true while a broken watch
recovers (the last good state keeps being served, as the webhook does).
"""
from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

from kubernetes.client import ApiClient

from scheduler_plugins.clock import Clock
from scheduler_plugins.scheduler.cluster.apiclient import ApiServerClient
from scheduler_plugins.scheduler.cluster.state import ClusterState
from cluster.kinds import WatchedKind
from cluster.reflector import Reflector, ReflectorSettings, run_threads, stop_all

log = logging.getLogger("colocate.extender.source")

BOUND_PODS: Final = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
EXTENDER_KINDS: Final = (
    WatchedKind.of("Node"),
    WatchedKind.of("NodeMetric"),
    WatchedKind.of("Pod", field_selector=BOUND_PODS),
)
TERMINATED_PHASES: Final = frozenset({"Succeeded", "Failed"})


def _key(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    name = str(metadata.get("name") or "")
    return f"{metadata['namespace']}/{name}" if metadata.get("namespace") else name


def _version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class KubeClusterSource:
    """A `ClusterSource` whose state follows the API server while `run()` is awaited."""

    def __init__(self, api: ApiClient, settings: ReflectorSettings = ReflectorSettings(),
                 kinds: Sequence[WatchedKind] = EXTENDER_KINDS) -> None:
        self.api = api
        self.state = ClusterState()
        #: per kind, what was last applied: key -> (resourceVersion, node the pod is counted on)
        self._applied: dict[str, dict[str, tuple[str, str]]] = {k.kind: {} for k in kinds}
        self._synced: set[str] = set()
        self._stop = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reflectors = [Reflector(k, api, self, settings, self._stop) for k in kinds]

    def load(self) -> ClusterState:
        """The live state: empty until `run()` has synced, then kept current by it."""
        return self.state

    def synced(self) -> bool:
        return len(self._synced) == len(self._applied)

    def client(self, clock: Clock) -> ApiServerClient:
        """Binds and patches go to the same API server the state is watched from."""
        return ApiServerClient(self.api, self.state, clock)

    # --- ReflectorSink: called on reflector threads, only hands over to the loop -----------------
    def replaced(self, kind: WatchedKind, objects: list[dict[str, Any]]) -> None:
        self._post(self._replace, kind.kind, objects)

    def changed(self, kind: WatchedKind, event: str, obj: dict[str, Any]) -> None:
        if event == "DELETED":
            self._post(self._remove, kind.kind, _key(obj))
        else:
            self._post(self._put, kind.kind, _key(obj), obj)

    def watching(self, kind: WatchedKind) -> None:
        log.debug("watching %s", kind.plural)

    def failed(self, kind: WatchedKind, reason: str, error: str) -> None:
        if reason == "gone":
            log.info("watch of %s expired (%s); relisting", kind.plural, error)
        else:
            log.warning("watch of %s broke (%s); serving the last good state while retrying", kind.plural, error)

    def _post(self, apply: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(apply, *args)
        except RuntimeError:  # the loop closed under us: shutting down
            pass

    # --- on the event loop -----------------------------------------------------------------------
    def _replace(self, kind: str, objects: list[dict[str, Any]]) -> None:
        fresh = {_key(obj): obj for obj in objects}
        for key in [k for k in self._applied[kind] if k not in fresh]:
            self._remove(kind, key)
        for key, obj in fresh.items():
            self._put(kind, key, obj)
        if kind not in self._synced:
            self._synced.add(kind)
            log.info("listed %d %s objects", len(objects), kind)
            if self.synced():
                log.info("cluster state synced from the API server: %d nodes, %d NodeMetrics, %d bound pods",
                         len(self.state.nodes), len(self.state.node_metrics), len(self._applied.get("Pod", ())))

    def _put(self, kind: str, key: str, obj: dict[str, Any]) -> None:
        applied = self._applied[kind]
        version, previous = _version(obj), applied.get(key)
        if previous is not None and version and previous[0] == version:
            return  # a relist repeating what a watch event already applied
        node = ""
        if kind == "Node":
            self.state.add_node(obj)
        elif kind == "NodeMetric":
            self.state.set_node_metric(obj)
        else:
            node = str((obj.get("spec") or {}).get("nodeName") or "")
            if not node or (obj.get("status") or {}).get("phase") in TERMINATED_PHASES:
                self._remove(kind, key)  # finished (or, defensively, unbound): no longer counts
                return
            if previous is not None and previous[1] != node:
                self.state.delete_pod(key, previous[1])
            self.state.add_pod(obj)
        applied[key] = (version, node)

    def _remove(self, kind: str, key: str) -> None:
        previous = self._applied[kind].pop(key, None)
        if previous is None:
            if kind == "Pod":  # a pod this extender bound and assumed, deleted before its event came
                self.state.delete_pod(key)
            return
        if kind == "Node":
            self.state.delete_node(key)
        elif kind == "NodeMetric":
            self.state.delete_node_metric(key)
        else:
            self.state.delete_pod(key, previous[1])

    # --- lifecycle -------------------------------------------------------------------------------
    async def run(self) -> None:
        """List and watch until cancelled, applying everything on this event loop."""
        self._loop = asyncio.get_running_loop()
        await run_threads([threading.Thread(target=r.run, name=f"extender-reflector-{r.kind.plural}", daemon=True)
                           for r in self._reflectors], self.close)

    def close(self) -> None:
        stop_all(self._stop, self._reflectors)
