"""The webhook port's HTTP/1.1 layer, in process, with an application that records what it is asked:
a bug in the application is a 500 and a closed connection, not a dead server; a client that goes
away mid-body gives its bytes back and its request is abandoned; a shutdown lets a request being
received finish and closes the idle connections at once.

The framing a client sees (pipelining, chunked bodies, limits, malformed requests) is tested
black-box against a real `colocate serve` in `hostile/test_http_framing.py`."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from certs.material import CertPaths
from tests.support.listener import listening
from webhook.http1 import Answer, BodyBudget, HttpLimits, HttpServer, Request
from webhook.serve import tls_context


class Recorder:
    """An application that answers with the body it got, and remembers every call."""

    def __init__(self) -> None:
        self.draining = False
        self.calls: list[tuple[str, str]] = []
        self.fail = False
        self.body_started = asyncio.Event()
        self.abandoned_event = asyncio.Event()

    def begin(self, request: Request) -> Answer | None:
        self.calls.append(("begin", request.path))
        self.body_started.set()
        return None

    def complete(self, request: Request, body: bytes) -> Answer:
        self.calls.append(("complete", request.path))
        if self.fail:
            raise RuntimeError("a bug")
        return Answer(200, body)

    def refused(self, request: Request, reason: str, prefix: bytes) -> Answer:
        self.calls.append(("refused", reason))
        return Answer(413, reason.encode(), close=True)

    def abandoned(self, request: Request) -> None:
        self.calls.append(("abandoned", request.path))
        self.abandoned_event.set()


@asynccontextmanager
async def serving(
    cert_paths: CertPaths, app: Recorder, budget: BodyBudget | None = None
) -> AsyncIterator[tuple[HttpServer, int]]:
    server = HttpServer(app, HttpLimits(body_timeout=5.0), budget=budget)
    async with listening(server, tls_context(cert_paths)) as url:
        yield server, int(url.rsplit(":", 1)[1])


async def connect(cert_paths: CertPaths, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    trust = ssl.create_default_context(cafile=str(cert_paths.ca))
    return await asyncio.open_connection("127.0.0.1", port, ssl=trust, server_hostname="localhost")


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if line)
    body = await reader.readexactly(int(headers["Content-Length"]))
    return int(lines[0].split()[1]), headers, body


def post(path: str, body: bytes, declared: int | None = None) -> bytes:
    return b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (
        path.encode(),
        len(body) if declared is None else declared,
        body,
    )


async def test_a_bug_in_the_application_is_a_500_that_closes_only_its_connection(cert_paths: CertPaths):
    app = Recorder()
    async with serving(cert_paths, app) as (_, port):
        app.fail = True
        reader, writer = await connect(cert_paths, port)
        writer.write(post("/a", b"x"))
        status, headers, _ = await read_answer(reader)
        assert (status, headers["Connection"]) == (500, "close")
        assert await reader.read() == b""  # closed
        writer.close()

        app.fail = False
        reader, writer = await connect(cert_paths, port)
        writer.write(post("/a", b"fine"))
        assert (await read_answer(reader))[::2] == (200, b"fine")
        writer.close()


async def test_a_client_gone_mid_body_gives_its_bytes_back_and_its_request_is_abandoned(cert_paths: CertPaths):
    app, budget = Recorder(), BodyBudget(1 << 20)
    async with serving(cert_paths, app, budget) as (_, port):
        reader, writer = await connect(cert_paths, port)
        writer.write(post("/a", b"x" * 1000, declared=5000))
        await writer.drain()
        await app.body_started.wait()
        writer.transport.abort()
        await app.abandoned_event.wait()
        assert app.calls == [("begin", "/a"), ("abandoned", "/a")]
        assert budget.used == 0


async def test_a_body_over_the_budget_is_refused_as_busy_and_gives_back_what_it_took(cert_paths: CertPaths):
    app, budget = Recorder(), BodyBudget(100)
    async with serving(cert_paths, app, budget) as (_, port):
        reader, writer = await connect(cert_paths, port)
        writer.write(post("/a", b"x" * 500))
        status, headers, body = await read_answer(reader)
        assert (status, body, headers["Connection"]) == (413, b"busy", "close")
        assert budget.used == 0
        writer.close()


async def test_shutdown_lets_a_request_in_progress_finish_and_closes_idle_connections(cert_paths: CertPaths):
    app = Recorder()
    async with serving(cert_paths, app) as (server, port):
        idle_reader, idle_writer = await connect(cert_paths, port)
        idle_writer.write(b"GET /idle HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        assert (await read_answer(idle_reader))[0] == 200
        app.body_started.clear()
        busy_reader, busy_writer = await connect(cert_paths, port)
        busy_writer.write(post("/busy", b"x" * 10, declared=20))
        await app.body_started.wait()

        app.draining = True
        shutdown = asyncio.create_task(server.shutdown(5.0))
        assert await idle_reader.read() == b""  # closed at once, between requests
        assert not shutdown.done()
        busy_writer.write(b"y" * 10)
        status, headers, body = await read_answer(busy_reader)
        assert (status, body, headers["Connection"]) == (200, b"x" * 10 + b"y" * 10, "close")
        await asyncio.wait_for(shutdown, 5.0)
        idle_writer.close()
        busy_writer.close()


async def test_a_header_sent_in_small_pieces_is_refused_at_the_head_limit(cert_paths: CertPaths):
    """llhttp buffers a field until it ends: the bytes of an unfinished head count as they arrive."""
    app = Recorder()
    async with serving(cert_paths, app) as (_, port):
        reader, writer = await connect(cert_paths, port)
        writer.write(b"GET /a HTTP/1.1\r\nX-Long: ")
        for _ in range(200):  # 200 KiB of one header value, never finished
            if writer.is_closing():
                break
            writer.write(b"v" * 1024)
            await writer.drain()
        status, headers, _ = await read_answer(reader)
        assert (status, headers["Connection"]) == (431, "close")
        assert app.calls == []
        writer.close()


async def test_an_upgrade_request_with_a_body_is_answered_then_the_connection_closed(cert_paths: CertPaths):
    """llhttp stops at an upgrade; the request's answer, computed after the read, is still written."""
    app = Recorder()
    async with serving(cert_paths, app) as (_, port):
        reader, writer = await connect(cert_paths, port)
        writer.write(b"POST /a HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 0\r\n\r\n")
        status, headers, _ = await read_answer(reader)
        assert (status, headers["Connection"]) == (200, "close")
        assert await reader.read() == b""
        writer.close()


