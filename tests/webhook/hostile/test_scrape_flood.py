"""Scrapers cannot take the event loop from admissions (issue 41, item 6): the probe listener
shares the server process's loop, and before it had no connection cap, no pace and rendered every
scrape (~5 ms of CPU each): 200 connections pipelining 1,000 scrapes cut admissions from ~290 to
20 in 15 s."""

from __future__ import annotations

import os
import socket

from colocate.cluster.probes import PROBE_MAX_CONNECTIONS, CachedExposition
from tests.support.admission import admission_review
from tests.support.builders import make_pod

SCRAPERS = 200
PIPELINED = 1000


def _flood(port: int) -> list[socket.socket]:
    scrape = b"GET /metrics HTTP/1.1\r\nHost: metrics\r\n\r\n" * PIPELINED
    scrapers = []
    for _ in range(SCRAPERS):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            continue
        sock.setblocking(False)
        try:
            sock.send(scrape)  # as much as the socket takes; never read
        except (BlockingIOError, ConnectionResetError, BrokenPipeError):
            pass
        scrapers.append(sock)
    return scrapers


def _open_files(server) -> int:
    """The server's open file descriptors (its sockets among them)."""
    return len(os.listdir(f"/proc/{server.process.pid}/fd"))


def test_two_hundred_pipelining_scrapers_do_not_starve_admissions(served):
    server = served("--metrics-cache", "1")
    files = _open_files(server)
    scrapers = _flood(server.metrics_port)
    try:
        answered = 0
        for i in range(30):
            try:
                response = server.review("/mutate-pod", admission_review(make_pod("p"), uid=f"u{i}"), timeout=2)
                answered += response["uid"] == f"u{i}"
            except OSError:
                pass
        assert answered == 30, f"{answered}/30 admissions answered during the scrape flood"
        # the listener holds at most its cap (a few more for the admissions' own connections)
        assert _open_files(server) - files <= PROBE_MAX_CONNECTIONS + 4
        # kubelet's probe gets in: the scrapers' address gives up a connection for it
        assert server.probe("/readyz")[0] == 200
    finally:
        for sock in scrapers:
            sock.close()


def test_the_exposition_is_rendered_at_most_once_per_interval():
    now = [0.0]
    renders = []
    exposition = CachedExposition(lambda: renders.append(1) or str(len(renders)).encode(), 1.0, lambda: now[0])
    assert [exposition() for _ in range(100)] == [b"1"] * 100
    now[0] = 1.0
    assert exposition() == b"2" and len(renders) == 2
