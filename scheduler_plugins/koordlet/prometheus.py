"""The agent's Prometheus series (names spelled once, labels from closed sets)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from colocate.cluster.metrics import Series


class AgentMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        series = Series(registry)
        self.registry = registry
        self.writes = series.counter(
            "koordlet_cgroup_writes_total", "cgroup files written, by strategy and file", ("strategy", "file")
        )
        self.write_failures = series.counter(
            "koordlet_cgroup_write_failures_total",
            "cgroup writes that failed (a vanished cgroup, an unsupported file)",
            ("strategy",),
        )
        self.evictions = series.counter(
            "koordlet_evictions_total", "evictions by strategy and outcome", ("strategy", "outcome")
        )
        self.suppressed_cpus = series.gauge(
            "koordlet_be_suppress_cpu_cores",
            "CPU cores BE pods may use after CPUSuppress (cpuset size or quota)",
            ("policy",),
        )
        self.round_seconds = series.histogram(
            "koordlet_strategy_round_seconds",
            "duration of one strategy round",
            ("strategy",),
            buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0),
        )
        self.strategy_failures = series.counter(
            "koordlet_strategy_failures_total",
            "strategy rounds skipped because the strategy raised, by strategy (names fixed at start-up)",
            ("strategy",),
        )
        self.collect_seconds = series.histogram(
            "koordlet_collect_seconds",
            "duration of one collection round",
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0),
        )
        self.interface_unavailable = series.gauge(
            "koordlet_interface_unavailable",
            "1 while a strategy finds a host interface it needs missing on this node (blkio, io, resctrl, "
            "procSysVm, memcgReaper), else 0",
            ("strategy", "interface"),
        )
        self.host_writes = series.counter(
            "koordlet_host_writes_total", "host files (/proc/sys, /sys, resctrl) written, by strategy", ("strategy",)
        )
        self.path_refusals = series.counter(
            "koordlet_cgroup_path_refusals_total",
            "pod fields and paths refused as cgroup paths (pod_uid, container_id, outside_root)",
            ("reason",),
        )
        self.node_slo_rejected = series.counter(
            "koordlet_node_slo_rejected_total",
            "NodeSLOs refused by the slo-controller-config rules (the last good one stays in force)",
        )
        self.node_slo_skipped_keys = series.counter(
            "koordlet_node_slo_skipped_keys_total",
            "systemStrategy keys of a NodeSLO refused by the rules and skipped alone (the other keys apply)",
            ("key",),
        )
        self.reports = series.counter(
            "koordlet_node_metric_reports_total", "NodeMetric status reports by result", ("result",)
        )
