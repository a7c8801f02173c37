"""HTTP/1.1 framing as kube-apiserver, kubelet and Prometheus speak it, and as a careless or hostile
client bends it, written and read byte by byte over TLS to a real `colocate serve`.

What a user would notice: admission keeps working over kept-alive and pipelined connections, with a
query string, a chunked body or `Expect: 100-continue`; a request that could be read two ways
(request smuggling), an oversized head or a control byte gets aiohttp's 400 and the connection
is closed; a connection that stops mid-request, or a client that stops reading, costs neither
memory nor other clients' answers.

Elsewhere, not repeated here (tests/webhook/hostile/test_connections.py): a fresh connection with
half-sent headers is closed after --first-request-timeout, a body that stops arriving gets a 408,
and an idle kept-alive connection is closed after --idle-timeout.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.support.admission import admission_review
from tests.support.paths import REPO
from tests.support.served import Served
from tests.support.wait import wait_for_sync

#: a request every connection may send, answered at once: the admission port serves admission paths
#: only (probes and /metrics have their own listener), so any other path is its 404
NOWHERE = "/nowhere"
NOT_FOUND = b"404: Not Found"
POD: dict[str, Any] = yaml.safe_load((REPO / "manifests" / "samples" / "batch-pod.yaml").read_text())
CLOSE_WITHIN = 2.0  # seconds: after an answer that ends the connection, the server closes it
URL_LIMIT = 8 * 1024
FIELD_LIMIT = 128
IMPATIENT = ("--idle-timeout", "1", "--first-request-timeout", "1")


# -- raw HTTP/1.1: requests as bytes, answers parsed by hand ---------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # names lower-cased; a repeated field's values joined with ", "
    body: bytes

    def review(self) -> dict[str, Any]:
        """The AdmissionReview `response` of a 200 answer."""
        assert self.status == 200, (self.status, self.body[:300])
        response: dict[str, Any] = json.loads(self.body)["response"]
        return response

    def closes(self) -> bool:
        return "close" in self.headers.get("connection", "").lower()


def parse_answer(buffer: bytes | bytearray, *, head: bool = False) -> tuple[Answer, int] | None:
    """The first answer in `buffer` and how many bytes it took, or None while it is incomplete.
    `head`: the answer to a HEAD request (headers only, whatever its Content-Length says)."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    status_line, *lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    version, status, _ = (status_line + " ").split(" ", 2)
    assert version in ("HTTP/1.1", "HTTP/1.0") and status.isdigit(), f"not a status line: {status_line!r}"
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        assert colon, f"an answer's header line without a colon: {line!r}"
        key, value = name.strip().lower(), value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    code, start = int(status), end + 4
    if head or 100 <= code < 200 or code in (204, 304):
        return Answer(code, headers, b""), start
    assert "content-length" in headers, f"every answer carries a Content-Length: {status_line!r} {headers}"
    length = int(headers["content-length"])
    if len(buffer) < start + length:
        return None
    return Answer(code, headers, bytes(buffer[start : start + length])), start + length


def request(method: str, target: str, *headers: str, body: bytes | None = None, version: str = "HTTP/1.1") -> bytes:
    """One request as it goes on the wire; `body` adds its Content-Length and Content-Type."""
    lines = [f"{method} {target} {version}", "Host: webhook.example", *headers]
    if body is not None:
        lines += [f"Content-Length: {len(body)}", "Content-Type: application/json"]
    return "\r\n".join([*lines, "", ""]).encode("latin-1") + (body or b"")


def review(uid: str, pod: dict[str, Any] = POD) -> bytes:
    return json.dumps(admission_review(pod, uid=uid)).encode()


def wide_pod(containers: int) -> dict[str, Any]:
    """The batch pod with this many containers: a larger answer (one patch per container)."""
    pod: dict[str, Any] = json.loads(json.dumps(POD))
    template = pod["spec"]["containers"][0]
    pod["spec"]["containers"] = [{**template, "name": f"c{i}"} for i in range(containers)]
    return pod


