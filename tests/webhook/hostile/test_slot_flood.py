"""Connection slots held by sockets that never start TLS do not shut the API server out (issue 41,
item 1): before, `--max-connections` plain TCP sockets that sent nothing, each reopened as it was
closed, held every slot until `--first-request-timeout` and the API server's connections were
refused (14 of ~390 admissions answered in 20 s)."""

from __future__ import annotations

import selectors
import socket
import ssl
import threading
import time

from tests.support.admission import admission_review
from tests.support.builders import make_pod
from tests.support.wait import wait_for_sync

CAP = 20


class SilentFlood:
    """`count` plain TCP sockets from `source` to the server that send nothing; each the server
    closes is reopened at once, until `stop()` (bounded by `seconds` in any case)."""

    def __init__(self, port: int, count: int, source: str = "127.0.0.1", seconds: float = 60) -> None:
        self.port, self.source, self.until = port, source, time.monotonic() + seconds
        self.selector = selectors.DefaultSelector()
        self.reopened = 0
        self.stopping = threading.Event()
        for _ in range(count):
            self._open()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open(self) -> None:
        sock = socket.socket()
        sock.bind((self.source, 0))
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", self.port))
        self.selector.register(sock, selectors.EVENT_READ)

    def _run(self) -> None:
        while not self.stopping.is_set() and time.monotonic() < self.until:
            for key, _ in self.selector.select(timeout=0.05):
                sock = key.fileobj
                self.selector.unregister(sock)
                sock.close()  # type: ignore[union-attr]
                self.reopened += 1
                self._open()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(10)
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self.selector.close()


def _answered(server, count: int) -> int:
    answered = 0
    for i in range(count):  # as the API server does: a new connection when it finds none open
        try:
            status, _ = server.request("/mutate-pod", admission_review(make_pod(f"p{i}"), uid=f"u{i}"), timeout=3)
        except OSError:  # refused at the cap, reset, or timed out (urllib's URLError is an OSError)
            status = 0
        answered += status == 200
    return answered


def test_admissions_are_answered_while_silent_sockets_fill_every_slot(served):
    server = served("--max-connections", str(CAP))
    flood = SilentFlood(server.port, CAP)
    try:
        wait_for_sync(lambda: server.metric("colocate_webhook_connections"), until=lambda n: n >= CAP, timeout=5)
        answered = _answered(server, 30)
    finally:
        flood.stop()
    assert answered >= 27, f"{answered}/30 admissions answered with every slot flooded"
    assert server.metric("colocate_webhook_connections_closed_total", reason="unserved_evicted") >= 27


def test_a_silent_socket_is_closed_after_the_handshake_timeout(served):
    server = served("--handshake-timeout", "0.3")
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.settimeout(5)
    started = time.monotonic()
    try:
        assert sock.recv(1) == b""
    except ConnectionResetError:
        pass
    assert time.monotonic() - started < 2, "closed after --handshake-timeout, not --first-request-timeout (10 s)"
    wait_for_sync(
        lambda: server.metric("colocate_webhook_connections_closed_total", reason="handshake_timeout", default=0),
        until=lambda n: n == 1,
        timeout=5,
    )


def _tls(server, source: str) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=5, source_address=(source, 0))
    return server.tls.wrap_socket(raw, server_hostname="localhost")


def _closed(sock: ssl.SSLSocket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def test_at_the_cap_the_address_holding_most_connections_gives_one_up(served):
    server = served("--max-connections", "5", "--first-request-timeout", "30")
    own = _tls(server, "127.0.0.1")  # the oldest connection not yet served
    other = [_tls(server, "127.0.0.2") for _ in range(4)]
    wait_for_sync(lambda: server.metric("colocate_webhook_connections"), until=lambda n: n == 5, timeout=5)
    assert server.review("/mutate-pod", admission_review(make_pod("newcomer")))["allowed"]
    assert not _closed(own, within=0.3), "the lone client's connection stays"
    assert sum(_closed(sock, within=0.5) for sock in other) >= 1
    for sock in (own, *other):
        sock.close()
