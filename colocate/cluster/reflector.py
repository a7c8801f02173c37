"""List-then-watch of one kind over the Kubernetes REST protocol, in a worker thread.

The official client is synchronous, so each kind gets a thread that lists (in pages), then watches
from the list's resourceVersion with bookmarks, re-watching from the last version it saw when the
server ends a stream. A `410 Gone` (the version was compacted) means relist; a `404` for the
collection means the kind is not served (its CRD is not installed: the sink hears "absent", and the
list is asked again on the backoff, so a CRD installed later is picked up); any other failure means
back off (doubling, capped) and try again. Events go to a `ReflectorSink`; the thread never touches
the event loop.

Backing off protects a server that answers with errors; it must not leave a watch waiting long
after a server that was unreachable (a restart) answers again. The reflectors of one source share a
`ServerReturn`: while any waits after a connection failure, one prober asks the server's `/readyz`,
and its first 200 wakes every waiting reflector at once (within `probe_interval` of the server
being ready), whatever its own backoff had reached.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import urllib3
from kubernetes.client import ApiClient
from kubernetes.watch.watch import iter_resp_lines

from colocate.cluster.kinds import WatchedKind
from colocate.cluster.throttle import bucket_of, throttle

log = logging.getLogger("colocate.informer")

GONE = 410
NOT_FOUND = 404
JSON = "application/json"
#: What a metadata-only kind asks for, as client-go's metadata client does: PartialObjectMetadata
#: (kube-apiserver sends each object's metadata only), or, from a server that cannot, whole objects.
METADATA_LIST = f"{JSON};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,{JSON}"
METADATA_WATCH = f"{JSON};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,{JSON}"


@dataclass(frozen=True)
class ReflectorSettings:
    """Timing of list/watch; tests shorten them, production keeps client-go's order of magnitude."""

    page_size: int = 500
    watch_timeout: int = 300  # seconds the API server keeps one watch open (client-go: 5-10 min)
    #: connect and TLS handshake: a server still starting holds a handshake, and a watch must not
    #: sit in one long after the server is back (nor be retried behind our back: `without_retries`)
    connect_timeout: float = 3.0
    read_timeout: float = 60.0  # a list page, and the silence tolerated beyond watch_timeout
    backoff_initial: float = 0.8
    backoff_max: float = 30.0
    probe_interval: float = 0.25  # how often an unreachable server's /readyz is asked (ServerReturn)


class Gone(Exception):
    """The resourceVersion we watch from is too old: relist."""


class NotServed(Exception):
    """The API server answers 404 for the kind's collection: it does not serve the kind."""


#: failures that mean no answer from the server at all (refused, reset, timed out)
UNREACHABLE = (urllib3.exceptions.HTTPError, OSError)


class ServerReturn:
    """Wakes the backing-off reflectors of one API server as soon as it answers `/readyz` again."""

    def __init__(self, api: ApiClient, stop: threading.Event, settings: ReflectorSettings) -> None:
        self.api, self.stop, self.settings = api, stop, settings
        self._changed = threading.Condition()
        self._returns = 0  # bumped each time the server answers again after being unreachable
        self._returned_at: float | None = None  # time.monotonic() of the last return
        self._probing = False

    def back_off(self, seconds: float, *, unreachable: bool, attempt_started: float) -> None:
        """Wait `seconds`, or until the server answers again (when a prober is asking), or `stop`.
        `unreachable`: this failure had no answer at all, so start asking. An attempt begun before
        the server's last return failed against a server still starting: try again at once."""
        with self._changed:
            if self._returned_at is not None and attempt_started < self._returned_at:
                return
            seen = self._returns
            if unreachable and not self._probing:
                self._probing = True
                threading.Thread(target=self._probe, name="apiserver-return", daemon=True).start()
            self._changed.wait_for(lambda: self._returns != seen or self.stop.is_set(), timeout=seconds)

    def release(self) -> None:
        """Wake every waiting reflector (called when stopping)."""
        with self._changed:
            self._changed.notify_all()

    def _probe(self) -> None:
        while not self.stop.is_set():
            if self._answers():
                with self._changed:
                    self._returns += 1
                    self._returned_at = time.monotonic()
                    self._probing = False
                    self._changed.notify_all()
                log.info("the API server answers again; resuming every watch")
                return
            self.stop.wait(self.settings.probe_interval)
        with self._changed:
            self._probing = False

    def _answers(self) -> bool:
        """`/readyz` is 200 (or refused to us: 401, 403, 404 still mean a server that answers).
        Asked once, without the client's retries: a server still starting holds a TLS handshake."""
        host = self.api.configuration.host.rstrip("/")
        try:
            response = self.api.rest_client.pool_manager.request(
                "GET",
                f"{host}/readyz",
                headers=_auth_headers(self.api),
                timeout=urllib3.Timeout(1.0, 2.0),
                retries=False,
            )
        except Exception:  # noqa: BLE001 - refused, reset, timed out: not back yet
            return False
        return int(response.status) in (200, 401, 403, 404)


