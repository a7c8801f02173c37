"""Live cluster state: every kind the handlers read, listed and watched from the API server.

Reflector threads feed one `SnapshotBuilder` under a lock; a publisher thread coalesces bursts of
events (a short debounce, bounded by a maximum delay) into one new immutable snapshot and hands it
to the event loop, where `StateHolder.publish` swaps it in. Admissions only ever read the current
snapshot: no API call on the admission path. Nothing is published until every kind has been listed
once, so `/readyz` stays false until then. When a watch breaks the last good state keeps being
served; `stale_seconds()` (exported as a metric and logged) says for how long.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client


from policies.snapshot import ClusterSnapshot, SnapshotBuilder
from cluster.kinds import WatchedKind
from cluster.reflector import Reflector, ReflectorSettings, run_threads, stop_all
from webhook.state import StateHolder

log = logging.getLogger("colocate.informer")


@dataclass(frozen=True)
class KubeSettings:
    reflector: ReflectorSettings = ReflectorSettings()
    debounce: float = 0.05  # quiet time that ends a burst of events
    max_delay: float = 0.5  # a steady stream of events still publishes this often
    stale_log_interval: float = 30.0


@dataclass
class _KindState:
    synced: bool = False
    healthy: bool = False
    broken_since: float | None = None
    last_logged: float = 0.0


class KubeSource:
    """Keeps a `StateHolder` in step with the API server for `kinds`."""

    def __init__(self, api: client.ApiClient, kinds: Sequence[WatchedKind], settings: KubeSettings = KubeSettings(),
                 clock: Callable[[], float] = time.monotonic,
                 on_failure: Callable[[str, str], None] | None = None) -> None:
        self.api, self.kinds, self.settings, self.clock = api, tuple(kinds), settings, clock
        self.on_failure = on_failure
        self._builder = SnapshotBuilder()
        self._lock = threading.Lock()
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._kind_state = {k.kind: _KindState() for k in self.kinds}
        self._first_change: float | None = None
        self._reflectors = [Reflector(k, api, self, settings.reflector, self._stop) for k in self.kinds]

    # ReflectorSink: called from reflector threads.
    def replaced(self, kind: WatchedKind, objects: list[dict[str, Any]]) -> None:
        with self._lock:
            self._builder.replace_kind(kind.kind, objects)
            self._kind_state[kind.kind].synced = True
            self._mark_dirty()
        self._healthy(kind)

    def changed(self, kind: WatchedKind, event: str, obj: dict[str, Any]) -> None:
        with self._lock:
            if event == "DELETED":
                metadata = obj.get("metadata") or {}
                self._builder.delete(kind.kind, (str(metadata.get("namespace") or ""), str(metadata.get("name"))))
            else:
                self._builder.put(obj)
            self._mark_dirty()

    def watching(self, kind: WatchedKind) -> None:
        self._healthy(kind)

    def failed(self, kind: WatchedKind, reason: str, error: str) -> None:
        state = self._kind_state[kind.kind]
        now = self.clock()
        if state.healthy or state.broken_since is None:
            state.broken_since = now
        state.healthy = False
        if self.on_failure is not None:
            self.on_failure(kind.kind, reason)
        if reason == "gone":
            log.info("watch of %s expired (%s); relisting", kind.plural, error)
            return
        stale = now - state.broken_since
        if now - state.last_logged >= self.settings.stale_log_interval or state.last_logged < state.broken_since:
            state.last_logged = now
            log.warning("watch of %s broke (%s); serving the last good state, %.1fs stale", kind.plural, error, stale)

    def _healthy(self, kind: WatchedKind) -> None:
        state = self._kind_state[kind.kind]
        if state.broken_since is not None and not state.healthy:
            log.info("watch of %s restored after %.1fs", kind.plural, self.clock() - state.broken_since)
        state.healthy, state.broken_since = True, None

    def _mark_dirty(self) -> None:
        if self._first_change is None:
            self._first_change = self.clock()
        self._dirty.set()

    # Read by the server (any thread).
    def synced(self) -> bool:
        return all(s.synced for s in self._kind_state.values())

    def stale_seconds(self) -> dict[str, float]:
        """Per kind: how long since its watch broke (0 while healthy, and before the first list)."""
        now = self.clock()
        return {kind: (now - s.broken_since) if s.broken_since is not None else 0.0
                for kind, s in self._kind_state.items()}

    def _next_snapshot(self) -> ClusterSnapshot | None:
        """Block until a burst of changes ended (or `max_delay` passed); None when stopping."""
        while not self._stop.is_set():
            if not self._dirty.wait(0.2):
                continue
            while not self._stop.is_set():
                self._dirty.clear()
                first = self._first_change or self.clock()
                if self._dirty.wait(self.settings.debounce) and self.clock() - first < self.settings.max_delay:
                    continue  # still bursting
                break
            with self._lock:
                if not self.synced():
                    continue
                self._first_change = None
                self._dirty.clear()
                return self._builder.build()
        return None

    def _publisher(self, loop: asyncio.AbstractEventLoop, publish: Callable[[ClusterSnapshot], None]) -> None:
        while (snapshot := self._next_snapshot()) is not None:
            try:
                loop.call_soon_threadsafe(publish, snapshot)
            except RuntimeError:  # the loop closed under us
                return

    async def run(self, state: StateHolder, on_reload: Callable[[ClusterSnapshot | None], None] | None = None) -> None:
        """Watch until cancelled, publishing snapshots into `state` on this event loop."""
        loop = asyncio.get_running_loop()

        def publish(snapshot: ClusterSnapshot) -> None:
            first = not state.ready
            state.publish(snapshot)
            if first:
                log.info("cluster state synced from the API server: %d profiles, %d objects",
                         len(snapshot.profiles), sum(len(v) for v in snapshot.objects.values()))
            if on_reload:
                on_reload(snapshot)

        threads = [threading.Thread(target=r.run, name=f"reflector-{r.kind.plural}", daemon=True)
                   for r in self._reflectors]
        threads.append(threading.Thread(target=self._publisher, args=(loop, publish), name="publisher", daemon=True))
        await run_threads(threads, self.close)

    def close(self) -> None:
        stop_all(self._stop, self._reflectors)
