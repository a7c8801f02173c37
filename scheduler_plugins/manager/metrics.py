"""The manager's Prometheus series (names fixed: alerts are written against them). Label sets are
closed: `reason` of a config error is one of the three Koordinator Event reasons, `kind` of a
failed write one of the four objects the manager writes, `reason` of a refused input one of
`inputs.REFUSED_REASONS`."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry

from colocate.cluster.metrics import Series
from policies.apis.slo_config.manager_config import (
    REASON_COLOCATION_FAILED,
    REASON_NORMALIZATION_FAILED,
    REASON_SLO_FAILED,
)
from scheduler_plugins.manager.noderesource.inputs import REFUSED_REASONS

CONFIG_ERROR_REASONS: Final = (REASON_COLOCATION_FAILED, REASON_SLO_FAILED, REASON_NORMALIZATION_FAILED)
WRITE_KINDS: Final = ("Node", "NodeResourceTopology", "NodeSLO", "NodeMetric")


class ManagerMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        series = Series(registry)
        self.nodes_updated = series.counter(
            "colocate_manager_nodes_updated_total", "Node status writes of batch and mid resources that succeeded."
        )
        self.nodes_skipped = series.counter(
            "colocate_manager_nodes_skipped_total",
            "Nodes reconciled and left as they were (within the diff threshold and the update interval, "
            "or not writable this round).",
        )
        self.degraded_nodes = series.gauge(
            "colocate_manager_degraded_nodes",
            "Nodes whose batch and mid resources are removed because their NodeMetric is missing or stale.",
        )
        self.calculation_duration = series.histogram(
            "colocate_manager_calculation_duration_seconds",
            "Time to calculate one round (all nodes it covers), writes excluded.",
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.config_errors = series.counter(
            "colocate_manager_config_errors_total",
            "slo-controller-config documents that failed to load (the last good one stays in force).",
            ("reason",),
        )
        self.write_errors = series.counter(
            "colocate_manager_write_errors_total",
            "Writes the API server refused or that failed, by object kind.",
            ("kind",),
        )
        self.inputs_refused = series.counter(
            "colocate_manager_inputs_refused_total",
            "Node rounds that refused part of their inputs (a negative usage or capacity, a pod listed "
            "twice in a NodeMetric), by reason; the refused value is read as 0 (or the larger entry).",
            ("reason",),
        )
        self.leader = series.gauge("colocate_manager_leader", "1 while this replica holds the leader lease.")
        for reason in CONFIG_ERROR_REASONS:
            self.config_errors.labels(reason)
        for kind in WRITE_KINDS:
            self.write_errors.labels(kind)
        for reason in REFUSED_REASONS:
            self.inputs_refused.labels(reason)
