"""The one cluster store: every object a component watches, by kind and key, fed by one source.

A source — the API server's reflectors (`colocate.cluster.kube`) or a directory of manifests
(`colocate.cluster.files`) — writes into the store; every component's view of the cluster is an *index* of
it, told of each change in order: the webhook's immutable snapshots, the scheduler's node table.
The store is where the questions every component asks have their one answer:

* **synced** — every kind has been listed (or loaded) once. It stays true while a broken watch
  recovers: the last good state keeps being served, as client-go's informers do.
* **stale seconds** — per kind, how long its watch has been broken (0 while healthy).
* **absent kinds** — kinds the API server does not serve (an optional CRD not installed): each
  counts as listed and empty, so a component is not held unready by a CRD it can do without, and
  is named in the problems `/readyz` shows until its CRD appears (the reflector keeps asking).

A kind may carry a *transform* (`colocate.cluster.kinds.Transform`, e.g. `keep_metadata`): the store
applies it to every object of that kind as it enters, whichever source sent it, and keeps and
passes on only the result, as client-go's informer transforms do.

Writes come from source threads; the store serialises them under one lock and calls the indexes
under it, so an index sees a consistent sequence of changes. An index must be quick: one that
must do its work on an event loop hands each change over (see `LoopIndex`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from colocate.cluster.kinds import Transform, WatchedKind
from policies.admission.snapshot import LoadProblem
from policies.apis.objects import metadata_of

log = logging.getLogger("colocate.informer")

ObjectKey = tuple[str, str]  # (namespace or "", name)
Object = Mapping[str, Any]

#: what a kind the store has never held reads as (shared and never written: `get` runs per object
#: read, and a fresh `{}` per call is most of its cost)
_NO_OBJECTS: Mapping[ObjectKey, Object] = {}


def key_of(obj: Object) -> ObjectKey:
    metadata = metadata_of(obj)
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


def _unchanged(old: Object | None, new: Object) -> bool:
    """The same object again: both carry the same resourceVersion, or (files) are equal."""
    if old is None:
        return False
    version = metadata_of(new).get("resourceVersion")
    if version:
        return bool(metadata_of(old).get("resourceVersion") == version)
    return old == new


class StoreIndex(Protocol):
    """A view kept in step with the store. Called under the store's lock, in change order."""

    def object_put(self, kind: str, key: ObjectKey, obj: Object, old: Object | None, source: str) -> None:
        """`obj` was added (`old` None) or replaced `old`."""

    def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
        """The object under `key` is gone; `old` is its last known state."""

    def changes_applied(self) -> None:
        """A batch of changes (one event, one relist, one directory reload) is complete."""


#: a watch broken longer than this makes a component unready: its state can no longer be called
#: current. Shorter breaks (a restart: watches resume within a second of the server answering
#: again) keep it ready, serving the last good state, as client-go's informers do.
STALE_READY_SECONDS = 30.0


def stale_readiness(stale: Mapping[str, float], absent: Iterable[str] = ()) -> tuple[bool, str]:
    """`/readyz` of a listed state: unready once a watch is broken beyond `STALE_READY_SECONDS`."""
    broken = {kind: seconds for kind, seconds in sorted(stale.items()) if seconds > 0}
    described = ", ".join(f"{kind} {seconds:.1f}s" for kind, seconds in broken.items())
    if any(seconds > STALE_READY_SECONDS for seconds in broken.values()):
        return False, f"cluster state stale beyond {STALE_READY_SECONDS:g}s (watches broken: {described})"
    notes = [f"watches reconnecting: {described}"] if broken else []
    absent = list(absent)
    if absent:
        notes.append(f"not served by the API server (treated as none): {', '.join(absent)}")
    return True, "; ".join(["ok", *notes])


@dataclass
class KindHealth:
    synced: bool = False
    healthy: bool = False
    broken_since: float | None = None
    last_logged: float = 0.0


@dataclass(frozen=True)
class StoreSettings:
    stale_log_interval: float = 30.0  # a broken watch is logged again this often


