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
    return server.metric("colocate_webhook_connections") - 1  # minus the scrape's own connection


@pytest.mark.parametrize("event_loop", ["uvloop", "asyncio"])
def test_silent_connections_are_closed_after_the_first_request_timeout(served, event_loop):
    # each loop has its own TLS protocol class behind the gate (webhook.gate._tls_protocol)
    server = served(*FAST, "--event-loop", event_loop)
    tls = [server.connect() for _ in range(20)]  # handshake done, nothing sent
    plain = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(5)]  # not even TLS
    assert _open_gauge(server) >= 25
    started = time.monotonic()
    assert all(_closed_by_server(sock, within=5) for sock in [*tls, *plain])
    assert time.monotonic() - started < 4
    assert server.metric("colocate_webhook_connections_closed_total", reason="first_request_timeout") == 25
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
    for _ in range(4):  # the readiness probe's connection is gone; 4 held + 1 scrape = the cap
        held.append(server.connect())
    wait_for_sync(lambda: _open_gauge(server), until=lambda n: n == 4, timeout=5, message="4 connections held")
    # The scrape's own connection may still be closing on the server's side: until it has, the cap
    # (rightly) refuses the fifth; those refusals are counted too.
    settling: list[int] = []

    def fifth() -> ssl.SSLSocket | None:
        try:
            return server.connect()
        except (ConnectionResetError, ssl.SSLError, OSError):
            settling.append(1)
            return None

    held.append(wait_for_sync(fifth, until=lambda sock: sock is not None, timeout=5, message="a fifth connection"))
    refused = 0
    for _ in range(10):
        try:
            server.connect().close()
        except (ConnectionResetError, ssl.SSLError, OSError):
            refused += 1
    assert refused == 10
    for sock in held:
        sock.close()
    wait_for_sync(
        lambda: server.request("/healthz", timeout=1)[0] == 200,
        ignore=(OSError,),
        timeout=5,
        message="the server to accept again",
    )
    assert server.metric("colocate_webhook_connections_closed_total", reason="over_limit") == 10 + len(settling)

    def warnings() -> list[dict]:
        return [line for line in server.log_lines() if "--max-connections" in str(line.get("msg"))]

    wait_for_sync(warnings, timeout=5, message="the warning to be written")
    assert len(warnings()) == 1, "one warning per period, not one per refused connection"
    assert server.review("/mutate-pod", admission_review(make_pod("after")))["allowed"]


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
    assert server.request("/metrics")[0] == 200
    server.tls.load_cert_chain(client / "client.crt", client / "client.key")
    assert server.review("/mutate-pod", review)["allowed"]


def test_bodies_held_at_once_are_bounded_over_all_connections(served):
    server = served("--max-body", "100000", "--max-body-bytes", "200000", "--first-request-timeout", "5")
    head = b"POST /mutate-pod HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 90000\r\n\r\n"
    held = []
    for _ in range(2):  # 2 x 80,000 bytes held, short of their announced length: waiting for the rest
        sock = server.connect()
        sock.sendall(head + b" " * 80_000)
        held.append(sock)
    time.sleep(0.5)  # let the server read them: nothing to observe from outside until it answers
    third = server.connect()
    third.sendall(head + b" " * 80_000)
    third.settimeout(5)
    answer = third.recv(4096)
    assert answer.startswith(b"HTTP/1.1 503") and b"exceed 200000 bytes" in answer
    assert server.review("/mutate-pod", admission_review(make_pod("small")))["allowed"], "small bodies still fit"
    for sock in held:
        sock.close()
    assert server.metric("colocate_webhook_refused_requests_total", reason="busy") == 1
