"""The listener's guard: every accepted connection is counted, capped and timed before it is TLS.

A connection costs memory from the moment it is accepted (TLS buffers, the HTTP parser), so it is
counted from then, not from its first request. The cap (`--max-connections`) acts where public
asyncio lets it act first: the listener accepts with `loop.sock_accept`, and a socket over the cap
is closed right after accept(2), before a byte of TLS is read or written. (A protocol's
`connection_made` would be too late on uvloop: its transports start reading as they are made, so
the TLS layer must own the socket from its first byte.)

At the cap the server first makes room: it closes the kept-alive connection idle longest
(`idle_evicted`), so one client holding every connection open between its requests cannot shut
others out. Only when no connection is idle (each is in a request, in its TLS handshake, or new and
not yet past its first request) is the new one closed at once (`over_limit`). A connection must
finish its handshake and send the headers of a first request within `first_request_timeout` (a
client that connects and says nothing is closed); after that aiohttp's keep-alive timer closes it
when idle for `idle_timeout` (`webhook.port`).

TLS is started here, after the gate, with `loop.connect_accepted_socket(ssl=...)` (public asyncio;
uvloop implements it too), and the TLS transport is then handed to aiohttp's protocol. On uvloop
(the default where it is installed) an idle connection makes resident only the pages its reads
fill; asyncio's own loop allocates and fills a 256 KiB TLS read buffer per connection before its
handshake (docs/serve.md, "Sizing", says what that costs).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from webhook.connections import ConnectionLimits

log = logging.getLogger("colocate.connections")

LIMIT_WARNING_PERIOD: Final = 10.0


class _Gate(asyncio.Protocol):
    """One accepted connection: counted, upgraded to TLS, then handed to the HTTP protocol, to
    which it forwards what the TLS layer reads (it stays the TLS layer's protocol so that it sees
    the connection end, and can count it)."""

    def __init__(self, site: GatedSite) -> None:
        self.site = site
        self.loop = asyncio.get_running_loop()
        self.handshake: asyncio.Task[None] | None = None
        self.tls: asyncio.Transport | None = None
        self.handler: asyncio.Protocol | None = None  # the HTTP protocol, once TLS is up
        self.served = False  # a request of this connection reached the application
        self.counted = False
        self.deadline: asyncio.TimerHandle | None = None

    # -- accepted ----------------------------------------------------------------------------
    def accepted(self, sock: socket.socket) -> None:
        """A socket `accept(2)` returned, within the cap: counted, timed, then its TLS handshake."""
        self.counted = True
        self.site.opened(self)
        timeout = self.site.limits.first_request_timeout
        self.deadline = self.loop.call_later(timeout, self._first_request_overdue)
        self.handshake = self.loop.create_task(self._start_tls(sock, timeout))

    async def _start_tls(self, sock: socket.socket, timeout: float) -> None:
        try:
            await self.loop.connect_accepted_socket(
                lambda: self, sock, ssl=self.site.tls_context, ssl_handshake_timeout=timeout
            )
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError, RuntimeError, asyncio.CancelledError):
            # a failed or cut handshake, or the connection closed by the first-request deadline
            if self.counted and not self.served:
                self.site.closed("tls_handshake_failed")
            sock.close()
            self._release()
        finally:
            self.handshake = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """The TLS handshake is done: aiohttp's protocol takes the TLS transport."""
        tls: asyncio.Transport = transport  # type: ignore[assignment]
        self.tls = tls
        if not self.counted:  # closed by a deadline as the handshake finished
            tls.abort()
            return
        handler = self.handler = self.site.connection(self)
        handler.connection_made(tls)

    def _first_request_overdue(self) -> None:
        self.deadline = None
        if not self.served and self.counted:
            self.served = True  # counted once, as this reason only
            self.site.closed("first_request_timeout")
            self._abort()

    def _abort(self) -> None:
        if self.tls is not None:
            self.tls.abort()
        elif self.handshake is not None:
            self.handshake.cancel()

    # -- what the HTTP protocol tells of its requests (`webhook.port.ConnectionWatcher`) -----
    def request_started(self) -> None:
        self.site.idle.pop(self, None)
        if not self.served:
            self.served = True
            if self.deadline is not None:
                self.deadline.cancel()
                self.deadline = None

    def request_ended(self) -> None:
        if self.counted:
            self.site.idle[self] = None  # the most recently idle last

    def evict(self) -> None:
        """Close this idle kept-alive connection to make room for a new one (its client, like any
        HTTP client, reconnects: the close comes between requests, never within one)."""
        self.site.closed("idle_evicted")
        self._release()
        if self.tls is not None:
            self.tls.close()

    # -- the TLS layer's application protocol: forwarded to the HTTP protocol -----------------
    def data_received(self, data: bytes) -> None:
        if self.handler is not None:
            self.handler.data_received(data)

    def eof_received(self) -> bool | None:
        if self.handler is None:
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
    `connection(gate)`'s protocol (`webhook.port.WebhookPort.connection`)."""

    def __init__(
        self,
        connection: Callable[[Any], asyncio.Protocol],
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
        self.limits = limits
        self.metrics = metrics
        self.open = 0
        self.gates: set[_Gate] = set()
        #: kept-alive connections between requests, the longest idle first
        self.idle: OrderedDict[_Gate, None] = OrderedDict()
        self._next_limit_warning = 0.0
        self._listener: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None

    def opened(self, gate: _Gate) -> None:
        self.open += 1
        self.gates.add(gate)
        if self.metrics is not None:
            self.metrics.connections.inc()

    def lost(self, gate: _Gate) -> None:
        self.open -= 1
        self.gates.discard(gate)
        self.idle.pop(gate, None)
        if self.metrics is not None:
            self.metrics.connections.dec()

    def make_room(self) -> bool:
        """At the cap: close the longest idle kept-alive connection; False when none is idle."""
        if not self.idle:
            return False
        oldest, _ = self.idle.popitem(last=False)
        oldest.evict()
        return True

    def closed(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.connections_closed.labels(reason).inc()
        if reason == "over_limit":
            now = time.monotonic()
            if now >= self._next_limit_warning:  # one line per period, however many are refused
                self._next_limit_warning = now + LIMIT_WARNING_PERIOD
                log.warning(
                    "%d connections open (--max-connections), none idle: closing new ones",
                    self.limits.max_connections,
                )

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        listener = socket.create_server((self.host, self.port), backlog=self.backlog, reuse_port=bool(self.reuse_port))
        listener.setblocking(False)
        self._listener = listener
        self._accepting = loop.create_task(self._accept_forever(listener))

    async def _accept_forever(self, listener: socket.socket) -> None:
        """Accept connections one by one; the cap acts here, before anything else is done with one."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, _ = await loop.sock_accept(listener)
            except OSError as exc:  # out of file descriptors, or a connection reset in the backlog
                log.warning("accept failed: %s", exc)
                await asyncio.sleep(0.1)
                continue
            if self.open >= self.limits.max_connections and not self.make_room():
                self.closed("over_limit")
                sock.close()
                continue
            _Gate(self).accepted(sock)

    async def stop(self) -> None:
        """Stop listening; connections still in their TLS handshake are closed (the HTTP server
        closes the others: `WebhookPort.shutdown`)."""
        if self._accepting is not None:
            self._accepting.cancel()
            await asyncio.gather(self._accepting, return_exceptions=True)
            self._accepting = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for gate in list(self.gates):
            if gate.handler is None:
                gate._abort()
