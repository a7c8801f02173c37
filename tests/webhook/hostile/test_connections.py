"""Connections that cost memory and do nothing are closed: before TLS when over the cap, after
--first-request-timeout when silent or slow, after --idle-timeout when kept alive and idle."""

from __future__ import annotations

import json
import socket
import ssl
import time

import pytest

from tests.support.admission import admission_review
from tests.support.builders import make_pod
from tests.support.wait import wait_for_sync

FAST = ("--first-request-timeout", "1", "--idle-timeout", "2")


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes `sock` within `within` seconds (EOF or reset on read)."""
    sock.settimeout(within)
    try:
        return sock.recv(1024) == b""
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _open_gauge(server) -> float:
    return server.metric("colocate_webhook_connections")  # scrapes have their own listener


@pytest.mark.parametrize("event_loop", ["uvloop", "asyncio"])
def test_silent_connections_are_closed_after_the_first_request_timeout(served, event_loop):
    # each loop has its own TLS layer behind the gate (loop.connect_accepted_socket)
    server = served(*FAST, "--event-loop", event_loop)
    tls = [server.connect() for _ in range(20)]  # handshake done, nothing sent
    plain = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(5)]  # not even TLS
    wait_for_sync(lambda: _open_gauge(server), until=lambda n: n >= 25, timeout=5, message="25 connections counted")
    started = time.monotonic()
    assert all(_closed_by_server(sock, within=5) for sock in [*tls, *plain])
    assert time.monotonic() - started < 4
    assert server.metric("colocate_webhook_connections_closed_total", reason="first_request_timeout") == 20
    # the plain ones never started TLS: closed at --handshake-timeout, long before
    assert server.metric("colocate_webhook_connections_closed_total", reason="handshake_timeout") == 5
    wait_for_sync(lambda: _open_gauge(server), until=lambda n: n == 0, timeout=5, message="the gauge to drop")
    assert server.review("/mutate-pod", admission_review(make_pod("served")))["allowed"]


def test_half_sent_headers_and_bodies_do_not_hold_a_connection(served):
    server = served(*FAST)
    headers = server.connect()
    headers.sendall(b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
    body = server.connect()
    body.sendall(b'POST /mutate-pod HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"apiVersion": ')
    assert _closed_by_server(headers, within=5)
    body.settimeout(5)
    answer = body.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408") and b"Connection: close" in answer
    assert server.metric("colocate_webhook_refused_requests_total", reason="slow_body") == 1


def test_kept_alive_connections_are_closed_after_the_idle_timeout(served):
    server = served(*FAST)
    sock = server.connect()
    body = json.dumps(admission_review(make_pod("p"))).encode()
    sock.sendall(
        b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    sock.settimeout(5)
    assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    # a request arrived in time: the first-request deadline (1 s) no longer applies, idle (2 s) does
    assert not _closed_by_server(sock, within=1.5)
    assert _closed_by_server(sock, within=3)


def test_connections_over_the_cap_are_closed_before_tls_and_counted(served):
    server = served("--max-connections", "5", "--first-request-timeout", "30")
    held = []
    for _ in range(5):  # each in the middle of a body: none may be closed to make room
        sock = server.connect()
        sock.sendall(b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        held.append(sock)
    wait_for_sync(lambda: _open_gauge(server), until=lambda n: n == 5, timeout=5, message="5 connections held")
    refused = 0
    for _ in range(10):
        try:
            server.connect().close()
        except (ConnectionResetError, ssl.SSLError, OSError):
            refused += 1
    assert refused == 10
    for sock in held:
        sock.close()
    # the server sees the held connections go before it has room again; a request sent before that
    # would itself be refused (and counted), so wait on the gauge, then ask once
    wait_for_sync(lambda: _open_gauge(server), until=lambda n: n == 0, timeout=5, message="the held ones closed")
    assert server.request("/no-such-path", timeout=5)[0] == 404
    assert server.metric("colocate_webhook_connections_closed_total", reason="over_limit") == 10

    def warnings() -> list[dict]:
        return [line for line in server.log_lines() if "--max-connections" in str(line.get("msg"))]

    wait_for_sync(warnings, timeout=5, message="the warning to be written")
    assert len(warnings()) == 1, "one warning per period, not one per refused connection"
    assert server.review("/mutate-pod", admission_review(make_pod("after")))["allowed"]


def _admit_on(sock: ssl.SSLSocket, uid: str) -> bytes:
    body = json.dumps(admission_review(make_pod("p"), uid=uid)).encode()
    sock.sendall(
        b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    sock.settimeout(5)
    return sock.recv(65536)


def test_one_client_holding_every_connection_kept_alive_does_not_shut_out_another(served):
    """At the cap the connection idle longest is closed for the new one (issue 24, item 7): before,
    one client keeping --max-connections connections alive between its requests refused all others."""
    server = served("--max-connections", "5")
    hog = [server.connect() for _ in range(5)]
    for i, sock in enumerate(hog):  # each served one request and is now kept alive, idle
        assert _admit_on(sock, f"hog-{i}").startswith(b"HTTP/1.1 200")
    newcomers = [server.connect() for _ in range(3)]  # each kept open: each needs a place of its own
    for i, sock in enumerate(newcomers):
        assert _admit_on(sock, f"new-{i}").startswith(b"HTTP/1.1 200")
    closed = [_closed_by_server(sock, within=0.5) for sock in hog]
    assert closed == [True, True, True, False, False], "the longest idle ones made room, oldest first"
    assert server.metric("colocate_webhook_connections_closed_total", reason="idle_evicted") == 3
    assert server.metric("colocate_webhook_connections_closed_total", reason="over_limit", default=0) == 0


def test_a_connection_in_a_request_is_never_closed_to_make_room(served):
    server = served("--max-connections", "2", "--first-request-timeout", "5")
    busy = []
    for _ in range(2):  # each in the middle of a body: in a request, not idle
        sock = server.connect()
        sock.sendall(b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        busy.append(sock)
    wait_for_sync(lambda: _open_gauge(server), until=lambda n: n == 2, timeout=5, message="2 connections busy")
    with pytest.raises((ConnectionResetError, ssl.SSLError, OSError)):
        server.connect()
    assert server.metric("colocate_webhook_connections_closed_total", reason="over_limit") >= 1
    for sock in busy:
        assert not _closed_by_server(sock, within=0.2)


def test_tls_1_2_offers_only_forward_secret_aead_suites(served):
    server = served()
    cbc = ssl.create_default_context(cafile=str(server.certs / "ca.crt"))
    cbc.maximum_version = ssl.TLSVersion.TLSv1_2
    cbc.set_ciphers("ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-SHA384:AES128-SHA:AES256-SHA256")
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
        try:
            cbc.wrap_socket(raw, server_hostname="localhost")
            handshake = "accepted"
        except ssl.SSLError as error:
            handshake = f"refused: {error}"
    assert handshake.startswith("refused")
    aead = ssl.create_default_context(cafile=str(server.certs / "ca.crt"))
    aead.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
        with aead.wrap_socket(raw, server_hostname="localhost") as tls:
            assert "GCM" in tls.cipher()[0] or "CHACHA20" in tls.cipher()[0]


def _client_pki(directory):
    """A client CA, and a client certificate (clientAuth) issued by it, as PEM files."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    from certs.generate import generate_ca, new_key, utcnow
    from certs.material import pem_certs, pem_key

    now = utcnow()
    ca_key, ca = generate_ca(now)
    key = new_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir()
    (directory / "ca.crt").write_bytes(pem_certs([ca]))
    (directory / "client.crt").write_bytes(pem_certs([cert]))
    (directory / "client.key").write_bytes(pem_key(key))
    return directory


