"""A request head is bounded as a whole, not only field by field (issue 41, item 2): aiohttp takes
128 fields of 8 KiB, so each connection could hold a 1 MiB head that no budget counted (500 such
connections took the webhook from 93 to 770 MiB)."""

from __future__ import annotations

import json
import ssl

from tests.support.admission import admission_review
from tests.support.builders import make_pod

FIELD = b"X-Filler-%03d: " + b"a" * 7000 + b"\r\n"


def _answer(sock: ssl.SSLSocket, within: float = 5) -> bytes:
    """What the server sends until it closes; a timeout fails (the head was never refused)."""
    sock.settimeout(within)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except (ConnectionResetError, ssl.SSLError):
        pass
    return received


def test_a_head_of_a_hundred_fields_of_7_kib_is_refused_and_closed(served):
    server = served("--idle-timeout", "10")
    sock = server.connect()
    sock.sendall(b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\n")
    for i in range(100):  # each field within aiohttp's 8 KiB; 700 KiB together; the head never ends
        try:
            sock.sendall(FIELD % i)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            break
    answer = _answer(sock)  # the 431, unless the close overtook it (the client was still sending)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert server.metric("colocate_webhook_connections_closed_total", reason="head_too_large") == 1
    assert server.review("/mutate-pod", admission_review(make_pod("after")))["allowed"]


def test_a_head_under_64_kib_with_its_body_in_the_same_write_is_served(served):
    server = served()
    body = json.dumps(admission_review(make_pod("p"), uid="fat-head")).encode() + b" " * 300_000
    fields = b"".join(FIELD % i for i in range(8))  # 56 KiB of head
    sock = server.connect()
    sock.sendall(
        b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + fields
        + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    sock.settimeout(5)
    answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200") and b"fat-head" in answer
    # kept alive: a second request on the same connection, its head counted afresh
    sock.sendall(
        b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\n" + fields + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    assert sock.recv(65536).startswith(b"HTTP/1.1 200")