def _auth_headers(api: ApiClient) -> dict[str, str]:
    """The bearer token the client sends, if it authenticates by one (certificates are in the pool)."""
    setting = api.configuration.auth_settings().get("BearerToken") or {}
    value = setting.get("value")
    return {"Authorization": str(value)} if value else {}


class ReflectorSink(Protocol):
    def replaced(self, kind: WatchedKind, objects: list[dict[str, Any]]) -> None: ...
    def changed(self, kind: WatchedKind, event: str, obj: dict[str, Any]) -> None: ...
    def watching(self, kind: WatchedKind) -> None: ...
    def failed(self, kind: WatchedKind, reason: str, error: str) -> None: ...


def slim(obj: dict[str, Any], kind: WatchedKind) -> dict[str, Any]:
    """Drop what no handler reads and costs memory (managedFields), and fill in kind/apiVersion
    (a PartialObjectMetadata of a metadata-only watch is named as the kind it is the metadata of)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    if kind.metadata_only:
        obj["kind"], obj["apiVersion"] = kind.kind, kind.api_version
    else:
        obj.setdefault("kind", kind.kind)
        obj.setdefault("apiVersion", kind.api_version)
    return obj


class Reflector:
    def __init__(
        self,
        kind: WatchedKind,
        api: ApiClient,
        sink: ReflectorSink,
        settings: ReflectorSettings,
        stop: threading.Event,
        server: ServerReturn | None = None,
    ) -> None:
        self.kind, self.api, self.sink, self.settings, self.stop = kind, api, sink, settings, stop
        self.server = server or ServerReturn(api, stop, settings)
        self._response: Any = None
        self._watch_was_open = False  # the current attempt reached an open watch stream

    def run(self) -> None:
        """Until `stop` is set: list, watch, recover. Never raises."""
        version: str | None = None
        backoff = self.settings.backoff_initial
        while not self.stop.is_set():
            attempt_started = time.monotonic()
            try:
                self._watch_was_open = False
                if version is None:
                    version = self._list()
                version = self._watch(version)
                backoff = self.settings.backoff_initial
            except Gone as exc:
                self.sink.failed(self.kind, "gone", str(exc))
                version = None
            except NotServed as exc:  # no CRD (yet): the kind is empty; ask again on the backoff
                self.sink.failed(self.kind, "absent", str(exc))
                version = None
                self.server.back_off(backoff, unreachable=False, attempt_started=attempt_started)
                backoff = min(backoff * 2, self.settings.backoff_max)
            except Exception as exc:  # a broken connection, a 5xx, a bad stream: keep the cache, retry
                if self.stop.is_set():
                    break
                self.sink.failed(self.kind, "error", f"{type(exc).__name__}: {exc}")
                if self._watch_was_open:
                    # A watch the server accepted and later cut (a restart, a load balancer's idle
                    # close) is no reason to wait longer each time: only failures in a row back off.
                    backoff = self.settings.backoff_initial
                self.server.back_off(backoff, unreachable=isinstance(exc, UNREACHABLE), attempt_started=attempt_started)
                backoff = min(backoff * 2, self.settings.backoff_max)

    def interrupt(self) -> None:
        """Unblock a thread waiting on the watch socket (called from another thread at shutdown)."""
        response = self._response
        sock = getattr(getattr(response, "connection", None), "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _get(self, query: list[tuple[str, Any]], read_timeout: float, accept: str = JSON) -> Any:
        if self.kind.field_selector:
            query.append(("fieldSelector", self.kind.field_selector))
        request = self.api.param_serialize(
            "GET",
            self.kind.collection_path(),
            query_params=query,
            header_params={"Accept": accept},
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(*request, _request_timeout=(self.settings.connect_timeout, read_timeout))
        if response.status == GONE:
            response.read()
            raise Gone(f"{self.kind.kind}: HTTP 410 Gone")
        if response.status == NOT_FOUND:
            response.read()
            raise NotServed(f"GET {self.kind.collection_path()}: HTTP 404")
        if not 200 <= response.status < 300:
            body = response.read()[:300]
            raise RuntimeError(f"{self.kind.kind}: HTTP {response.status}: {body!r}")
        return response

    def list_once(self) -> str:
        """One paged list into the sink, for a command that reads the cluster once; errors
        propagate. Returns the resourceVersion listed at."""
        return self._list()

    def _list(self) -> str:
        objects: list[dict[str, Any]] = []
        token = ""
        while True:
            query: list[tuple[str, Any]] = [("limit", self.settings.page_size)]
            if token:
                query.append(("continue", token))
            accept = METADATA_LIST if self.kind.metadata_only else JSON
            page = json.loads(self._get(query, self.settings.read_timeout, accept).read())
            objects.extend(slim(item, self.kind) for item in page.get("items") or ())
            metadata = page.get("metadata") or {}
            token = metadata.get("continue") or ""
            if not token:
                break
        self.sink.replaced(self.kind, objects)
        log.debug("listed %d %s at resourceVersion %s", len(objects), self.kind.plural, metadata.get("resourceVersion"))
        return str(metadata.get("resourceVersion") or "")

    def _watch(self, version: str) -> str:
        query = [
            ("watch", "true"),
            ("resourceVersion", version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", self.settings.watch_timeout),
        ]
        self._watch_was_open = False
        response = self._get(
            query,
            self.settings.watch_timeout + self.settings.read_timeout,
            METADATA_WATCH if self.kind.metadata_only else JSON,
        )
        self._watch_was_open = True
        self._response = response.response
        try:
            self.sink.watching(self.kind)
            for event in self._events(response.response):
                if self.stop.is_set():
                    break
                version = self._handle(event) or version
        finally:
            self._response = None
            response.response.release_conn()
        return version

    @staticmethod
    def _events(raw: Any) -> Iterator[dict[str, Any]]:
        for line in iter_resp_lines(raw):
            if line.strip():
                yield json.loads(line)

    def _handle(self, event: dict[str, Any]) -> str | None:
        """Apply one watch event; returns the resourceVersion it carries."""
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            code = obj.get("code")
            if code == GONE:
                raise Gone(f"{self.kind.kind}: {obj.get('message', 'resourceVersion too old')}")
            raise RuntimeError(f"{self.kind.kind}: watch error {code}: {obj.get('message')}")
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self.sink.changed(self.kind, kind, slim(obj, self.kind))
        return str(version) if version else None


def without_retries(api: ApiClient) -> ApiClient:
    """A client like `api` whose requests urllib3 does not retry behind the caller's back (its
    default retries a connection three times): a reflector counts, backs off and asks again itself."""
    configuration = copy.copy(api.configuration)
    configuration.retries = False
    bucket = bucket_of(api)  # the same rate limit as the client it copies
    return throttle(ApiClient(configuration), 0, 0, bucket) if bucket is not None else ApiClient(configuration)


def stop_all(stop: threading.Event, reflectors: Sequence[Reflector]) -> None:
    """Ask every reflector to end, unblocking any that waits on its watch socket or backs off."""
    stop.set()
    for reflector in reflectors:
        reflector.interrupt()
        reflector.server.release()


async def run_threads(threads: Sequence[threading.Thread], close: Callable[[], None], timeout: float = 5.0) -> None:
    """Start `threads` and wait until cancelled; then `close()` them and give them `timeout`
    seconds to end, off the event loop (a thread may be finishing a blocking read)."""
    for thread in threads:
        thread.start()
    try:
        await asyncio.Event().wait()
    finally:
        close()
        await asyncio.get_running_loop().run_in_executor(None, _join, threads, timeout)


def _join(threads: Sequence[threading.Thread], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
