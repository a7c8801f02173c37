"""HTTP/1.1 on the webhook port: llhttp's framing (`httptools`), our answers written in line.

Why not aiohttp on this port: every answer it gives is computed synchronously from bytes already
in memory (an admission, a probe, a scrape), yet aiohttp gives each request a task, a request and a
response object, a router lookup and a stream writer. Measured on one core with the same TLS
(`benchmarks/README.md`), that machinery costs ~23 µs of the ~33 µs a bare HTTPS request costs,
and an admission's whole budget is ~75 µs. Here a request is parsed by llhttp (the parser of
Node.js and uvicorn, strict by default: no smuggling through Content-Length and Transfer-Encoding
together, no obsolete line folding) and answered, in order, on the connection's own transport, once
the loop has handled the reads at hand (`HttpServer.enqueue`: the admissions that arrive together
run back to back). The other HTTP adapter (the scheduler extender) stays on aiohttp.

What one connection may cost, at most:
- headers: a request line of `max_url` bytes (414), `max_headers` fields and `max_header_bytes`
  bytes (431); they must be complete within `idle_timeout` of the previous answer (or of the
  TLS handshake), else the connection is closed without an answer, as aiohttp's keep-alive timer
  did;
- a body: `max_body` bytes (the application answers with its `too_large` refusal, from the first
  `UID_SCAN_BYTES`), complete within `body_timeout` of its headers (`slow_body`), and within the
  bytes every connection's bodies may hold together (`BodyBudget`: `busy`); each refusal closes
  the connection;
- answers: a client that pipelines requests and reads no answers is not read from while the
  transport's write buffer is full (`pause_writing`) or `MAX_QUEUED` of its requests wait for
  their answers, so what it makes us hold is one read's worth of requests and answers.

Whatever a request carries, the parser error or the refusal is one answer with `Connection: close`,
never a traceback; an exception in the application is a 500, logged, and the connection closed.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import deque
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, Final, Protocol
from urllib.parse import unquote

import httptools

from webhook.connections import DEFAULT_FIRST_REQUEST_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_BODY

log = logging.getLogger("colocate.http")

UID_SCAN_BYTES: Final = 64 * 1024  # what a too-large body is read of, for the uid it may carry
#: requests of one connection read whole and not yet answered, past which it is not read from
#: (only a pipelining client queues more than one; the API server sends one at a time)
MAX_QUEUED: Final = 16
#: requests answered in one turn of the loop before it reads again (`HttpServer._answer_queued`)
ANSWER_BATCH: Final = 8
CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"
#: why the application is asked to refuse a body (`Application.refused`)
BODY_REFUSALS: Final = ("too_large", "busy", "slow_body")


@dataclass(frozen=True)
class HttpLimits:
    max_body: int = DEFAULT_MAX_BODY
    body_timeout: float | None = DEFAULT_FIRST_REQUEST_TIMEOUT
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    max_url: int = 8 * 1024
    max_header_bytes: int = 64 * 1024
    max_headers: int = 128


class BodyBudget:
    """Bytes of request bodies held at once, over every connection of this process.

    The connection cap bounds sockets, not what they send: a thousand connections each sending
    most of `--max-body` would hold gigabytes. Past `limit` a request is refused (HTTP 503, the
    connection closed) instead; admission bodies are a few KiB, so only a flood meets it.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit, self.used = limit, 0

    def take(self, size: int) -> bool:
        if self.limit is not None and self.used + size > self.limit:
            return False
        self.used += size
        return True

    def give(self, size: int) -> None:
        self.used -= size


class Request:
    """One request's head, as the application sees it; `context` is the application's own."""

    __slots__ = (
        "method",
        "path",
        "version",
        "headers",
        "keep_alive",
        "upgrade",
        "started",
        "connection",
        "context",
        "early",
        "parts",
        "size",
        "held",
    )

    def __init__(self, connection: HttpConnection) -> None:
        self.connection = connection
        self.method = ""
        self.path = ""
        self.version = "1.1"
        self.headers: dict[str, str] = {}  # lower-case names; repeated fields joined with ", "
        self.keep_alive = True
        self.upgrade = False
        self.started = 0.0  # time.perf_counter() when its headers were complete
        self.context: Any = None
        self.early: Answer | None = None  # answered from the head: the body is read and dropped
        self.parts: list[bytes] = []
        self.size = 0
        self.held = 0  # bytes taken from the BodyBudget

    def peer_certificate(self) -> bool:
        """Whether the client presented a certificate the TLS layer verified."""
        transport = self.connection.transport
        return transport is not None and bool(transport.get_extra_info("peercert"))


