"""Health probes and metrics on their own listener, as controller-runtime serves them.

controller-runtime's managers serve `/metrics` on `--metrics-bind-address` and `/healthz`,
`/readyz` on `--health-probe-bind-address`, never on the webhook port; so does `colocate serve`.
Both are plain HTTP, read by kubelet and Prometheus inside the cluster; the NetworkPolicy says who
may reach them (`manifests/deploy/networkpolicy.yaml`).

They share the server process's event loop with admissions, so what a client of theirs may cost
is bounded here (200 connections pipelining 1,000 scrapes each took admissions from ~290 to 20 in
15 s, at 5 ms of CPU a scrape):
- a listener holds at most `PROBE_MAX_CONNECTIONS`; at the cap the oldest connection of the
  client address holding the most is closed for the new one, so kubelet's and Prometheus's
  connections are not shut out by a client opening many;
- a connection is answered at most `PROBE_REQUESTS_PER_SECOND` times a second (pipelined requests
  wait their turn, costing nothing meanwhile), so all the listener's clients together cost at most
  cap x rate answers a second;
- the metrics exposition is rendered at most once per `EXPOSITION_CACHE_SECONDS`; scrapes in
  between get the same bytes.

When both addresses are the same, one listener serves the three paths; `0` turns metrics off (as
controller-runtime's `--metrics-bind-address=0`). With `--workers` every worker listens on the
same addresses (SO_REUSEPORT), like on the webhook port: any worker answers, and in multiprocess
mode a scrape reads every worker's series.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from aiohttp import web

from webhook.connections import EXPOSITION_CACHE_SECONDS, Address
from webhook.gate import source_of
from webhook.metrics import CONTENT_TYPE, WebhookMetrics
from webhook.server import SERVER_NAME, Lifecycle, readiness
from webhook.state import StateHolder

PROBE_MAX_CONNECTIONS: Final = 64
PROBE_REQUESTS_PER_SECOND: Final = 10
PROBE_IDLE_TIMEOUT: Final = 30.0


def _text(status: int, text: str) -> web.Response:
    response = web.Response(status=status, text=text)
    response.headers["Server"] = SERVER_NAME
    return response


class CachedExposition:
    """The metrics exposition, rendered at most once per `seconds` (`clock` is injected for tests)."""

    def __init__(
        self,
        render: Callable[[], bytes],
        seconds: float = EXPOSITION_CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.render, self.seconds, self.clock = render, seconds, clock
        self.body, self.expires, self.renders = b"", float("-inf"), 0

    def __call__(self) -> bytes:
        now = self.clock()
        if now >= self.expires:
            self.body, self.expires = self.render(), now + self.seconds
            self.renders += 1
        return self.body


def probe_answers(
    paths: set[str],
    state: StateHolder,
    metrics: WebhookMetrics,
    lifecycle: Lifecycle,
    exposition_cache: float = EXPOSITION_CACHE_SECONDS,
) -> dict[str, Callable[[], web.Response]]:
    """The answer of each of `paths` (of /healthz, /readyz and /metrics)."""
    exposition = CachedExposition(metrics.render, exposition_cache)
    answers: dict[str, Callable[[], web.Response]] = {
        "/healthz": lambda: _text(200, "ok"),
        "/readyz": lambda: _text(*readiness(lifecycle, state)),
        "/metrics": lambda: web.Response(
            body=exposition(), headers={"Content-Type": CONTENT_TYPE, "Server": SERVER_NAME}
        ),
    }
    return {path: answers[path] for path in paths}


class ProbeConnection(web.RequestHandler):
    """aiohttp's protocol for one probe connection: counted by its listener, and paced."""

    __slots__ = ("listener", "source", "next_answer")

    def __init__(self, manager: web.Server, listener: ProbeListener, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self.listener, self.source, self.next_answer = listener, "", 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.source = source_of(transport.get_extra_info("peername"))
        self.listener.opened(self)
        super().connection_made(transport)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.listener.lost(self)
        super().connection_lost(exc)

    async def pace(self) -> None:
        """Wait for this connection's next turn: at most PROBE_REQUESTS_PER_SECOND answers a second."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self.next_answer > now:
            await asyncio.sleep(self.next_answer - now)
            now = self.next_answer
        self.next_answer = now + 1 / self.listener.rate

    def evict(self) -> None:
        """Closed for a newer connection: at once (a close would wait for a client that reads nothing)."""
        if self.transport is not None:
            self.transport.abort()


class ProbeListener:
    """One address's probe paths, behind aiohttp's low-level server, with a connection cap."""

    def __init__(
        self,
        address: Address,
        answers: dict[str, Callable[[], web.Response]],
        *,
        reuse_port: bool | None = None,
        max_connections: int = PROBE_MAX_CONNECTIONS,
        rate: float = PROBE_REQUESTS_PER_SECOND,
    ) -> None:
        self.address, self.answers, self.reuse_port = address, answers, reuse_port
        self.max_connections, self.rate = max_connections, rate
        #: open connections by client address, the oldest first
        self.by_source: dict[str, OrderedDict[ProbeConnection, None]] = {}
        self.open = 0
        self.server: web.Server | None = None
        self.listening: asyncio.Server | None = None

    def opened(self, connection: ProbeConnection) -> None:
        if self.open >= self.max_connections:
            heaviest = max(self.by_source, key=lambda source: len(self.by_source[source]))
            oldest = next(iter(self.by_source[heaviest]))
            self.lost(oldest)
            oldest.evict()
        self.by_source.setdefault(connection.source, OrderedDict())[connection] = None
        self.open += 1

    def lost(self, connection: ProbeConnection) -> None:
        connections = self.by_source.get(connection.source)
        if connections is None or connection not in connections:
            return
        del connections[connection]
        if not connections:
            del self.by_source[connection.source]
        self.open -= 1

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        await request.protocol.pace()  # type: ignore[attr-defined]
        answer = self.answers.get(request.path)
        if answer is None:
            return _text(404, "404: Not Found")
        if request.method not in ("GET", "HEAD"):
            response = _text(405, "405: Method Not Allowed")
            response.headers["Allow"] = "GET,HEAD"
            return response
        return answer()

    def _connection(self) -> ProbeConnection:
        assert self.server is not None
        loop = asyncio.get_running_loop()
        return ProbeConnection(self.server, self, loop=loop, keepalive_timeout=PROBE_IDLE_TIMEOUT, access_log=None)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.server = web.Server(self.handle, loop=loop)
        host, port = self.address
        self.listening = await loop.create_server(
            self._connection, host or None, port, reuse_port=self.reuse_port, backlog=128
        )

    async def stop(self) -> None:
        if self.listening is not None:
            self.listening.close()
            self.listening = None
        if self.server is not None:
            await self.server.shutdown(1.0)
            self.server = None


class ProbeListeners:
    """The health and metrics listeners of one server process."""

    def __init__(
        self,
        health: Address | None,
        metrics_address: Address | None,
        state: StateHolder,
        metrics: WebhookMetrics,
        lifecycle: Lifecycle,
        *,
        reuse_port: bool | None = None,
        exposition_cache: float = EXPOSITION_CACHE_SECONDS,
    ) -> None:
        self.exposition_cache = exposition_cache
        listeners: dict[Address, set[str]] = {}
        if health is not None:
            listeners.setdefault(health, set()).update({"/healthz", "/readyz"})
        if metrics_address is not None:
            listeners.setdefault(metrics_address, set()).add("/metrics")
        self.listeners = listeners
        self.state, self.metrics, self.lifecycle, self.reuse_port = state, metrics, lifecycle, reuse_port
        self.running: list[ProbeListener] = []

    def describe(self) -> str:
        flags = {"/healthz": "--health-probe-bind-address", "/metrics": "--metrics-bind-address"}
        return " or ".join(
            f"{host}:{port} ({', '.join(sorted({flags[p] for p in paths if p in flags}))})"
            for (host, port), paths in self.listeners.items()
        )

    async def start(self) -> None:
        for address, paths in self.listeners.items():
            answers = probe_answers(paths, self.state, self.metrics, self.lifecycle, self.exposition_cache)
            listener = ProbeListener(address, answers, reuse_port=self.reuse_port)
            await listener.start()
            self.running.append(listener)

    async def stop(self) -> None:
        for listener in self.running:
            await listener.stop()
        self.running.clear()
