"""The descheduler's Prometheus series. Label sets are closed: `plugin` comes from the configured
plugins, `result` is evicted | dry_run | skipped, `classification` the six LowNodeLoad classes."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry

from colocate.cluster.metrics import Series
from scheduler_plugins.descheduler.framework.report import RoundReport

CLASSIFICATIONS: Final = ("high", "prodHigh", "low", "prodLow", "bothLow", "none")


class DeschedulerMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        series = Series(registry)
        self.rounds = series.counter(
            "colocate_descheduler_rounds_total",
            "Descheduling rounds run, by result (ok, or error when a plugin or the round failed).",
            ("result",),
        )
        self.evictions = series.counter(
            "colocate_descheduler_evictions_total",
            "Pods evicted (or, in dry run, that would be) and evictions skipped, by plugin.",
            ("plugin", "result"),
        )
        self.nodes = series.gauge(
            "colocate_descheduler_nodes",
            "Nodes per LowNodeLoad classification in the last round (a node counts once per pool).",
            ("classification",),
        )
        self.scavenged = series.counter(
            "colocate_descheduler_migration_jobs_scavenged_total",
            "PodMigrationJobs deleted by the MigrationController's scavenger (older than their TTL + 5m, or 30m).",
        )
        self._scavenged_seen = 0
        self.leader = series.gauge("colocate_descheduler_leader", "1 while this replica holds the leader lease.")

    def observe(self, report: RoundReport) -> None:
        self.rounds.labels("error" if report.errors else "ok").inc()
        for entry in report.evictions:
            self.evictions.labels(entry.plugin, "dry_run" if report.dry_run else "evicted").inc()
        for entry in report.skipped:
            self.evictions.labels(entry.plugin, "skipped").inc()
        counts = dict.fromkeys(CLASSIFICATIONS, 0)
        for node in report.nodes:
            counts[node.classification] = counts.get(node.classification, 0) + 1
        for classification, count in counts.items():
            self.nodes.labels(classification).set(count)

    def observe_scavenged(self, total: int) -> None:
        """Count the jobs scavenged since the last call (`total`: since the start)."""
        if total > self._scavenged_seen:
            self.scavenged.inc(total - self._scavenged_seen)
            self._scavenged_seen = total