class RecordingTransport(asyncio.Transport):
    """What a connection writes, in the order of every connection's writes (`log`)."""

    def __init__(self, name: str, log: list[tuple[str, bytes]]) -> None:
        super().__init__()
        self.name, self.log, self.closed = name, log, False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.log.append((self.name, bytes(data)))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


async def test_requests_read_together_are_answered_in_their_order_a_few_per_turn_of_the_loop():
    """More requests than one turn answers: the first ANSWER_BATCH go out, then the loop reads
    again before the rest (which keep their order); none is lost or answered twice."""
    from webhook.http1 import ANSWER_BATCH

    app, log = Recorder(), list[tuple[str, bytes]]()
    server = HttpServer(app, HttpLimits())
    names = [f"c{i}" for i in range(ANSWER_BATCH * 2 + 3)]
    for name in names:
        connection = server.connection()
        connection.connection_made(RecordingTransport(name, log))
        connection.data_received(post(f"/{name}", name.encode()))
    assert log == [] and len(server.queue) == len(names)  # nothing answered while reading
    await asyncio.sleep(0)  # one turn of the loop
    assert [name for name, _ in log] == names[:ANSWER_BATCH]
    while server.queue:
        await asyncio.sleep(0)
    assert [name for name, _ in log] == names
    assert all(data.endswith(name.encode()) for name, data in log)
