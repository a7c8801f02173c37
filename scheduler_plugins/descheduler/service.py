"""Running rounds: N back to back, or one every `deschedulingInterval` for as long as the process
lives — then as a cluster component: leader election on a Lease (only the leader evicts), `/healthz`
(200 once the cluster state is listed) and `/metrics` (Prometheus), served by a small stdlib HTTP
server on the configured bind addresses.

One async core; `asyncio.run` is at the command-line edge. A round runs in a worker thread (the
Eviction API calls block), never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from cli.flags import bind_address
from cluster.leader import LeaseElector
from scheduler_plugins.descheduler.cluster import DeschedulerView
from scheduler_plugins.descheduler.framework.report import RoundReport
from scheduler_plugins.descheduler.framework.runtime import Descheduler
from scheduler_plugins.descheduler.metrics import DeschedulerMetrics

log = logging.getLogger("colocate.descheduler")


@dataclass(frozen=True)
class Schedule:
    rounds: int | None  # None: forever
    interval: float  # seconds between the end of one round and the start of the next


class HealthServer:
    """`/healthz` and/or `/metrics` on one address, in a daemon thread."""

    def __init__(
        self, address: tuple[str, int], paths: set[str], ready: Callable[[], bool], registry: CollectorRegistry
    ) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's spelling)
                path = self.path.split("?", 1)[0]
                if path == "/healthz" and "/healthz" in paths:
                    ok = ready()
                    self._send(200 if ok else 503, "text/plain", b"ok" if ok else b"cluster state not listed yet")
                elif path == "/metrics" and "/metrics" in paths:
                    self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry))
                else:
                    self._send(404, "text/plain", b"not found")

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(address, Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="descheduler-http", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def health_servers(
    healthz: str, metrics: str, ready: Callable[[], bool], registry: CollectorRegistry
) -> list[HealthServer]:
    """One server when both paths share an address (the default), else one each."""
    if healthz == metrics:
        return [HealthServer(bind_address(healthz), {"/healthz", "/metrics"}, ready, registry)]
    return [
        HealthServer(bind_address(healthz), {"/healthz"}, ready, registry),
        HealthServer(bind_address(metrics), {"/metrics"}, ready, registry),
    ]


async def keep_leading(
    elector: LeaseElector, retry_period: float, leading: asyncio.Event, metrics: DeschedulerMetrics
) -> None:
    """Acquire and renew the lease every `retry_period`; `leading` is set while we hold it."""
    while True:
        try:
            leader = await asyncio.to_thread(elector.try_acquire_or_renew)
        except Exception as exc:  # the API server is unreachable: we cannot know we still lead
            log.warning("leader election failed: %s", exc)
            leader = False
        if leader != leading.is_set():
            log.info("%s the lease %s/%s", "acquired" if leader else "lost", elector.namespace, elector.name)
        (leading.set if leader else leading.clear)()
        metrics.leader.set(1 if leader else 0)
        await asyncio.sleep(retry_period)


async def wait_synced(view: DeschedulerView) -> None:
    """Until every kind has been listed once (awaited, not polled)."""
    loop, synced = asyncio.get_running_loop(), asyncio.Event()

    def notify() -> None:
        loop.call_soon_threadsafe(synced.set)

    view.on_synced = notify
    if view.synced:
        synced.set()
    await synced.wait()


async def run_rounds(
    descheduler: Descheduler,
    view: DeschedulerView,
    schedule: Schedule,
    emit: Callable[[RoundReport], None],
    metrics: DeschedulerMetrics,
    leading: asyncio.Event | None = None,
    refresh: Callable[[], object] | None = None,
) -> None:
    """Run the scheduled rounds; with `leading`, only while it is set."""
    number = 0
    while schedule.rounds is None or number < schedule.rounds:
        if leading is not None and not leading.is_set():
            log.info("waiting to become the leader")
            await leading.wait()
        if refresh is not None:
            await asyncio.to_thread(refresh)
        number += 1
        report = await asyncio.to_thread(descheduler.run_round, number, view.snapshot())
        metrics.observe(report)
        emit(report)
        if schedule.rounds is None:
            await asyncio.sleep(schedule.interval)
