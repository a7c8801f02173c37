"""`/healthz`, `/readyz` and `/metrics` of every component, on their own listeners: the one probe
and metrics server (an aiohttp adapter, like the webhook port's).

controller-runtime's managers serve `/metrics` on `--metrics-bind-address` and `/healthz`,
`/readyz` on `--health-probe-bind-address`; the webhook, the manager, the descheduler and the
koordlet do the same through `ProbeListeners` (the extender serves the same answers beside its
verbs, on its own port, through `answer_handler`). Each component says what its paths answer
(`component_answers`); how a client is served is decided here, once.

They share the component's event loop with its real work, so what a client of theirs may cost is
bounded here (200 connections pipelining 1,000 scrapes each took the webhook's admissions from ~290
to 20 in 15 s, at 5 ms of CPU a scrape):
- a listener holds at most `PROBE_MAX_CONNECTIONS`; at the cap the oldest connection of the
  client address holding the most is closed for the new one, so kubelet's and Prometheus's
  connections are not shut out by a client opening many;
- a connection is answered at most `PROBE_REQUESTS_PER_SECOND` times a second (pipelined requests
  wait their turn, costing nothing meanwhile), so all the listener's clients together cost at most
  cap x rate answers a second;
- the metrics exposition may be rendered at most once per `cache` seconds (`CachedExposition`);
  scrapes in between get the same bytes.

When both addresses are the same, one listener serves the paths of both.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, NamedTuple

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

PROBE_MAX_CONNECTIONS: Final = 64
PROBE_REQUESTS_PER_SECOND: Final = 10
PROBE_IDLE_TIMEOUT: Final = 30.0
HEALTH_PATHS: Final = frozenset({"/healthz", "/readyz"})
METRICS_PATH: Final = "/metrics"
TEXT: Final = "text/plain; charset=utf-8"

Address = tuple[str, int]


class Answer(NamedTuple):
    """What a probe path answers now."""

    status: int
    body: bytes
    content_type: str = TEXT


AnswerOf = Callable[[], Answer]


def source_of(peer: Any) -> str:
    """The client a connection counts against: its IPv4 address, or its IPv6 /64 (one host
    commonly holds a whole /64, so an address within it costs an attacker nothing)."""
    host = str(peer[0]) if isinstance(peer, tuple) and peer else str(peer)
    try:
        address = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False).network_address) + "/64"
    return host


class CachedExposition:
    """The metrics exposition, rendered at most once per `seconds` (`clock` is injected for tests)."""

    def __init__(
        self,
        render: Callable[[], bytes],
        seconds: float = 0.0,
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


Readiness = Callable[[], tuple[bool, str]]


def readiness_of(ok: Callable[[], bool], failing: str) -> Readiness:
    """A readiness that says only `ok`, or `failing` (the reason) while `ok()` does not hold."""

    def readiness() -> tuple[bool, str]:
        ready = ok()
        return ready, "ok" if ready else failing

    return readiness


def said(readiness: Readiness) -> AnswerOf:
    """A probe answering 200 while `readiness()` holds, else 503; with the line it says either way."""

    def answer() -> Answer:
        ok, text = readiness()
        return Answer(200 if ok else 503, text.encode())

    return answer


def exposition(render: Callable[[], bytes], cache: float = 0.0, content_type: str = CONTENT_TYPE_LATEST) -> AnswerOf:
    """`/metrics`: the Prometheus exposition `render` makes, at most once per `cache` seconds."""
    cached = CachedExposition(render, cache)
    return lambda: Answer(200, cached(), content_type)


def component_answers(
    readiness: Readiness,
    registry: CollectorRegistry,
    *,
    healthy: Readiness | None = None,
    paths: frozenset[str] = HEALTH_PATHS | {METRICS_PATH},
) -> dict[str, AnswerOf]:
    """A component's probe paths: `/healthz` while `healthy()` (always, if not given), `/readyz`
    once `readiness()` says so (with what it says), `/metrics` the exposition of `registry`; only
    those of `paths`."""
    answers = {
        "/healthz": said(healthy) if healthy is not None else (lambda: Answer(200, b"ok")),
        "/readyz": said(readiness),
        METRICS_PATH: exposition(lambda: generate_latest(registry)),
    }
    return {path: answer for path, answer in answers.items() if path in paths}


def _response(answer: Answer, headers: Mapping[str, str]) -> web.Response:
    response = web.Response(status=answer.status, body=answer.body, headers={"Content-Type": answer.content_type})
    response.headers.update(headers)
    return response


def answer_handler(answer: AnswerOf) -> Callable[[web.Request], Awaitable[web.Response]]:
    """A route handler of an aiohttp application answering `answer` (the extender's probe paths)."""

    async def handler(request: web.Request) -> web.Response:
        return _response(answer(), {})

    return handler


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
        """Wait for this connection's next turn: at most `rate` answers a second."""
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
        answers: Mapping[str, AnswerOf],
        *,
        headers: Mapping[str, str] | None = None,
        reuse_port: bool | None = None,
        max_connections: int = PROBE_MAX_CONNECTIONS,
        rate: float = PROBE_REQUESTS_PER_SECOND,
    ) -> None:
        self.address, self.answers, self.reuse_port = address, answers, reuse_port
        self.headers: Mapping[str, str] = headers or {}
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
            return _response(Answer(404, b"404: Not Found"), self.headers)
        if request.method not in ("GET", "HEAD"):
            return _response(Answer(405, b"405: Method Not Allowed"), {**self.headers, "Allow": "GET,HEAD"})
        return _response(answer(), self.headers)

    def _connection(self) -> ProbeConnection:
        assert self.server is not None
        loop = asyncio.get_running_loop()
        return ProbeConnection(self.server, self, loop=loop, keepalive_timeout=PROBE_IDLE_TIMEOUT, access_log=None)

    @property
    def port(self) -> int:
        """The port listened on (the one the system chose for port 0)."""
        assert self.listening is not None
        return int(self.listening.sockets[0].getsockname()[1])

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
    """The health and metrics listeners of one process: the health paths of `answers` on `health`,
    `/metrics` on `metrics` (None: not served, as controller-runtime's bind address `0`)."""

    def __init__(
        self,
        health: Address | None,
        metrics: Address | None,
        answers: Mapping[str, AnswerOf],
        *,
        headers: Mapping[str, str] | None = None,
        reuse_port: bool | None = None,
    ) -> None:
        listeners: dict[Address, set[str]] = {}
        if health is not None:
            listeners.setdefault(health, set()).update(HEALTH_PATHS & answers.keys())
        if metrics is not None and METRICS_PATH in answers:
            listeners.setdefault(metrics, set()).add(METRICS_PATH)
        self.listeners = listeners
        self.answers, self.headers, self.reuse_port = answers, headers, reuse_port
        self.running: list[ProbeListener] = []

    def describe(self, flags: Mapping[str, str]) -> str:
        """Where the listeners are, with the flag (`flags`, by path) that set each address."""
        return " or ".join(
            f"{host}:{port} ({', '.join(sorted({flags[p] for p in paths if p in flags}))})"
            for (host, port), paths in self.listeners.items()
        )

    @property
    def ports(self) -> list[int]:
        """The ports listened on, in the order of `listeners`."""
        return [listener.port for listener in self.running]

    async def start(self) -> None:
        for address, paths in self.listeners.items():
            answers = {path: self.answers[path] for path in paths}
            listener = ProbeListener(address, answers, headers=self.headers, reuse_port=self.reuse_port)
            await listener.start()
            self.running.append(listener)

    async def stop(self) -> None:
        for listener in self.running:
            await listener.stop()
        self.running.clear()
