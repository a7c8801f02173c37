"""The listener's guard: every accepted connection is counted, capped and timed before it is TLS.

A connection costs memory from the moment it is accepted (TLS buffers, the HTTP parser), so it is
counted from then, not from its first request. The cap (`--max-connections`) acts where public
asyncio lets it act first: the listener accepts with `loop.sock_accept`, and a socket over the cap
is closed right after accept(2), before a byte of TLS is read or written. (A protocol's
`connection_made` would be too late on uvloop: its transports start reading as they are made, so
the TLS layer must own the socket from its first byte.)

At the cap the server first makes room: it closes one connection that is not in a request, of
the first stage that has one (`EVICTION_ORDER`): accepted and silent, in its TLS handshake, TLS up
but no request for `--handshake-timeout` (`unserved_evicted`), kept alive between requests
(`idle_evicted`), TLS up a moment ago; within the stage the oldest of the client address holding
the most connections (an IPv6 client counts by its /64). Plain TCP sockets that never start TLS,
reopened as fast as they are closed, therefore take only each other's places: the API server's
connections send their ClientHello at once and are past the silent stage before the next accept
(before, such sockets held every slot until `--first-request-timeout` and the API server's
reconnects were refused: 14 of ~390 admissions answered in 20 s). Only when every connection is
in a request is the new one closed at once (`over_limit`). A connection must finish its handshake
within `--handshake-timeout` of its accept and send the head of a first request within
`first_request_timeout`; after that aiohttp's keep-alive timer closes it when idle for
`idle_timeout` (`webhook.port`).

TLS is started here, after the gate and once the first byte has arrived (a reader on the socket
until then), with `loop.connect_accepted_socket(ssl=...)` (public asyncio;
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

from colocate.cluster.probes import source_of
from webhook.connections import ConnectionLimits

log = logging.getLogger("colocate.connections")

LIMIT_WARNING_PERIOD: Final = 10.0
#: the stages of a connection: accepted and no byte yet, in its TLS handshake, TLS up and no
#: request yet, in a request, kept alive between requests, being closed
SILENT: Final = "silent"
HANDSHAKE: Final = "handshake"
WAITING: Final = "waiting"
BUSY: Final = "busy"
IDLE: Final = "idle"
CLOSING: Final = "closing"
#: which connections go first when a new one needs room (never one in a request), and whether
#: only one that has been at that stage for `--handshake-timeout` may go (a connection whose TLS
#: is up a moment ago is about to send its request: a kept-alive idle one goes before it)
EVICTION_ORDER: Final = ((SILENT, False), (HANDSHAKE, False), (WAITING, True), (IDLE, False), (WAITING, False))


class _Gate(asyncio.Protocol):
    """One accepted connection: counted, upgraded to TLS, then handed to the HTTP protocol, to
    which it forwards what the TLS layer reads (it stays the TLS layer's protocol so that it sees
    the connection end, and can count it)."""

    def __init__(self, site: GatedSite, source: str) -> None:
        self.site = site
        self.source = source  # the client's address (an IPv6 client's /64): its share of the cap
        self.stage = SILENT
        self.loop = asyncio.get_running_loop()
        self.since = self.loop.time()  # when it reached its stage
        self.sock: socket.socket | None = None  # until its first byte: then the TLS layer owns it
        self.handshake: asyncio.Task[None] | None = None
        self.tls: asyncio.Transport | None = None
        self.handler: asyncio.Protocol | None = None  # the HTTP protocol, once TLS is up
        self.served = False  # a request of this connection reached the application
        self.counted = False
        self.deadline: asyncio.TimerHandle | None = None
        self.handshake_deadline: asyncio.TimerHandle | None = None

    # -- accepted ----------------------------------------------------------------------------
    def accepted(self, sock: socket.socket) -> None:
        """A socket `accept(2)` returned, within the cap: counted and timed; its TLS handshake
        starts with its first byte (until then it is `silent`, the first to go at the cap)."""
        self.counted = True
        self.sock = sock
        self.site.opened(self)
        limits = self.site.limits
        self.deadline = self.loop.call_later(limits.first_request_timeout, self._first_request_overdue)
        self.handshake_deadline = self.loop.call_later(limits.handshake_timeout, self._handshake_overdue)
        self.loop.add_reader(sock.fileno(), self._first_bytes)

    def _first_bytes(self) -> None:
        sock, self.sock = self.sock, None
        if sock is None:
            return
        self.loop.remove_reader(sock.fileno())
        self.site.move(self, HANDSHAKE)
        self.handshake = self.loop.create_task(self._start_tls(sock, self.site.limits.handshake_timeout))

    async def _start_tls(self, sock: socket.socket, timeout: float) -> None:
        try:
            await self.loop.connect_accepted_socket(
                lambda: self, sock, ssl=self.site.tls_context, ssl_handshake_timeout=timeout
            )
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError, RuntimeError, asyncio.CancelledError):
            # a failed or cut handshake, or the connection closed by a deadline or to make room
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
        self._cancel_handshake_deadline()
        self.site.move(self, WAITING)
        handler = self.handler = self.site.connection(self)
        handler.connection_made(tls)

    def _handshake_overdue(self) -> None:
        self.handshake_deadline = None
        if self.tls is None and self.counted and not self.served:
            self._close_unserved("handshake_timeout")

    def _first_request_overdue(self) -> None:
        self.deadline = None
        if not self.served and self.counted:
            self._close_unserved("first_request_timeout")

    def _close_unserved(self, reason: str) -> None:
        self.served = True  # counted once, as this reason only
        self.site.move(self, CLOSING)
        self.site.closed(reason)
        self._abort()

    def _abort(self) -> None:
        if self.tls is not None:
            self.tls.abort()
        elif self.handshake is not None:
            self.handshake.cancel()
        elif self.sock is not None:  # silent: not yet the TLS layer's
            sock, self.sock = self.sock, None
            self.loop.remove_reader(sock.fileno())
            sock.close()
            self._release()

    # -- what the HTTP protocol tells of its requests (`webhook.port.ConnectionWatcher`) -----
    def request_started(self) -> None:
        self.site.move(self, BUSY)
        if not self.served:
            self.served = True
            if self.deadline is not None:
                self.deadline.cancel()
                self.deadline = None

    def request_ended(self) -> None:
        if self.counted:
            self.site.move(self, IDLE)  # the most recently idle last

    def head_refused(self) -> None:
        self.site.closed("head_too_large")

    def evict(self) -> None:
        """Close this connection to make room for a new one: a kept-alive one between its requests
        (its client, like any HTTP client, reconnects: the close never comes within a request), or
        one not yet served (silent, in its handshake, or not yet past its first request's head)."""
        if self.stage == IDLE:
            self.close_idle("idle_evicted")
            return
        self.site.move(self, CLOSING)  # never chosen twice, though a handshake ends a moment later
        self._close_unserved("unserved_evicted")

    def close_idle(self, reason: str, *, graceful: bool = True) -> None:
        """Close this connection kept alive between requests (its client reconnects). Not
        `graceful`: at once, without waiting for the client to answer TLS's close_notify."""
        self.site.move(self, CLOSING)
        self.site.closed(reason)
        self._release()
        if self.tls is not None and graceful:
            self.tls.close()
        elif self.tls is not None:
            self.tls.abort()

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

    def _cancel_handshake_deadline(self) -> None:
        if self.handshake_deadline is not None:
            self.handshake_deadline.cancel()
            self.handshake_deadline = None

    def _release(self) -> None:
        self._cancel_handshake_deadline()
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
        self.peak = 0  # the most open at once since memory was last given back (`webhook.memory`)
        self.gates: set[_Gate] = set()
        #: open connections per client address (`source_of`)
        self.per_source: dict[str, int] = {}
        #: the connections that may be closed to make room, by stage and client address, oldest first
        self.stages: dict[str, dict[str, OrderedDict[_Gate, None]]] = {stage: {} for stage, _ in EVICTION_ORDER}
        self._next_limit_warning = 0.0
        self._listener: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None

    def opened(self, gate: _Gate) -> None:
        self.open += 1
        if self.open > self.peak:
            self.peak = self.open
        self.gates.add(gate)
        self.per_source[gate.source] = self.per_source.get(gate.source, 0) + 1
        self.stages[SILENT].setdefault(gate.source, OrderedDict())[gate] = None
        if self.metrics is not None:
            self.metrics.connections.inc()

    def move(self, gate: _Gate, stage: str) -> None:
        """`gate` is now at `stage` (the latest of it: the last to go of its stage at the cap)."""
        self._leave(gate)
        gate.stage, gate.since = stage, gate.loop.time()
        if stage in self.stages:
            self.stages[stage].setdefault(gate.source, OrderedDict())[gate] = None

    def _leave(self, gate: _Gate) -> None:
        by_source = self.stages.get(gate.stage)
        if by_source is None:
            return
        gates = by_source.get(gate.source)
        if gates is not None:
            gates.pop(gate, None)
            if not gates:
                del by_source[gate.source]

    def lost(self, gate: _Gate) -> None:
        self.open -= 1
        self.gates.discard(gate)
        self.move(gate, CLOSING)
        left = self.per_source.get(gate.source, 1) - 1
        if left:
            self.per_source[gate.source] = left
        else:
            self.per_source.pop(gate.source, None)
        if self.metrics is not None:
            self.metrics.connections.dec()

    def make_room(self) -> bool:
        """At the cap: close one connection that is not in a request, or say False when none is.

        The first to go is the oldest of the first stage that has any (`EVICTION_ORDER`: silent,
        in its handshake, TLS up but no request for `--handshake-timeout`, kept alive between
        requests, then TLS up a moment ago), of the client address holding the most connections:
        a client that fills the cap with sockets that say nothing loses its own, never the API
        server's connections in use."""
        stale_before = asyncio.get_running_loop().time() - self.limits.handshake_timeout
        for stage, only_stale in EVICTION_ORDER:
            by_source = self.stages[stage]
            if not by_source:
                continue
            heaviest = max(by_source, key=lambda source: self.per_source.get(source, 0))
            victim = next(iter(by_source[heaviest]))
            if only_stale and victim.since > stale_before:
                continue
            victim.evict()
            return True
        return False

    def close_idle(self) -> int:
        """At shutdown: close every connection kept alive between requests, which the HTTP layer
        would otherwise wait on until its timeout (kube-apiserver keeps its connections to a webhook
        open); one in a request is closed after its response. How many were closed."""
        idle = [gate for gates in self.stages[IDLE].values() for gate in gates]
        for gate in idle:
            gate.close_idle("idle_at_shutdown", graceful=False)
        return len(idle)

    def closed(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.connections_closed.labels(reason).inc()
        if reason == "over_limit":
            now = time.monotonic()
            if now >= self._next_limit_warning:  # one line per period, however many are refused
                self._next_limit_warning = now + LIMIT_WARNING_PERIOD
                log.warning(
                    "%d connections open (--max-connections), all in a request: closing new ones",
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
                sock, peer = await loop.sock_accept(listener)
            except OSError as exc:  # out of file descriptors, or a connection reset in the backlog
                log.warning("accept failed: %s", exc)
                await asyncio.sleep(0.1)
                continue
            if self.open >= self.limits.max_connections and not self.make_room():
                self.closed("over_limit")
                sock.close()
                continue
            _Gate(self, source_of(peer)).accepted(sock)

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
