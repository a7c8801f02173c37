"""The webhook port's HTTP: aiohttp's low-level `web.Server`, one handler, admission paths only.

aiohttp frames the requests (its llhttp parser: no smuggling through Content-Length and
Transfer-Encoding together, no control bytes in fields), bounds their heads (`MAX_LINE`,
`MAX_FIELD`, `MAX_FIELDS`: 400 and close past them), keeps connections alive, answers pipelined
requests in order and stops reading a client that reads no answers. Its keep-alive timer closes a
connection idle for `--idle-timeout`, or whose next request's head never finishes (a trickled head
does not move it). The low-level server is used rather than an `Application`: the port has a fixed,
small set of paths, and a router, middlewares and signals would cost every admission
(`benchmarks/README.md`).

What this module adds, per request:
- an admission path asked with POST is an admission; another method gets 405 with `Allow: POST`,
  any other path 404. Probes and metrics are not served here (`webhook.probes`, their own
  listener): a scraper or a prober never competes with the API server for this port;
- with `--client-ca`, an admission needs a verified client certificate (403);
- a `Content-Encoding` other than identity is refused before a byte of the body is read (415);
  aiohttp never inflates a body (`auto_decompress=False`);
- `Expect: 100-continue` is answered before the body is read; any other expectation gets 417;
- the body must stay within `--max-body` (an AdmissionReview denial, with the uid when its first
  64 KiB hold it, chunked or not; `client_max_size` is the same bound for aiohttp's own readers),
  within the connection's fair share of the bodies held at once (`webhook.budget`, 503), and
  arrive within `--first-request-timeout` of its headers (408). Each refusal closes the connection;
- an `Upgrade` is answered as a plain request and the connection closed.

The connection itself (cap, first-request deadline, TLS) is `webhook.gate`'s; this module tells the
gate when a request starts and ends, so that it knows which connections are idle.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Final, TypedDict, Unpack

from aiohttp import web
from aiohttp.http import HttpVersion11

from policies.admission.plugin import default_rand_int
from webhook.budget import BodyBudget
from webhook.connections import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY,
    MAX_FIELD,
    MAX_FIELDS,
    MAX_HEAD_BYTES,
    MAX_LINE,
)
from webhook.metrics import WebhookMetrics
from webhook.plugin_deadline import PluginDeadline
from webhook.plugins import installed_on
from webhook.registry import Registry
from webhook.server import (
    NO_CLIENT_CERT,
    SERVER_NAME,
    UID_SCAN_BYTES,
    AdmissionEndpoint,
    Lifecycle,
    plain,
    refused_encoding,
)
from webhook.state import StateHolder

_READ_CHUNK: Final = 256 * 1024
_CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"


def _closing_answer(status: str, text: str) -> bytes:
    """A whole HTTP answer, for a connection closed before a request could be parsed."""
    return (
        f"HTTP/1.1 {status}\r\nServer: {SERVER_NAME}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(text)}\r\nConnection: close\r\n\r\n{text}"
    ).encode()


_HEAD_TOO_LARGE: Final = _closing_answer(
    "431 Request Header Fields Too Large", f"431: request head exceeds {MAX_HEAD_BYTES} bytes"
)
_HEADS_OVER_BUDGET: Final = _closing_answer(
    "503 Service Unavailable", "503: requests being received exceed --body-budget-bytes"
)


class ConnectionWatcher:
    """What the gate learns of a connection's requests (`webhook.gate._Gate`)."""

    def request_started(self) -> None: ...

    def request_ended(self) -> None: ...

    def head_refused(self) -> None: ...


_UNWATCHED: Final = ConnectionWatcher()


