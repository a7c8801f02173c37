"""The listener's guard: every accepted connection is counted, capped and timed before it is TLS.

A connection costs memory from the moment it is accepted (TLS buffers, the HTTP parser), so it is
counted from then, not from its first request: past `max_connections` a new one is closed before
its TLS handshake, and counted. A connection must finish its handshake and send the headers of a
first request within `first_request_timeout` (a client that connects and says nothing is closed),
and a kept-alive connection is closed after `idle_timeout` without a request, or with a request
whose headers never finish (`webhook.http1`'s deadline). The body of a request must arrive within
`first_request_timeout` of its headers (the same deadline, for the body).

TLS is started here, after the gate, rather than by the listening socket, with the TLS protocol
class the running loop's own `start_tls` uses (`_tls_protocol`). On the stdlib loop that is
`asyncio.sslproto.SSLProtocol`, whose server allocates and zero-fills a 256 KiB read buffer per
connection before the handshake even starts (about 280 KiB per idle connection): `_LeanTLS` reads
in `TLS_READ_BUFFER` chunks instead (a TLS record is at most 16 KiB). uvloop's `SSLProtocol` (in
Cython, the faster of the two) mallocs its buffer without touching it, so an idle connection only
makes resident the pages a read fills. The connection tests pin the behaviour on both loops.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from asyncio import sslproto
from collections.abc import Callable
from typing import Any, Final

from cli.eventloop import is_uvloop
from webhook.connections import ConnectionLimits

log = logging.getLogger("colocate.connections")

TLS_READ_BUFFER: Final = 32 * 1024
LIMIT_WARNING_PERIOD: Final = 10.0


class _LeanTLS(sslproto.SSLProtocol):
    max_size = TLS_READ_BUFFER


def _tls_protocol(loop: asyncio.AbstractEventLoop) -> Any:
    """The class `loop.start_tls` would use on `loop` (uvloop's transports only take uvloop's)."""
    if is_uvloop(loop):
        import uvloop.loop

        return uvloop.loop.SSLProtocol  # type: ignore[attr-defined]
    return _LeanTLS


class _Gate(asyncio.Protocol):
    """One accepted connection: counted, upgraded to TLS, then handed to the HTTP protocol."""

    def __init__(self, site: GatedSite) -> None:
        self.site = site
        self.loop = asyncio.get_running_loop()
        self.raw: asyncio.Transport | None = None
        self.handler: asyncio.Protocol | None = None  # the HTTP protocol, once TLS is up
        self.pending: list[bytes] = []
        self.eof = False
        self.first_request = False
        self.counted = False
        self.deadline: asyncio.TimerHandle | None = None

    # -- accepted ----------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        raw: asyncio.Transport = transport  # type: ignore[assignment]
        self.raw = raw
        if self.site.open >= self.site.limits.max_connections:
            self.site.closed("over_limit")
            raw.abort()
            return
        self.counted = True
        self.site.opened(self)
        timeout = self.site.limits.first_request_timeout
        self.deadline = self.loop.call_later(timeout, self._first_request_overdue)
        waiter = self.loop.create_future()
        tls = self.site.tls_protocol(
            self.loop,
            self,
            self.site.tls_context,
            waiter,
            server_side=True,
            ssl_handshake_timeout=timeout,
            call_connection_made=False,
        )
        raw.set_protocol(tls)
        tls.connection_made(raw)
        waiter.add_done_callback(lambda done: self._handshake_done(done, tls))

    def _handshake_done(self, done: asyncio.Future[None], tls: Any) -> None:
        if done.cancelled() or done.exception() is not None:
            if not self.first_request:
                self.site.closed("tls_handshake_failed")
            if self.raw is not None:
                self.raw.close()
            self._release()  # the TLS layer tells the application of no loss before its handshake
            return
        if self.raw is None or self.raw.is_closing():  # lost during the handshake (the waiter says "done")
            self._release()
            return
        self.handler = self.site.connection(self.request_started)
        self.handler.connection_made(tls._get_app_transport())
        for data in self.pending:
            self.handler.data_received(data)
        self.pending.clear()
        if self.eof:
            self.handler.eof_received()

    def _first_request_overdue(self) -> None:
        self.deadline = None
        if not self.first_request and self.raw is not None:
            self.first_request = True  # counted once, as this reason only
            self.site.closed("first_request_timeout")
            self.raw.abort()

    def request_started(self) -> None:
        """The HTTP protocol read a request's headers: the first-request deadline is met."""
        if not self.first_request:
            self.first_request = True
            if self.deadline is not None:
                self.deadline.cancel()
                self.deadline = None

    # -- the TLS layer's application protocol: forwarded to the HTTP protocol -----------------
    def data_received(self, data: bytes) -> None:
        if self.handler is None:
            self.pending.append(data)
        else:
            self.handler.data_received(data)

    def eof_received(self) -> bool | None:
        if self.handler is None:
            self.eof = True
            return None
        result: bool | None = self.handler.eof_received()
        return result

    def pause_writing(self) -> None:
        if self.handler is not None:
            self.handler.pause_writing()

    def resume_writing(self) -> None:
        if self.handler is not None:
            self.handler.resume_writing()

    def _release(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        if self.counted:
            self.counted = False
            self.site.lost(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()
        if self.handler is not None:
            handler, self.handler = self.handler, None
            handler.connection_lost(exc)


class GatedSite:
    """A listener whose connections pass `_Gate`: counted, capped, timed, then TLS, then
    `connection(on_first_request)`'s protocol (`webhook.http1.HttpServer.connection`)."""

    def __init__(
        self,
        connection: Callable[[Callable[[], None]], asyncio.Protocol],
        host: str,
        port: int,
        *,
        tls_context: ssl.SSLContext,
        limits: ConnectionLimits,
        metrics: Any = None,
        backlog: int = 1024,
        reuse_port: bool | None = None,
    ) -> None:
        self.connection = connection
        self.host, self.port, self.backlog, self.reuse_port = host, port, backlog, reuse_port
        self.tls_context = tls_context
        self.tls_protocol: Any = _LeanTLS  # the running loop's, chosen in start()
        self.limits = limits
        self.metrics = metrics
        self.open = 0
        self.gates: set[_Gate] = set()
        self._next_limit_warning = 0.0
        self._server: asyncio.Server | None = None

    def opened(self, gate: _Gate) -> None:
        self.open += 1
        self.gates.add(gate)
        if self.metrics is not None:
            self.metrics.connections.inc()

    def lost(self, gate: _Gate) -> None:
        self.open -= 1
        self.gates.discard(gate)
        if self.metrics is not None:
            self.metrics.connections.dec()

    def closed(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.connections_closed.labels(reason).inc()
        if reason == "over_limit":
            now = time.monotonic()
            if now >= self._next_limit_warning:  # one line per period, however many are refused
                self._next_limit_warning = now + LIMIT_WARNING_PERIOD
                log.warning("%d connections open (--max-connections): closing new ones", self.limits.max_connections)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.tls_protocol = _tls_protocol(loop)
        self._server = await loop.create_server(
            lambda: _Gate(self), self.host, self.port, backlog=self.backlog, reuse_port=self.reuse_port
        )

    async def stop(self) -> None:
        """Stop listening; connections still in their TLS handshake are closed (the HTTP server
        closes the others: `HttpServer.shutdown`)."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for gate in list(self.gates):
            if gate.handler is None and gate.raw is not None:
                gate.raw.abort()