class Wire:
    """One TLS connection: bytes written as given, answers read and parsed here."""

    def __init__(self, sock: ssl.SSLSocket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def send(self, data: bytes) -> Wire:
        self.sock.sendall(data)
        return self

    def answer(self, *, head: bool = False, timeout: float = 5) -> Answer:
        self.sock.settimeout(timeout)
        while (parsed := parse_answer(self.buffer, head=head)) is None:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError(f"closed before a complete answer; got {bytes(self.buffer[:300])!r}")
            self.buffer += data
        answer, used = parsed
        del self.buffer[:used]
        return answer

    def closed(self, within: float = CLOSE_WITHIN) -> bool:
        """Whether the server closes the connection within `within` seconds (EOF or reset) having
        sent nothing more; what it did send stays in `buffer`."""
        if self.buffer:
            return False
        self.sock.settimeout(within)
        try:
            data = self.sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
            return True
        except TimeoutError:
            return False
        self.buffer += data
        return not data


def ours(answer: Answer) -> Answer:
    """What every answer carries, whatever its status."""
    assert answer.headers.get("server") == "colocate", answer.headers
    assert "content-length" in answer.headers, answer.headers
    return answer


def last_answer(wire: Wire, status: int) -> Answer:
    """The next answer has `status`, says it is the last (Connection: close), is ours, and the server
    then closes the connection; every part of that is compared at once, to show all that differs."""
    answer = wire.answer()
    closed = wire.closed()
    observed = {
        "status": answer.status,
        "connection": answer.headers.get("connection"),
        "server": answer.headers.get("server"),
        "content-length": "content-length" in answer.headers,
        "closed": closed or f"no; then sent {bytes(wire.buffer[:40])!r}",
    }
    assert observed == {
        "status": status,
        "connection": "close",
        "server": "colocate",
        "content-length": True,
        "closed": True,
    }, answer.body[:200]
    return answer


def _one_server(tmp_path_factory: pytest.TempPathFactory, name: str, *flags: str) -> Iterator[Served]:
    server = Served(tmp_path_factory.mktemp(name), *flags)
    try:
        yield server.wait_ready()
    finally:
        server.kill()


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module's tests: each opens its own connections and changes nothing else."""
    yield from _one_server(tmp_path_factory, "framing")


@pytest.fixture(scope="module")
def impatient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One with a short --idle-timeout, for the tests that wait for it."""
    yield from _one_server(tmp_path_factory, "impatient", *IMPATIENT)


def _wires(server: Served) -> Iterator[Callable[[], Wire]]:
    opened: list[Wire] = []

    def connect() -> Wire:
        opened.append(Wire(server.connect()))
        return opened[-1]

    yield connect
    for wire in opened:
        wire.sock.close()


@pytest.fixture
def connect(serving: Served) -> Iterator[Callable[[], Wire]]:
    yield from _wires(serving)


@pytest.fixture
def connect_impatient(impatient: Served) -> Iterator[Callable[[], Wire]]:
    yield from _wires(impatient)


# -- keep-alive ------------------------------------------------------------------------------------


def test_an_http_1_1_connection_serves_one_request_after_another(connect: Callable[[], Wire]) -> None:
    wire = connect()
    for sent in (
        request("GET", NOWHERE),
        request("POST", "/mutate-pod", body=review("kept-1")),
        request("GET", NOWHERE),
        request("POST", "/validate-pod", body=review("kept-2")),
    ):
        answer = ours(wire.send(sent).answer())
        assert answer.status in (200, 404) and not answer.closes(), (sent[:40], answer)
    assert not wire.closed(within=0.2)


def test_http_1_0_closes_after_the_answer(connect: Callable[[], Wire]) -> None:
    wire = connect().send(request("POST", "/mutate-pod", body=review("one-oh-close"), version="HTTP/1.0"))
    answer = ours(wire.answer())
    assert answer.review()["uid"] == "one-oh-close"
    assert wire.closed()


def test_http_1_0_with_keep_alive_stays_open_and_says_so(connect: Callable[[], Wire]) -> None:
    wire = connect()
    for sent in (
        request("GET", NOWHERE, "Connection: keep-alive", version="HTTP/1.0"),
        request("POST", "/mutate-pod", "Connection: keep-alive", body=review("one-oh"), version="HTTP/1.0"),
    ):
        answer = ours(wire.send(sent).answer())
        assert answer.status in (200, 404)
        # an HTTP/1.0 client closes unless told otherwise
        assert answer.headers.get("connection", "").lower() == "keep-alive", answer.headers
    assert not wire.closed(within=0.2)


@pytest.mark.parametrize(
    "sent",
    [
        request("GET", NOWHERE, "Connection: close"),
        request("POST", "/mutate-pod", "Connection: close", body=review("last")),
    ],
    ids=["unknown-path", "admission"],
)
def test_connection_close_is_answered_with_close_and_the_server_closes(
    connect: Callable[[], Wire], sent: bytes
) -> None:
    wire = connect().send(sent)
    answer = ours(wire.answer())
    assert answer.status in (200, 404) and answer.closes(), answer.headers
    assert wire.closed()


# -- pipelining, query strings, chunked bodies, HEAD, 100-continue -------------------------------


def test_pipelined_requests_are_answered_in_order_each_complete(connect: Callable[[], Wire]) -> None:
    wire = connect().send(
        request("POST", "/mutate-pod", body=review("pipe-1"))
        + request("POST", "/validate-pod", body=review("pipe-2"))
        + request("POST", "/mutate-pod?timeout=10s", body=review("pipe-3"))
        + request("GET", NOWHERE)
    )
    answers = [ours(wire.answer()) for _ in range(4)]
    assert [answer.review()["uid"] for answer in answers[:3]] == ["pipe-1", "pipe-2", "pipe-3"]
    assert "patch" in answers[0].review() and "patch" in answers[2].review()
    assert answers[3].status == 404 and answers[3].body == NOT_FOUND
    assert not any(answer.closes() for answer in answers)
    assert wire.send(request("GET", NOWHERE)).answer().status == 404, "and the connection is still usable"


@pytest.mark.parametrize("target", ["/mutate-pod?timeout=10s", "/mutate-pod?", "/mutate-pod?timeout=10s&x=%2F"])
def test_the_query_string_is_not_part_of_the_path(connect: Callable[[], Wire], target: str) -> None:
    plain = connect().send(request("POST", "/mutate-pod", body=review("plain"))).answer().review()
    queried = ours(connect().send(request("POST", target, body=review("queried"))).answer()).review()
    assert queried["uid"] == "queried" and queried["allowed"]
    assert queried["patch"] == plain["patch"]


@pytest.mark.parametrize("path", ["/healthz?verbose", "/readyz?verbose=1"])
def test_probes_with_a_query_string_are_answered(serving: Served, path: str) -> None:
    assert serving.probe(path)[0] == 200  # on the health listener


def _chunked(body: bytes, sizes: Sequence[int]) -> bytes:
    chunks, rest = [], body
    for size in sizes:
        chunks.append(rest[:size])
        rest = rest[size:]
    chunks.append(rest)
    return b"".join(b"%X\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks if chunk) + b"0\r\n\r\n"


def test_a_chunked_review_is_admitted_like_one_with_a_content_length(connect: Callable[[], Wire]) -> None:
    sized = connect().send(request("POST", "/mutate-pod", body=review("sized"))).answer().review()
    head = request("POST", "/mutate-pod", "Transfer-Encoding: chunked", "Content-Type: application/json")
    wire = connect().send(head + _chunked(review("chunked"), sizes=(1, 16, 255)))
    chunked = ours(wire.answer()).review()
    assert chunked["uid"] == "chunked" and chunked["allowed"]
    assert chunked["patch"] == sized["patch"]
    assert wire.send(request("GET", NOWHERE)).answer().status == 404, "the chunked body was read to its end"


@pytest.mark.parametrize("path", [NOWHERE, "/mutate-pod"])
def test_head_is_answered_like_get_without_the_body(connect: Callable[[], Wire], path: str) -> None:
    # one write: body bytes after the HEAD answer would be read as the start of the GET answer
    wire = connect().send(request("HEAD", path) + request("GET", path))
    head = ours(wire.answer(head=True))
    get = ours(wire.answer())
    assert head.status == get.status in (404, 405)
    assert int(head.headers["content-length"]) == len(get.body) > 0
    assert {k: v for k, v in head.headers.items() if k != "date"} == {
        k: v for k, v in get.headers.items() if k != "date"
    }
    assert not wire.closed(within=0.2)


def test_expect_100_continue_is_answered_before_the_body_is_sent(connect: Callable[[], Wire]) -> None:
    body = review("expecting")
    wire = connect().send(
        request(
            "POST",
            "/mutate-pod",
            "Expect: 100-continue",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
        )
    )
    interim = wire.answer(timeout=2)
    assert interim.status == 100, interim
    answer = ours(wire.send(body).answer())
    assert answer.review()["uid"] == "expecting"


# -- routing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sent, status, allowed",
    [
        (request("GET", "/no-such-path"), 404, None),
        (request("POST", "/no-such-path", body=b"{}"), 404, None),
        (request("GET", "/mutate-pod"), 405, {"POST"}),
        (request("PUT", "/validate-pod", body=b"{}"), 405, {"POST"}),
    ],
    ids=["get-unknown", "post-unknown", "get-admission", "put-admission"],
)
def test_unknown_paths_and_methods_are_refused_and_the_connection_stays_usable(
    connect: Callable[[], Wire], sent: bytes, status: int, allowed: set[str] | None
) -> None:
    wire = connect().send(sent + request("POST", "/mutate-pod", body=review("after-refusal")))
    answer = ours(wire.answer())
    assert answer.status == status
    if allowed is not None:
        assert {method.strip() for method in answer.headers["allow"].split(",")} == allowed
    assert wire.answer().review()["uid"] == "after-refusal", "the refused request's body was skipped"


# -- malformed and oversized requests --------------------------------------------------------------

POST = b"POST /mutate-pod HTTP/1.1\r\nHost: webhook.example\r\nContent-Type: application/json\r\n"
GET = b"GET /nowhere HTTP/1.1\r\nHost: webhook.example\r\n"


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(b"this is not http\r\n\r\n", id="garbage-request-line"),
        pytest.param(GET + b"NoColonHere\r\n\r\n", id="header-without-colon"),
        pytest.param(
            POST + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", id="length-and-chunked"
        ),
        pytest.param(
            POST + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", id="chunked-and-length"
        ),
        pytest.param(POST + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x", id="two-lengths"),
        pytest.param(POST + b"Content-Length: abc\r\n\r\n{}", id="non-numeric-length"),
        pytest.param(POST + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", id="bad-chunk-size"),
        pytest.param(POST + b"Transfer-Encoding: gzip\r\n\r\n{}", id="transfer-encoding-gzip"),
        pytest.param(GET + b"X-Test: a\x00b\r\n\r\n", id="nul-in-value"),
        pytest.param(GET + b"X-Test: a\x01b\r\n\r\n", id="control-in-value"),
        pytest.param(GET + b"X-Test: a\x7fb\r\n\r\n", id="del-in-value"),
    ],
)
def test_a_malformed_request_gets_400_and_the_connection_is_closed(connect: Callable[[], Wire], sent: bytes) -> None:
    # what follows would be a second (smuggled) request if the first were read another way
    last_answer(connect().send(sent + request("GET", "/no-such-path")), 400)


def _filler(fields: int, size: int) -> list[str]:
    return [f"X-Filler-{i:03d}: " + "f" * size for i in range(fields)]


@pytest.mark.parametrize(
    "sent, status",
    [
        # aiohttp's bounds (webhook.connections MAX_LINE, MAX_FIELD, MAX_FIELDS), answered with its 400
        pytest.param(request("GET", "/nowhere?" + "q" * URL_LIMIT), 400, id="url-over-8KiB"),
        pytest.param(request("GET", NOWHERE, "X-Big: " + "f" * URL_LIMIT), 400, id="field-over-8KiB"),
        pytest.param(request("GET", NOWHERE, *_filler(FIELD_LIMIT, 10)), 400, id="129-fields"),
    ],
)
def test_an_oversized_request_head_is_refused_and_the_connection_is_closed(
    connect: Callable[[], Wire], sent: bytes, status: int
) -> None:
    wire = connect()
    try:
        wire.send(sent)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may stop reading at its limit; its answer must still arrive
    last_answer(wire, status)


@pytest.mark.parametrize(
    "sent",
    [
        pytest.param(request("GET", "/nowhere?" + "q" * (URL_LIMIT // 2)), id="4KiB-url"),
        pytest.param(request("GET", NOWHERE, *_filler(48, 1000)), id="48KiB-head"),
        pytest.param(request("GET", NOWHERE, *_filler(FIELD_LIMIT - 1, 10)), id="128-fields"),
    ],
)
def test_a_large_request_head_within_the_limits_is_served(connect: Callable[[], Wire], sent: bytes) -> None:
    assert ours(connect().send(sent).answer()).status == 404


@pytest.mark.parametrize("upgrade", ["websocket", "h2c"])
def test_an_upgrade_is_answered_as_a_plain_request_and_the_connection_closed(
    connect: Callable[[], Wire], upgrade: str
) -> None:
    wire = connect().send(
        request(
            "GET",
            NOWHERE,
            f"Upgrade: {upgrade}",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version: 13",
            "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA",
        )
    )
    assert last_answer(wire, 404).body == NOT_FOUND


# -- connections that stop mid-request -------------------------------------------------------------


def test_headers_half_sent_on_a_kept_alive_connection_are_closed_after_the_idle_timeout(
    connect_impatient: Callable[[], Wire],
) -> None:
    wire = connect_impatient()
    assert wire.send(request("GET", NOWHERE)).answer().status == 404
    started = time.monotonic()
    wire.send(b"POST /mutate-pod HTTP/1.1\r\nHost: webhook.example\r\nContent-Type: appl")
    assert wire.closed(within=3)
    assert time.monotonic() - started < 2.5  # --idle-timeout 1, and some slack


def test_headers_trickled_a_byte_at_a_time_do_not_hold_a_kept_alive_connection(
    connect_impatient: Callable[[], Wire],
) -> None:
    wire = connect_impatient()
    assert wire.send(request("GET", NOWHERE)).answer().status == 404
    started, closed = time.monotonic(), False
    for byte in b"GET /nowhere HTTP/1.1\r\nHost: webhook.example\r\nX-Slow: " + b"s" * 100:
        try:
            wire.send(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            closed = True
        # a byte every 0.2 s, each well within --idle-timeout 1 of the one before
        closed = closed or wire.closed(within=0.2)
        if closed or time.monotonic() - started > 3:
            break
    assert closed and time.monotonic() - started < 2.5, "the deadline is not moved by each byte"


# -- a client that stops reading -------------------------------------------------------------------

FLOOD = 2000
FLOOD_CONTAINERS = 10  # about 12 KB per answer: 2,000 of them are far more than socket buffers hold
RSS_BOUND_KIB = 100 * 1024


def _admitted(server: Served) -> float:
    return server.metric("controller_runtime_webhook_requests_total", default=0, webhook="/mutate-pod")


def _another_client(server: Served) -> float:
    """How long a probe and an admission take on a new connection."""
    started = time.monotonic()
    assert server.request(NOWHERE, timeout=2)[0] == 404
    assert server.review("/mutate-pod", json.loads(review("bystander")), timeout=2)["uid"] == "bystander"
    return time.monotonic() - started


async def test_a_client_that_reads_nothing_holds_back_only_its_own_answers(serving: Served) -> None:
    pod = wide_pod(FLOOD_CONTAINERS)
    flood = b"".join(request("POST", "/mutate-pod", body=review(f"flood-{i}", pod)) for i in range(FLOOD))
    rss_before, admitted_before = serving.rss_kib(), await asyncio.to_thread(_admitted, serving)
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", serving.port, ssl=serving.tls, server_hostname="localhost", limit=4096
    )  # the client reads at most 8 KiB ahead
    try:
        writer.write(flood)  # buffered here and sent as fast as the server takes it
        assert await asyncio.to_thread(_another_client, serving) < 2.0

        seen: list[float] = []

        def stalled() -> bool:
            seen.append(_admitted(serving))
            return len(seen) > 2 and seen[-1] == seen[-2] == seen[-3]

        # polled from a thread: the event loop goes on sending the flood as the server takes it
        await asyncio.to_thread(
            wait_for_sync, stalled, timeout=10, interval=0.1, message=lambda: f"the server to stop answering ({seen})"
        )
        answered_unread = seen[-1] - admitted_before - 1  # minus the bystander
        assert answered_unread < FLOOD, "a client that reads nothing must stop the server working for it"
        rss_stalled = serving.rss_kib()

        buffer, answers = bytearray(), list[Answer]()
        while len(answers) < FLOOD:
            while (parsed := parse_answer(buffer)) is not None:
                answer, used = parsed
                del buffer[:used]
                answers.append(answer)
            if len(answers) < FLOOD:
                data = await asyncio.wait_for(reader.read(1 << 20), timeout=5)
                assert data, f"closed after {len(answers)} of {FLOOD} answers"
                buffer += data
        assert [answer.review()["uid"] for answer in answers] == [f"flood-{i}" for i in range(FLOOD)]
        assert not buffer
        grown = max(rss_stalled, serving.rss_kib()) - rss_before
        assert grown < RSS_BOUND_KIB, f"the server grew by {grown} KiB"
    finally:
        writer.close()
