"""The webhook's view of the cluster store: immutable snapshots, swapped into a `StateHolder`.

Admissions read only the current `ClusterSnapshot`; no API call and no parsing happens on the
admission path. The view is an index of the one `ClusterStore` (`colocate.cluster.store`): every change
reaches a `SnapshotBuilder`, which re-parses only what changed. How often a new snapshot is built
depends on the source:

* a directory (embedded mode) is polled in a worker thread; a scan that changed anything
  publishes one snapshot;
* the API server's reflectors change the store one event at a time; a publisher thread coalesces
  a burst (a short debounce, bounded by a maximum delay) into one snapshot, and nothing is
  published until every kind has been listed once, so `/readyz` stays false until then. When a
  watch breaks, the last good state keeps being served and the store says for how long.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client

from colocate.cluster.files import DirectorySource, start_in_daemon_thread
from colocate.cluster.kinds import Transform, WatchedKind, transforms_of
from colocate.cluster.kube import KubeSource
from colocate.cluster.reflector import ReflectorSettings
from colocate.cluster.store import ClusterStore, Object, ObjectKey, StoreSettings
from policies.admission.snapshot import ClusterSnapshot, LoadProblem, SnapshotBuilder
from webhook.state import StateHolder

log = logging.getLogger("colocate.state")

OnReload = Callable[[ClusterSnapshot | None], None]


@dataclass(frozen=True)
class KubeSettings:
    reflector: ReflectorSettings = ReflectorSettings()
    debounce: float = 0.05  # quiet time that ends a burst of events
    max_delay: float = 0.5  # a steady stream of events still publishes this often
    stale_log_interval: float = 30.0


class SnapshotIndex:
    """Keeps a `SnapshotBuilder` in step with a store; `build()` makes the next snapshot.
    `strict` when the store is filled from files: profiles are held to the CRD's schema."""

    def __init__(self, store: ClusterStore, *, strict: bool = False, refuse_sensitive: bool = False) -> None:
        self.store = store
        self.dirty = threading.Event()
        self._builder = SnapshotBuilder(strict=strict, refuse_sensitive=refuse_sensitive)
        store.subscribe(self)

    def object_put(self, kind: str, key: ObjectKey, obj: Object, old: Object | None, source: str) -> None:
        self._builder.put(obj, source)

    def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
        self._builder.delete(kind, key)

    def changes_applied(self) -> None:
        # setting a set event again only costs (a lock and a notify per store write). Skipping it
        # loses nothing: the change is in the builder before this check, and whoever clears the
        # event after the check builds after clearing it, under the store's lock
        if not self.dirty.is_set():
            self.dirty.set()

    def build(self) -> ClusterSnapshot:
        with self.store.lock:
            self.dirty.clear()
            snapshot = self._builder.build()
            problems = self.store.problems
        if problems:
            snapshot = dataclasses.replace(snapshot, problems=problems + snapshot.problems)
        return snapshot


class DirectorySnapshots:
    """Embedded mode: the snapshots of a directory of manifests, re-read when files change.
    `transforms`: what is kept of each object of a kind (`colocate.cluster.kinds.transforms_of` of the
    watched kinds, as in live mode); other kinds are kept whole. `run` logs each problem once, when
    it appears; a one-shot command (`scan`) prints them itself."""

    def __init__(
        self,
        root: Path,
        interval: float = 1.0,
        stuck_after: float = 30.0,
        transforms: Mapping[str, Transform] | None = None,
        refuse_sensitive: bool = False,
    ) -> None:
        self.root, self.interval, self.stuck_after = root, interval, stuck_after
        self.store = ClusterStore(transforms=transforms)
        self._source = DirectorySource(root, self.store, log_problems=False)
        self._logged: frozenset[LoadProblem] = frozenset()
        self._index = SnapshotIndex(self.store, strict=True, refuse_sensitive=refuse_sensitive)  # files: no API server

    def scan(self) -> ClusterSnapshot | None:
        """Re-read changed files; a new snapshot when anything changed, else None. Blocking I/O."""
        if not self._source.scan():
            return None
        return self._index.build()

    async def run(self, state: StateHolder, on_reload: OnReload | None = None) -> None:
        """Poll forever, publishing a snapshot whenever the directory changes. A scan runs in a
        daemon thread; one that does not return (a hung file system) is reported every
        `stuck_after` seconds and waited for, never started twice, and never delays shutdown."""
        scan: asyncio.Future[ClusterSnapshot | None] | None = None
        while True:
            if scan is None:
                scan = start_in_daemon_thread(self.scan, name="directory-scan")
            try:
                snapshot = await asyncio.wait_for(asyncio.shield(scan), self.stuck_after)
            except TimeoutError:
                log.error(
                    "a scan of %s has not returned for %.0fs; serving the last good state", self.root, self.stuck_after
                )
                if on_reload:
                    on_reload(None)
                continue
            except Exception as exc:  # keep serving the last good state
                scan = None
                log.error("reloading %s failed, keeping the last good state: %s", self.root, exc)
                if on_reload:
                    on_reload(None)
            else:
                scan = None
                if snapshot is not None:
                    for problem in snapshot.problems:  # once each: a broken file is not a log line per scan
                        if problem not in self._logged:
                            log.warning("%s: %s", problem.source, problem.message)
                    self._logged = frozenset(snapshot.problems)
                    state.publish(snapshot)
                    log.info(
                        "cluster state loaded from %s: %d profiles, %d problems",
                        self.root,
                        len(snapshot.profiles),
                        len(snapshot.problems),
                    )
                    if on_reload:
                        on_reload(snapshot)
            await asyncio.sleep(self.interval)