def test_with_a_client_ca_admission_paths_need_its_certificate_and_probes_do_not(tmp_path, served):
    client = _client_pki(tmp_path / "client")
    server = served("--client-ca", str(client / "ca.crt"))  # ready: /readyz needs no certificate
    review = admission_review(make_pod("p"))
    status, body = server.request("/mutate-pod", review)
    assert status == 403 and b"client certificate" in body
    assert server.probe("/metrics")[0] == 200 and server.probe("/readyz")[0] == 200
    server.tls.load_cert_chain(client / "client.crt", client / "client.key")
    assert server.review("/mutate-pod", review)["allowed"]


def _hold_body(server, announced: int, sent: int) -> ssl.SSLSocket:
    """A connection that sends `sent` bytes of an `announced`-byte body and waits."""
    sock = server.connect()
    sock.sendall(
        b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (announced, b" " * sent)
    )
    return sock


def test_bodies_held_at_once_are_bounded_over_all_connections(served):
    # 200,000 bytes over 10 connections: a 10,000-byte share each, and a 100,000-byte shared pool
    server = served(
        "--max-body",
        "100000",
        "--body-budget-bytes",
        "200000",
        "--max-connections",
        "10",
        "--first-request-timeout",
        "5",
    )
    held = [_hold_body(server, 90_000, 60_000)]  # 50,000 beyond its share, from the pool
    wait_for_sync(lambda: _open_gauge(server), until=lambda n: n == 1, timeout=5, message="the first body held")
    time.sleep(0.5)  # let the server read it: nothing to observe from outside until it answers
    third = _hold_body(server, 90_000, 80_000)  # 70,000 more would overdraw the pool
    third.settimeout(5)
    answer = third.recv(4096)
    assert answer.startswith(b"HTTP/1.1 503") and b"exceed 200000 bytes" in answer
    assert server.review("/mutate-pod", admission_review(make_pod("small")))["allowed"], "small bodies still fit"
    for sock in held:
        sock.close()
    assert server.metric("colocate_webhook_refused_requests_total", reason="busy") == 1