class PortConnection(web.RequestHandler):
    """aiohttp's protocol for one connection, with the gate that watches it, and aiohttp's own
    error answers (a malformed request's 400) naming no versions, like ours.

    aiohttp bounds a head's line, each field and their number, not their total (128 fields of
    8 KiB: 1 MiB a connection, which 500 connections turned into 700 MiB): the bytes received while
    no head is complete are counted here, refused past `MAX_HEAD_BYTES` (431, the connection
    closed) and held against the memory budget (`webhook.budget`) until the head is complete."""

    __slots__ = ("watcher", "budget", "head_bytes", "payload")

    def __init__(self, manager: web.Server, watcher: ConnectionWatcher, budget: BodyBudget, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self.watcher, self.budget = watcher, budget
        self.head_bytes = 0  # received since the last head was complete (and taken from the budget)
        self.payload: Any = None  # the body of the last complete head, while it is being received

    def data_received(self, data: bytes) -> None:
        payload = self.payload
        if payload is not None and not payload.is_eof():  # a body (held against the budget by its reader)
            super().data_received(data)
            return
        heads = self._request_count
        super().data_received(data)
        if self._request_count != heads:  # a head is complete: what followed it is its body or the next head
            self.budget.give(self.head_bytes)
            self.head_bytes = 0
            self.payload = self._messages[-1][1] if self._messages else None
            return
        # still no complete head: counted after parsing, so that the read that completes a head (and
        # carries the start of its body) is never refused; the parser holds at most one read more
        if self.head_bytes + len(data) > MAX_HEAD_BYTES:
            self._refuse_head(_HEAD_TOO_LARGE)
        elif not self.budget.take(self.head_bytes, len(data)):
            self._refuse_head(_HEADS_OVER_BUDGET)
        else:
            self.head_bytes += len(data)

    def _refuse_head(self, answer: bytes) -> None:
        """Past MAX_HEAD_BYTES (431) or the budget (503): answered and closed (a client still sending
        may see the close before the answer)."""
        self.watcher.head_refused()
        transport = self.transport
        self.force_close()
        if transport is not None:  # aborted: a TLS close would wait (up to 30 s) for a client still sending
            transport.write(answer)
            transport.abort()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.budget.give(self.head_bytes)
        self.head_bytes = 0
        super().connection_lost(exc)

    def handle_error(
        self, request: web.BaseRequest, status: int = 500, exc: BaseException | None = None, message: str | None = None
    ) -> web.StreamResponse:
        response = super().handle_error(request, status, exc, message)
        response.headers["Server"] = SERVER_NAME
        response.headers["Connection"] = "close"  # it is closed: say so, as with every other last answer
        return response


class WebhookPort:
    """The admission paths of one server process, behind aiohttp's low-level server."""

    def __init__(
        self,
        registry: Registry,
        state: StateHolder,
        metrics: WebhookMetrics,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        rand_int: Callable[[int], int] = default_rand_int,
        lifecycle: Lifecycle | None = None,
        body_timeout: float | None = None,
        client_certs: bool = False,
        budget: BodyBudget | None = None,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.lifecycle = lifecycle or Lifecycle()
        self.max_body, self.body_timeout, self.client_certs = max_body, body_timeout, client_certs
        self.budget = budget or BodyBudget()
        self.idle_timeout = idle_timeout
        self.endpoints = {
            route.path: AdmissionEndpoint(route, state, metrics, max_body, rand_int) for route in registry.routes
        }
        #: the endpoints of routes with installed plugins, served off the loop within a deadline
        self.guarded = {
            endpoint: PluginDeadline(endpoint, names)
            for endpoint in self.endpoints.values()
            if (names := installed_on(endpoint.route))
        }
        self.loop = asyncio.get_running_loop()
        self.server = web.Server(self.handle, request_factory=self._request, handler_cancellation=True, loop=self.loop)

    def _request(self, message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
        return web.BaseRequest(message, payload, protocol, writer, task, self.loop, client_max_size=self.max_body)

    def connection(self, watcher: ConnectionWatcher = _UNWATCHED) -> PortConnection:
        """The protocol of one connection (`webhook.gate` hands it the TLS transport)."""
        return PortConnection(
            self.server,
            watcher,
            self.budget,
            loop=self.loop,
            keepalive_timeout=self.idle_timeout,
            access_log=None,
            max_line_size=MAX_LINE,
            max_field_size=MAX_FIELD,
            max_headers=MAX_FIELDS,
            auto_decompress=False,
        )

    async def shutdown(self, timeout: float) -> None:
        """Close idle connections now; let those in a request finish (each closes after its answer:
        the port is draining) for up to `timeout`, then close the rest."""
        await self.server.shutdown(timeout)
        for guarded in self.guarded.values():
            guarded.close()

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        watcher: ConnectionWatcher = request.protocol.watcher  # type: ignore[attr-defined]
        watcher.request_started()
        try:
            endpoint = self.endpoints.get(_path(request))
            response: web.StreamResponse
            if endpoint is None:
                response = plain(404, "404: Not Found")
            elif request.method != "POST":
                response = plain(405, "405: Method Not Allowed")
                response.headers["Allow"] = "POST"
            else:
                response = await self.admit(endpoint, request)
            if self.lifecycle.draining or "Upgrade" in request.headers:
                response.force_close()
            return response
        finally:
            watcher.request_ended()

    async def admit(self, endpoint: AdmissionEndpoint, request: web.BaseRequest) -> web.StreamResponse:
        started = time.perf_counter()
        if self.client_certs and not _has_client_cert(request):
            return plain(403, NO_CLIENT_CERT)
        in_flight = endpoint.series.in_flight
        in_flight.inc()
        try:
            headers = request.headers
            refused = refused_encoding(headers.get("Content-Encoding"))
            if refused is not None:  # answered before a byte of the body is read; the connection is closed
                return endpoint.answer(endpoint.encoding(started, refused), started, close=True)
            expect = headers.get("Expect")
            if expect is not None:
                if expect.lower() != "100-continue":
                    return plain(417, "only Expect: 100-continue is understood", close=True)
                if request.version == HttpVersion11:
                    await request.writer.write(_CONTINUE)
            return await self._body_and_answer(endpoint, request, started)
        finally:
            in_flight.dec()

    async def _body_and_answer(
        self, endpoint: AdmissionEndpoint, request: web.BaseRequest, started: float
    ) -> web.StreamResponse:
        budget, content, length = self.budget, request.content, request.content_length
        held = 0
        try:
            if length is not None and length <= self.max_body and content.is_eof():
                # the usual case: a body of a few KiB arrived with its headers; no timer to arm
                body = content.read_nowait()
                if not budget.take(0, len(body)):
                    return endpoint.answer(endpoint.busy(started, budget.limit), started, close=True)
                held = len(body)
                if self.guarded and endpoint in self.guarded:
                    return endpoint.answer(await self.guarded[endpoint].serve(body, started), started, close=False)
                served = await endpoint.serve_reading(body) if endpoint.reads_live else endpoint.serve(body)
                return endpoint.answer(served, started, close=False)
            parts: list[bytes] = []
            try:
                async with asyncio.timeout(self.body_timeout):
                    if length is not None and length > self.max_body:  # refused from its head; its uid, if in reach
                        prefix = await content.read(UID_SCAN_BYTES)
                        return endpoint.answer(endpoint.too_large(started, prefix), started, close=True)
                    while chunk := await content.read(_READ_CHUNK):
                        if not budget.take(held, len(chunk)):
                            return endpoint.answer(endpoint.busy(started, budget.limit), started, close=True)
                        held += len(chunk)
                        parts.append(chunk)
                        if held > self.max_body:
                            prefix = b"".join(parts)
                            return endpoint.answer(endpoint.too_large(started, prefix), started, close=True)
            except TimeoutError:
                return endpoint.answer(endpoint.slow_body(started, self.body_timeout), started, close=True)
            body = b"".join(parts)
            if self.guarded and endpoint in self.guarded:
                return endpoint.answer(await self.guarded[endpoint].serve(body, started), started, close=False)
            served = await endpoint.serve_reading(body) if endpoint.reads_live else endpoint.serve(body)
            return endpoint.answer(served, started, close=False)
        finally:
            budget.give(held)


def _path(request: web.BaseRequest) -> str:
    """The request's path without its query (kube-apiserver appends `?timeout=10s`): from the raw
    target when it is a plain path (no URL object to build), else aiohttp's decoded `path`."""
    raw = request.raw_path
    if raw[:1] == "/" and "%" not in raw:
        return raw.partition("?")[0]
    return request.path


def _has_client_cert(request: web.BaseRequest) -> bool:
    """With --client-ca the TLS layer verifies a certificate when one is sent; here one must be."""
    transport = request.transport
    return transport is not None and bool(transport.get_extra_info("peercert"))


class PortOptions(TypedDict, total=False):
    """The options of `WebhookPort` that `build_server` passes on as they are: `body_timeout`, a
    request body must arrive within it; `client_certs`, admission paths need a verified client
    certificate (the TLS context asks for one: `--client-ca`); `idle_timeout`, a kept-alive
    connection without a request, or with a head not complete, is closed after it."""

    max_body: int
    rand_int: Callable[[int], int]
    lifecycle: Lifecycle | None
    body_timeout: float | None
    client_certs: bool
    idle_timeout: float


def build_server(
    registry: Registry,
    state: StateHolder,
    metrics: WebhookMetrics,
    *,
    max_body_bytes: int | None = None,
    max_connections: int | None = None,
    **options: Unpack[PortOptions],
) -> WebhookPort:
    """The port, with `max_body_bytes`, the request bodies all connections may hold at once, shared
    fairly between `max_connections` (`webhook.budget`)."""
    budget = BodyBudget(max_body_bytes) if max_connections is None else BodyBudget(max_body_bytes, max_connections)
    return WebhookPort(registry, state, metrics, budget=budget, **options)