class ApiServerSnapshots:
    """Live mode: the snapshots of the kinds the routes read, listed and watched from the API server;
    of a metadata-only kind the store keeps only the metadata (`colocate.cluster.kinds.keep_metadata`)."""

    def __init__(
        self,
        api: client.ApiClient,
        kinds: Sequence[WatchedKind],
        settings: KubeSettings = KubeSettings(),
        clock: Callable[[], float] = time.monotonic,
        on_failure: Callable[[str, str], None] | None = None,
        refuse_sensitive: bool = False,
    ) -> None:
        self.api, self.settings, self.clock = api, settings, clock
        self.store = ClusterStore(
            [k.kind for k in kinds], StoreSettings(settings.stale_log_interval), clock, on_failure, transforms_of(kinds)
        )
        self._source = KubeSource(api, kinds, self.store, settings.reflector)
        self._index = SnapshotIndex(self.store, refuse_sensitive=refuse_sensitive)

    def synced(self) -> bool:
        return self.store.synced()

    def list_once(self) -> ClusterSnapshot:
        """The snapshot of one list of every kind, without watching (`colocate apply --kubeconfig`)."""
        self._source.list_once()
        return self._index.build()

    def stale_seconds(self) -> dict[str, float]:
        """Per kind: how long since its watch broke (0 while healthy, and before the first list)."""
        return self.store.stale_seconds()

    def _next_snapshot(self) -> ClusterSnapshot | None:
        """Block until a burst of changes ended (or `max_delay` passed); None when stopping."""
        stop, dirty = self._source.stopping, self._index.dirty
        while not stop.is_set():
            if not dirty.wait(0.2):
                continue
            first = self.clock()
            while not stop.is_set():
                dirty.clear()
                if dirty.wait(self.settings.debounce) and self.clock() - first < self.settings.max_delay:
                    continue  # still bursting
                break
            if not self.store.synced():
                continue
            return self._index.build()
        return None

    def _publisher(self, loop: asyncio.AbstractEventLoop, publish: Callable[[ClusterSnapshot], None]) -> None:
        while (snapshot := self._next_snapshot()) is not None:
            try:
                loop.call_soon_threadsafe(publish, snapshot)
            except RuntimeError:  # the loop closed under us
                return

    async def run(self, state: StateHolder, on_reload: OnReload | None = None) -> None:
        """Watch until cancelled, publishing snapshots into `state` on this event loop."""
        loop = asyncio.get_running_loop()

        def publish(snapshot: ClusterSnapshot) -> None:
            first = not state.ready
            state.publish(snapshot)
            if first:
                log.info(
                    "cluster state synced from the API server: %d profiles, %d objects",
                    len(snapshot.profiles),
                    sum(len(v) for v in snapshot.objects.values()),
                )
            if on_reload:
                on_reload(snapshot)

        publisher = threading.Thread(target=self._publisher, args=(loop, publish), name="publisher", daemon=True)
        await self._source.run(publisher)

    def close(self) -> None:
        self._source.close()