def test_a_few_clients_holding_large_bodies_do_not_turn_admissions_away(served):
    """Issue 24, item 5: eight connections each sending --max-body minus one byte and waiting held
    the whole budget, and every admission got 503 busy. Each connection's share of the budget
    now keeps an ordinary AdmissionReview out of their reach."""
    server = served(
        "--max-body",
        "200000",
        "--body-budget-bytes",
        "1600000",
        "--max-connections",
        "20",
        "--first-request-timeout",
        "8",
    )
    hogs = [_hold_body(server, 200_000, 199_999) for _ in range(8)]
    wait_for_sync(lambda: _open_gauge(server), until=lambda n: n >= 8, timeout=5, message="8 bodies in flight")
    time.sleep(0.5)  # let the server read what they sent
    statuses = []
    for i in range(10):
        status, _ = server.request("/mutate-pod", admission_review(make_pod("p"), uid=f"legit-{i}"))
        statuses.append(status)
    assert statuses == [200] * 10
    for sock in hogs:
        sock.close()


def test_the_default_max_body_is_what_kube_apiserver_can_send():
    from webhook.connections import APISERVER_MAX_OBJECT, DEFAULT_MAX_BODY

    assert APISERVER_MAX_OBJECT == 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes
    assert 2 * APISERVER_MAX_OBJECT < DEFAULT_MAX_BODY <= 2 * APISERVER_MAX_OBJECT + 128 * 1024


def test_a_held_body_gets_its_408_after_the_first_request_timeout_as_documented(served):
    """Issue 24, item 5: the body deadline was the idle timeout (30 s) while docs/serve.md says
    --first-request-timeout (10 s)."""
    server = served("--first-request-timeout", "1", "--idle-timeout", "6")
    sock = _hold_body(server, 1000, 10)
    started = time.monotonic()
    sock.settimeout(8)
    answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
    assert time.monotonic() - started < 3, "the first-request timeout, not the idle timeout"