@dataclass(slots=True)
class Answer:
    status: int
    body: bytes = b""
    content_type: bytes = b"text/plain; charset=utf-8"
    headers: bytes = b""  # further header lines, each ending in CRLF
    close: bool = False  # close the connection after this answer


class Application(Protocol):
    """What the server asks of the code behind it; every method returns at once (no I/O)."""

    @property
    def draining(self) -> bool:
        """While true, every answer says `Connection: close` and its connection closes."""

    def begin(self, request: Request) -> Answer | None:
        """The head is complete: an answer now (its body, if any, is not kept), or None to read the
        body. An answer with `close` is written before the body arrives and ends the connection."""

    def complete(self, request: Request, body: bytes) -> Answer:
        """The whole body arrived (within every limit)."""

    def refused(self, request: Request, reason: str, prefix: bytes) -> Answer:
        """The body broke a limit (one of `BODY_REFUSALS`); `prefix` is the first `UID_SCAN_BYTES`
        of what was read of it."""

    def abandoned(self, request: Request) -> None:
        """The connection ended before `request` was answered."""


class _Refuse(Exception):
    """Raised from a parser callback: stop parsing, answer `status` and close."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class _Stop(Exception):
    """Raised from a parser callback: the connection is closing, parse no further."""


_STATUS_LINES: dict[int, bytes] = {}


def _status_line(status: int) -> bytes:
    line = _STATUS_LINES.get(status)
    if line is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Unknown"
        line = _STATUS_LINES[status] = b"HTTP/1.1 %d %s\r\n" % (status, phrase.encode("ascii"))
    return line


class _Clock:
    """The Date header, formatted once per second."""

    def __init__(self) -> None:
        self.second = -1
        self.header = b""

    def date(self) -> bytes:
        now = int(time.time())
        if now != self.second:
            self.second = now
            self.header = b"Date: %s\r\n" % formatdate(now, usegmt=True).encode("ascii")
        return self.header


class HttpServer:
    """The connections of one listener and what they share: the limits, the body budget, the
    application. `connection` is the protocol factory (`webhook.gate` hands it the TLS stream)."""

    def __init__(
        self,
        app: Application,
        limits: HttpLimits = HttpLimits(),
        *,
        server_name: str = "colocate",
        budget: BodyBudget | None = None,
    ) -> None:
        self.app = app
        self.limits = limits
        self.budget = budget or BodyBudget()
        self.connections: set[HttpConnection] = set()
        self.clock = _Clock()
        self.server_header = b"Server: %s\r\n" % server_name.encode("ascii")
        self.stopping = False
        self._quiet = asyncio.Event()
        self.queue: deque[tuple[HttpConnection, Request, bytes, Answer | None]] = deque()
        self._scheduled = False  # _answer_queued is due to run

    def connection(self, on_first_request: Any = None) -> HttpConnection:
        """A connection's protocol; `on_first_request()` is called once, when its first head is read."""
        return HttpConnection(self, on_first_request)

    def enqueue(self, connection: HttpConnection, request: Request, body: bytes, answer: Answer | None) -> None:
        """`request` is complete: it is answered (with `answer`, or what the application says of
        `body`) once the loop has read what else arrived, in the order requests were queued."""
        self.queue.append((connection, request, body, answer))
        if not self._scheduled:
            self._scheduled = True
            connection.loop.call_soon(self._answer_queued)

    def _answer_queued(self) -> None:
        """Answer the queued requests in order, `ANSWER_BATCH` at a time, reading between batches.

        Admissions that arrive together (from many connections, under load) run back to back
        instead of each between TLS and socket work for other connections, so the policies' code
        and data stay in the CPU's caches: ~10 % less CPU per admission at 32 connections. Between
        two batches the loop reads again, and what arrived meanwhile queues behind what waits: with
        every queued request answered in one go, a request that arrived just after a turn began
        waited for that whole turn and then for its place in the next one (its p99 twice its p50 at
        32 connections). A request alone waits for nothing but the rest of the loop's turn."""
        queue, app = self.queue, self.app
        for _ in range(min(len(queue), ANSWER_BATCH)):
            connection, request, body, answer = queue.popleft()
            connection.queued -= 1
            transport = connection.transport
            if transport is None or transport.is_closing():  # gone, or closed by an earlier answer
                connection._release(request)
                if answer is None:
                    connection._call(app.abandoned, request)
                continue
            if answer is None:
                answer = connection._call(app.complete, request, body)
            connection._write(request, answer)
        if queue:
            asyncio.get_running_loop().call_soon(self._answer_queued)
        else:
            self._scheduled = False
        if self.stopping:
            self.request_ended()

    def request_ended(self) -> None:
        """While stopping: a request was answered or abandoned; is any still in progress?"""
        if not any(c.busy() for c in self.connections):
            self._quiet.set()

    async def shutdown(self, timeout: float) -> None:
        """Close every connection between requests now; let those in a request finish (each closes
        after its answer: the application is draining) for up to `timeout`, then close the rest."""
        self.stopping = True
        for connection in list(self.connections):
            if not connection.busy():
                connection.close()
        self.request_ended()
        try:
            await asyncio.wait_for(self._quiet.wait(), timeout)
        except TimeoutError:
            pass
        for connection in list(self.connections):
            connection.abort()


