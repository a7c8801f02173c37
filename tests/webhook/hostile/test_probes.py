"""Probes and metrics have their own listener (issue 24, item 4): a scraper that misbehaves on it
competes with nothing the API server waits for, and the webhook port serves admission paths only.

Before, five connections pipelining 3,000 `GET /metrics` each and reading no answers took
admissions down for about a minute (100 % CPU, RSS 82 -> 336 MiB) on the shared port."""

from __future__ import annotations

import socket
import time

from tests.support.admission import admission_review
from tests.support.builders import make_pod

SCRAPERS = 5
PIPELINED = 3000
RSS_BOUND_KIB = 100 * 1024


def test_a_scraper_that_reads_nothing_does_not_delay_admissions(served):
    server = served()
    rss_before = server.rss_kib()
    scrape = b"GET /metrics HTTP/1.1\r\nHost: metrics\r\n\r\n" * PIPELINED
    scrapers = []
    for _ in range(SCRAPERS):
        sock = socket.create_connection(("127.0.0.1", server.metrics_port), timeout=5)
        sock.setblocking(False)
        try:
            sock.send(scrape)  # as much as the socket takes; never read
        except BlockingIOError:
            pass
        scrapers.append(sock)
    try:
        latencies = []
        for i in range(50):
            started = time.monotonic()
            assert (
                server.review("/mutate-pod", admission_review(make_pod("p"), uid=f"u{i}"), timeout=5)["uid"] == f"u{i}"
            )
            latencies.append(time.monotonic() - started)
        latencies.sort()
        assert latencies[-1] < 1.0, f"slowest admission {latencies[-1]:.3f}s during the scrape flood"
        assert server.rss_kib() - rss_before < RSS_BOUND_KIB
    finally:
        for sock in scrapers:
            sock.close()


def test_the_webhook_port_serves_admission_paths_only(served):
    server = served()
    for path in ("/healthz", "/readyz", "/metrics"):
        assert server.request(path)[0] == 404, path
        assert server.probe(path)[0] == 200, path


def test_metrics_can_be_turned_off_as_in_controller_runtime(served):
    server = served("--metrics-bind-address", "0")
    assert server.probe("/readyz")[0] == 200
    try:
        server.probe("/metrics", timeout=1)
        reachable = True
    except OSError:
        reachable = False
    assert not reachable