class ClusterStore:
    """Objects by kind and key, with per-kind health. Implements the reflector's sink."""

    def __init__(
        self,
        kinds: Iterable[str] = (),
        settings: StoreSettings = StoreSettings(),
        clock: Callable[[], float] = time.monotonic,
        on_failure: Callable[[str, str], None] | None = None,
        transforms: Mapping[str, Transform] | None = None,
    ) -> None:
        self.settings, self.clock, self.on_failure = settings, clock, on_failure
        #: per kind, what is kept of each object (`colocate.cluster.kinds.transforms_of`); other kinds whole
        self.transforms: Mapping[str, Transform] = dict(transforms or {})
        self.lock = threading.RLock()
        self._objects: dict[str, dict[ObjectKey, Object]] = {kind: {} for kind in kinds}
        self._sources: dict[str, dict[ObjectKey, str]] = {kind: {} for kind in kinds}
        self._health: dict[str, KindHealth] = {kind: KindHealth() for kind in kinds}
        self._indexes: list[StoreIndex] = []
        #: what the source could not load (a file that does not parse), for the operator
        self._file_problems: tuple[LoadProblem, ...] = ()
        #: kinds the API server does not serve, with its answer
        self._absent: dict[str, str] = {}

    # --- reads -----------------------------------------------------------------------------------
    def kinds(self) -> list[str]:
        return list(self._health)

    def objects(self, kind: str) -> list[Object]:
        with self.lock:
            return list(self._objects.get(kind, {}).values())

    def get(self, kind: str, key: ObjectKey) -> Object | None:
        return self._objects.get(kind, _NO_OBJECTS).get(key)

    def synced(self) -> bool:
        """Every kind has been listed or loaded once (and a store of no kinds is never synced)."""
        return bool(self._health) and all(h.synced for h in self._health.values())

    @property
    def problems(self) -> tuple[LoadProblem, ...]:
        """What the operator should hear of: kinds the API server does not serve, then the files
        the source could not load."""
        absent = tuple(
            LoadProblem(
                kind, f"not served by the API server ({why}); is its CRD installed? treated as none until it is"
            )
            for kind, why in sorted(self._absent.items())
        )
        return absent + self._file_problems

    def absent_kinds(self) -> list[str]:
        return sorted(self._absent)

    def not_synced(self) -> list[str]:
        """The kinds not listed yet (what a component waits for before it is ready)."""
        return sorted(kind for kind, health in self._health.items() if not health.synced)

    def readiness(self) -> tuple[bool, str]:
        """Ready, and one line for `/readyz`: the kinds not listed yet, a watch broken beyond
        `STALE_READY_SECONDS`, or "ok" naming kinds not served and watches reconnecting."""
        waiting = self.not_synced()
        if waiting:
            return False, f"cluster state not listed yet: waiting for {', '.join(waiting)}"
        return stale_readiness(self.stale_seconds(), self.absent_kinds())

    def stale_seconds(self) -> dict[str, float]:
        """Per kind: how long since its watch broke (0 while healthy, and before the first list)."""
        now = self.clock()
        return {kind: (now - h.broken_since) if h.broken_since is not None else 0.0 for kind, h in self._health.items()}

    # --- indexes ---------------------------------------------------------------------------------
    def subscribe(self, index: StoreIndex) -> None:
        """Add a view; it is first told of every object already stored, kind by kind."""
        with self.lock:
            self._indexes.append(index)
            for kind, objects in self._objects.items():
                sources = self._sources[kind]
                for key, obj in objects.items():
                    index.object_put(kind, key, obj, None, sources.get(key, ""))
            index.changes_applied()

    # --- writes ----------------------------------------------------------------------------------
    def replace(self, kind: str, objects: Iterable[Object], source: str = "") -> None:
        """Make `objects` the whole of `kind` (a relist): what vanished is deleted, what did not
        change costs nothing. The kind counts as synced from now on."""
        self.replace_sourced(kind, ((source, obj) for obj in objects))

    def replace_sourced(self, kind: str, pairs: Iterable[tuple[str, Object]]) -> None:
        """`replace`, each object labelled with where it came from (a file path)."""
        with self.lock:
            fresh = {key_of(obj): (source, obj) for source, obj in pairs}
            stored = self._objects.setdefault(kind, {})
            self._sources.setdefault(kind, {})
            for key in [k for k in stored if k not in fresh]:
                self._delete(kind, key, stored[key])
            for key, (source, obj) in fresh.items():
                self._put(kind, key, obj, source)
            health = self._health.setdefault(kind, KindHealth())
            first = not health.synced
            if self._absent.pop(kind, None) is not None:
                log.info("%s is served by the API server now", kind)
            health.synced = True
            self._mark_healthy(kind, health)
            self._applied()
        if first:
            log.debug("loaded %d %s objects", len(fresh), kind)

    def put(self, kind: str, obj: Object, source: str = "") -> None:
        """Add or replace one object (an ADDED or MODIFIED event)."""
        with self.lock:
            if kind not in self._objects:
                self._objects[kind] = {}
            if kind not in self._sources:
                self._sources[kind] = {}
            self._put(kind, key_of(obj), obj, source)
            self._applied()

    def delete(self, kind: str, obj: Object) -> None:
        """Remove an object (a DELETED event). Indexes hear of it even when the store never held
        it, as client-go's handlers do: a view may know an object the watch has not shown yet
        (the scheduler's assumed pods)."""
        with self.lock:
            key = key_of(obj)
            old = self._objects.get(kind, {}).get(key)
            if old is None and (transform := self.transforms.get(kind)) is not None:
                old = transform(obj)
            self._delete(kind, key, old or obj)
            self._applied()

    def _put(self, kind: str, key: ObjectKey, obj: Object, source: str) -> None:
        transform = self.transforms.get(kind)
        if transform is not None:
            obj = transform(obj)
        objects = self._objects[kind]
        old = objects.get(key)
        if _unchanged(old, obj):
            return
        objects[key] = obj
        self._sources[kind][key] = source
        for index in self._indexes:
            index.object_put(kind, key, obj, old, source)

    def _delete(self, kind: str, key: ObjectKey, old: Object) -> None:
        self._objects.get(kind, {}).pop(key, None)
        self._sources.get(kind, {}).pop(key, None)
        for index in self._indexes:
            index.object_deleted(kind, key, old)

    def _applied(self) -> None:
        for index in self._indexes:
            index.changes_applied()

    def set_problems(self, problems: tuple[LoadProblem, ...]) -> None:
        with self.lock:
            self._file_problems = problems

    # --- the reflector's sink --------------------------------------------------------------------
    def replaced(self, kind: WatchedKind, objects: list[dict[str, Any]]) -> None:
        self.replace(kind.kind, objects)

    def changed(self, kind: WatchedKind, event: str, obj: dict[str, Any]) -> None:
        if event == "DELETED":
            self.delete(kind.kind, obj)
        else:
            self.put(kind.kind, obj)

    def watching(self, kind: WatchedKind) -> None:
        with self.lock:
            self._mark_healthy(kind.kind, self._health.setdefault(kind.kind, KindHealth()))

    def failed(self, kind: WatchedKind, reason: str, error: str) -> None:
        """A watch broke (`reason` "gone": expired, relisting; "absent": the kind is not served;
        "error": anything else)."""
        if reason == "absent":
            self._not_served(kind, error)
            return
        with self.lock:
            health = self._health.setdefault(kind.kind, KindHealth())
            now = self.clock()
            if health.healthy or health.broken_since is None:
                health.broken_since = now
            health.healthy = False
            stale = now - health.broken_since
            due = (
                now - health.last_logged >= self.settings.stale_log_interval or health.last_logged < health.broken_since
            )
            if due and reason != "gone":
                health.last_logged = now
            listed = health.synced
        if self.on_failure is not None:
            self.on_failure(kind.kind, reason)
        if reason == "gone":
            log.info("watch of %s expired (%s); relisting", kind.plural, error)
        elif due and not listed:  # there is no last good state to speak of
            log.warning(
                "cannot list %s yet (%s); not ready until it is listed, failing for %.1fs", kind.plural, error, stale
            )
        elif due:
            log.warning("watch of %s broke (%s); serving the last good state, %.1fs stale", kind.plural, error, stale)

    def _not_served(self, kind: WatchedKind, error: str) -> None:
        """The API server answers 404 for the kind's collection: it holds none of it (a CRD deleted
        takes its objects with it), and waiting for it would hold the component unready forever."""
        with self.lock:
            first = self._absent.pop(kind.kind, None) is None
            self.replace(kind.kind, [])
            self._absent[kind.kind] = error
            self._applied()  # the problems changed: views rebuild
        if self.on_failure is not None:
            self.on_failure(kind.kind, "absent")
        if first:
            log.warning(
                "%s (%s) is not served by the API server (%s): treated as none; is its CRD installed?",
                kind.kind,
                kind.api_version,
                error,
            )

    def _mark_healthy(self, kind: str, health: KindHealth) -> None:
        if health.broken_since is not None and not health.healthy:
            log.info("watch of %s restored after %.1fs", kind, self.clock() - health.broken_since)
        health.healthy, health.broken_since = True, None


class LoopIndex:
    """Hands every change to `inner` on an event loop, in order: for views that only the loop may
    touch (the extender's node table, read by requests between two awaits)."""

    def __init__(self, inner: StoreIndex, loop: asyncio.AbstractEventLoop) -> None:
        self.inner, self.loop = inner, loop

    def _post(self, call: Callable[..., None], *args: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(call, *args)
        except RuntimeError:  # the loop closed under us: shutting down
            pass

    def object_put(self, kind: str, key: ObjectKey, obj: Object, old: Object | None, source: str) -> None:
        self._post(self.inner.object_put, kind, key, obj, old, source)

    def object_deleted(self, kind: str, key: ObjectKey, old: Object) -> None:
        self._post(self.inner.object_deleted, kind, key, old)

    def changes_applied(self) -> None:
        self._post(self.inner.changes_applied)