class HttpConnection(asyncio.Protocol):
    """One connection's requests, parsed and answered in order."""

    def __init__(self, server: HttpServer, on_first_request: Any = None) -> None:
        self.server = server
        self.app = server.app
        self.limits = server.limits
        self.loop = asyncio.get_running_loop()
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.request: Request | None = None  # the request being read (None between requests)
        self.queued = 0  # requests read whole and not answered yet (`HttpServer.enqueue`)
        self.writing_paused = False  # the transport holds more answers than it wants
        self.reading_paused = False
        self.url = b""
        self.head_bytes = 0  # bytes of data received while a head was incomplete
        self.field_bytes = 0  # bytes of the head's complete fields
        self.fresh_head = False
        self.closing = False
        self.on_first_request = on_first_request
        self.deadline = 0.0
        self.timer: asyncio.TimerHandle | None = None

    # -- the transport's side --------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        _no_delay(transport)
        self.server.connections.add(self)
        self._wait_for(self.limits.idle_timeout)

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self.fresh_head = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # answered as a plain request; what follows is not ours
            if not self.queued:  # else its answer, queued, closes the connection once written
                self.close()
            return
        except httptools.HttpParserCallbackError as error:
            cause = error.__context__
            if isinstance(cause, _Refuse):
                self._reject(cause.status, cause.message)
            elif not isinstance(cause, _Stop):
                log.error("HTTP connection failed: %r", cause, exc_info=cause)
                self._reject(500, "internal error")
            return
        except httptools.HttpParserError as error:
            self._reject(400, f"malformed HTTP request: {error}"[:200])
            return
        request = self.request
        if request is not None and not request.started and not self.fresh_head:
            # All of `data` was head: llhttp holds a field it has not finished in its own buffer,
            # so the bytes of a head are counted here as well as field by field.
            self.head_bytes += len(data)
            if self.head_bytes > self.limits.max_header_bytes + self.limits.max_url:
                self._reject(431, "request header fields too large")

    def eof_received(self) -> bool | None:
        return None  # the transport closes; a request not yet answered is abandoned

    def pause_writing(self) -> None:
        """The client reads no answers: read none of its requests until it does."""
        self.writing_paused = True
        self._control_reading()

    def resume_writing(self) -> None:
        self.writing_paused = False
        self._control_reading()

    def _control_reading(self) -> None:
        """Read while the client takes its answers and few of its requests wait for theirs: what
        a pipelining client that reads nothing makes us hold is bounded by one read."""
        paused = self.writing_paused or self.queued >= MAX_QUEUED
        if paused != self.reading_paused and self.transport is not None and not self.closing:
            self.reading_paused = paused
            if paused:
                self.transport.pause_reading()
            else:
                self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        request, self.request = self.request, None
        if request is not None:
            self._release(request)
            if request.started:
                self._call(self.app.abandoned, request)
        self.transport = None
        self.server.connections.discard(self)
        if self.server.stopping:
            self.server.request_ended()

    def busy(self) -> bool:
        """Whether a request of this connection is being received or waits for its answer."""
        return self.queued > 0 or (self.request is not None and bool(self.request.started))

    def close(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.abort()

    # -- the parser's callbacks -------------------------------------------------------------
    def on_message_begin(self) -> None:
        if self.closing:
            raise _Stop
        self.request = Request(self)
        self.url = b""
        self.head_bytes = 0
        self.field_bytes = 0
        self.fresh_head = True  # began in the data being parsed: that data is not all head

    def on_url(self, url: bytes) -> None:
        self.url += url
        if len(self.url) > self.limits.max_url:
            raise _Refuse(414, f"the request target exceeds {self.limits.max_url} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        request = self.request
        assert request is not None
        headers = request.headers
        self.field_bytes += len(name) + len(value) + 4
        if len(headers) >= self.limits.max_headers or self.field_bytes > self.limits.max_header_bytes:
            raise _Refuse(431, "request header fields too large")
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        if key in headers:
            text = f"{headers[key]}, {text}"
        headers[key] = text

    def on_headers_complete(self) -> None:
        request = self.request
        assert request is not None
        parser = self.parser
        request.method = parser.get_method().decode("ascii")
        request.path = self._path(self.url)
        request.version = parser.get_http_version()
        request.keep_alive = parser.should_keep_alive()
        request.upgrade = parser.should_upgrade()
        request.started = time.perf_counter()
        if self.on_first_request is not None:
            self.on_first_request()
            self.on_first_request = None
        expect = request.headers.get("expect")
        early = self._call(self.app.begin, request)
        if early is None and expect is not None:
            if expect.lower() != "100-continue":
                early = Answer(417, b"only Expect: 100-continue is understood", close=True)
            elif request.version == "1.1" and self.transport is not None:
                self.transport.write(CONTINUE)
        if early is not None:
            request.early = early
            if early.close:  # written before the body: what follows the head is not read
                self.request = None
                self.closing = True
                self._send(request, early)
                raise _Stop
        self._wait_for(self.limits.body_timeout)

    def on_body(self, body: bytes) -> None:
        request = self.request
        assert request is not None
        if request.early is not None:
            return  # answered from its head: the body is dropped as it arrives
        request.size += len(body)
        if not self.server.budget.take(len(body)):
            self._refuse_body(request, "busy")
        request.held += len(body)
        request.parts.append(body)
        limit = self.limits.max_body
        if request.size > limit or (request.size >= UID_SCAN_BYTES and _declared(request) > limit):
            self._refuse_body(request, "too_large")

    def on_message_complete(self) -> None:
        request = self.request
        assert request is not None
        self.request = None
        if not request.keep_alive or request.upgrade:
            self.closing = True  # its answer closes the connection: nothing after it is read
        early = request.early
        if early is not None:
            self._send(request, early)
        else:
            parts = request.parts
            self.queued += 1
            self.server.enqueue(self, request, parts[0] if len(parts) == 1 else b"".join(parts), None)
            if self.queued >= MAX_QUEUED:
                self._control_reading()
        if self.closing:
            raise _Stop

    # -- answering -------------------------------------------------------------------------
    def _send(self, request: Request, answer: Answer) -> None:
        """Answer `request` now, or after the requests of this connection still queued."""
        if self.queued:
            self.queued += 1
            self.server.enqueue(self, request, b"", answer)
        else:
            self._write(request, answer)

    def _write(self, request: Request, answer: Answer) -> None:
        """Write `answer` to `request`, release the request, and close or wait for the next one."""
        self._release(request)
        transport = self.transport
        if transport is None:
            return
        close = answer.close or not request.keep_alive or request.upgrade or self.app.draining
        server = self.server
        body = answer.body
        head = b"%b%b%bContent-Type: %b\r\nContent-Length: %d\r\n%b%b\r\n" % (
            _status_line(answer.status),
            server.server_header,
            server.clock.date(),
            answer.content_type,
            len(body),
            answer.headers,
            b"Connection: close\r\n" if close else _keep_alive(request),
        )
        transport.write(head if request.method == "HEAD" else head + body)
        if close:
            self.close()
        else:
            if self.reading_paused:
                self._control_reading()
            if not self.busy():
                self._wait_for(self.limits.idle_timeout)
        if server.stopping:
            server.request_ended()

    def _refuse_body(self, request: Request, reason: str) -> None:
        prefix = b"".join(request.parts)[:UID_SCAN_BYTES]
        answer = self._call(self.app.refused, request, reason, prefix)
        answer.close = True
        self.request = None
        self.closing = True
        self._send(request, answer)
        raise _Stop

    def _reject(self, status: int, message: str) -> None:
        """A request the parser or a limit refused: its answer, then the connection closes."""
        request, self.request = self.request, None
        if request is not None and request.started:
            self._call(self.app.abandoned, request)
        self.closing = True
        self._send(request or Request(self), Answer(status, message.encode("utf-8", "replace"), close=True))

    def _release(self, request: Request) -> None:
        if request.held:
            self.server.budget.give(request.held)
            request.held = 0
        request.parts = []

    def _call(self, method: Any, *args: Any) -> Any:
        """An application method; a bug in it is a 500 for this request, not a dead connection."""
        try:
            return method(*args)
        except Exception as exc:  # noqa: BLE001 - logged, answered, and the connection closed
            log.error("HTTP application failed in %s: %r", getattr(method, "__name__", method), exc, exc_info=exc)
            return _internal_error()  # (what `abandoned` returns is not used)

    # -- deadlines ---------------------------------------------------------------------------
    def _wait_for(self, seconds: float | None) -> None:
        """The current phase (a head, or a body) must end within `seconds`: one timer per
        connection, re-armed lazily when it fires early, so a request costs no timer of its own."""
        if seconds is None:
            self.deadline = float("inf")
            return
        self.deadline = self.loop.time() + seconds
        if self.timer is None:
            self.timer = self.loop.call_at(self.deadline, self._deadline_reached)

    def _deadline_reached(self) -> None:
        self.timer = None
        if self.closing or self.transport is None:
            return
        if self.loop.time() < self.deadline:
            if self.deadline != float("inf"):
                self.timer = self.loop.call_at(self.deadline, self._deadline_reached)
            return
        request = self.request
        if request is None or not request.started:  # idle, or a head never completed
            if not self.queued:  # (a queued request is answered within this turn of the loop)
                self.abort()
            return
        try:
            self._refuse_body(request, "slow_body")
        except _Stop:
            pass

    @staticmethod
    def _path(url: bytes) -> str:
        """The path of a request target (origin form, or absolute form), percent-decoded; the
        query is not part of it (kube-apiserver appends `?timeout=10s`)."""
        if url[:1] != b"/":
            try:
                parsed = httptools.parse_url(url)
            except httptools.HttpParserInvalidURLError:
                raise _Refuse(400, "malformed request target") from None
            url = parsed.path or b"/"
        path = url.split(b"?", 1)[0].decode("latin-1")
        return unquote(path) if "%" in path else path


def _no_delay(transport: asyncio.BaseTransport) -> None:
    """Answers go out as they are written: with Nagle's algorithm a small answer waits for the
    client's delayed ACK of the previous one (tens of milliseconds, aiohttp turns it off too)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # already closed
            pass


def _declared(request: Request) -> int:
    """The Content-Length the head declared (0 when chunked: llhttp checked the value)."""
    value = request.headers.get("content-length")
    return int(value) if value is not None and value.isdigit() else 0


def _keep_alive(request: Request) -> bytes:
    """HTTP/1.1 keeps a connection open unless told otherwise; HTTP/1.0 only when told so."""
    return b"Connection: keep-alive\r\n" if request.version == "1.0" else b""


def _internal_error() -> Answer:
    return Answer(500, b"internal error", close=True)
