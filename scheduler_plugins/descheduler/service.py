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
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from colocate.cli.flags import bind_address
from colocate.cluster.probes import ProbeListeners, component_answers, readiness_of
from scheduler_plugins.descheduler.framework.report import RoundReport
from scheduler_plugins.descheduler.metrics import DeschedulerMetrics
from scheduler_plugins.descheduler.runner import DeschedulerRunner

log = logging.getLogger("colocate.descheduler")


@dataclass(frozen=True)
class Schedule:
    rounds: int | None  # None: forever
    interval: float  # seconds between the end of one round and the start of the next


def health_servers(
    healthz: str, metrics: str, ready: Callable[[], bool], registry: CollectorRegistry
) -> ProbeListeners:
    """`/healthz` (200 once the cluster state is listed) and `/metrics`: one listener when both
    share an address (the default), else one each. The descheduler has no `/readyz`."""
    paths = frozenset({"/healthz", "/metrics"})
    readiness = readiness_of(ready, "cluster state not listed yet")
    answers = component_answers(readiness, registry, healthy=readiness, paths=paths)
    return ProbeListeners(bind_address(healthz), bind_address(metrics), answers)


async def run_rounds(
    runner: DeschedulerRunner,
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
        report = await asyncio.to_thread(runner.round)
        metrics.observe(report)
        metrics.observe_scavenged(runner.scavenged_total())
        emit(report)
        if schedule.rounds is None:
            await _between_rounds(runner, schedule.interval, leading, metrics)


#: how often PodMigrationJobs advance between rounds (Koordinator's controller requeues after 3s)
MIGRATION_REQUEUE_SECONDS = 3.0


async def _between_rounds(
    runner: DeschedulerRunner, interval: float, leading: asyncio.Event | None, metrics: DeschedulerMetrics | None = None
) -> None:
    """Wait for the next round; meanwhile advance the PodMigrationJobs every few seconds (a job
    needs several passes: reserve, scheduled, evict, bound), as the leader only."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + interval
    while (left := deadline - loop.time()) > 0:
        await asyncio.sleep(min(left, MIGRATION_REQUEUE_SECONDS))
        if loop.time() < deadline and (leading is None or leading.is_set()):
            for entry in await asyncio.to_thread(runner.between_rounds):
                log.debug("PodMigrationJob %s of %s: %s %s", entry.job, entry.pod, entry.phase, entry.reason)
            if metrics is not None:
                metrics.observe_scavenged(runner.scavenged_total())
