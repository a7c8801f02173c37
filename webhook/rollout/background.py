"""`serve --audit-interval D`: the audit in the webhook's process, on the state it already watches.

Every D the current snapshot (the one admissions read: no extra API calls) is audited in a worker
thread, the counts are exported as metrics and, when the server reads the API server, the
PolicyReports are written. A failed round is logged and counted; the next one runs as planned.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from colocate.cluster.metrics import Series
from webhook.registry import Registry
from webhook.rollout.audit import RESULTS, AuditReport, audit
from webhook.rollout.reports import ReportWriter, policy_reports
from webhook.state import StateHolder

log = logging.getLogger("colocate.audit")


class AuditMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        series = Series(registry)
        self.pods = series.gauge(
            "colocate_audit_pods",
            "Running pods per ClusterColocationProfile and audit result "
            "(pass, fail, warn, error, skip) in the last audit.",
            ("profile", "result"),
            merge="max",
        )
        self.drifted = series.gauge(
            "colocate_audit_drifted_pods",
            "Running pods that differ from what the current profiles would make of them, in the last audit.",
            merge="max",
        )
        self.duration = series.gauge("colocate_audit_duration_seconds", "How long the last audit took.", merge="max")
        self.last_run = series.gauge(
            "colocate_audit_last_run_timestamp_seconds", "When the last audit finished, Unix time.", merge="max"
        )
        self.runs = series.counter("colocate_audit_runs_total", "Audit rounds, by result (ok or error).", ("result",))
        self._profiles: set[str] = set()

    def record(self, report: AuditReport, now: float) -> None:
        counts = report.counts()
        for profile in self._profiles - set(counts):  # a deleted profile's series drop to zero
            for result in RESULTS:
                self.pods.labels(profile, result).set(0)
        for profile, by_result in counts.items():
            for result in RESULTS:
                self.pods.labels(profile, result).set(by_result.get(result, 0))
        self._profiles = set(counts)
        self.drifted.set(len(report.drifted()))
        self.duration.set(report.seconds)
        self.last_run.set(now)
        self.runs.labels("ok").inc()


async def audit_forever(
    state: StateHolder,
    registry: Registry,
    interval: float,
    metrics: AuditMetrics,
    writer: ReportWriter | None = None,
    published: asyncio.Event | None = None,
    clock: Callable[[], float] = time.time,
) -> None:
    """Audit once the state is loaded (`published` is set on every new snapshot), then every `interval`."""
    loop = asyncio.get_running_loop()
    while not state.ready:
        if published is None:
            raise ValueError("audit_forever needs `published` to wait for the first state")
        await published.wait()
        published.clear()
    while True:
        snapshot = state.snapshot
        try:
            report = await loop.run_in_executor(None, audit, snapshot, registry)
            if writer is not None:
                reports = policy_reports(report, int(clock()))
                written: Any = await loop.run_in_executor(None, writer.write, reports)
                log.info("policy reports: %s", written.summary())
            metrics.record(report, clock())
            log.info(
                "audit: %d of %d running pods differ from the current %d profiles (%.2fs)",
                len(report.drifted()),
                report.audited,
                report.profiles,
                report.seconds,
            )
        except Exception:  # a bug or an unreachable API server: count it, keep the schedule
            log.exception("audit round failed")
            metrics.runs.labels("error").inc()
        await asyncio.sleep(interval)  # the schedule itself, not a wait for an event
