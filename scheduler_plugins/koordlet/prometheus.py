"""The agent's Prometheus series (names spelled once, labels from closed sets)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class AgentMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.writes = Counter(
            "koordlet_cgroup_writes_total",
            "cgroup files written, by strategy and file",
            ["strategy", "file"],
            registry=registry,
        )
        self.write_failures = Counter(
            "koordlet_cgroup_write_failures_total",
            "cgroup writes that failed (a vanished cgroup, an unsupported file)",
            ["strategy"],
            registry=registry,
        )
        self.evictions = Counter(
            "koordlet_evictions_total", "evictions by strategy and outcome", ["strategy", "outcome"], registry=registry
        )
        self.suppressed_cpus = Gauge(
            "koordlet_be_suppress_cpu_cores",
            "CPU cores BE pods may use after CPUSuppress (cpuset size or quota)",
            ["policy"],
            registry=registry,
        )
        self.round_seconds = Histogram(
            "koordlet_strategy_round_seconds",
            "duration of one strategy round",
            ["strategy"],
            registry=registry,
            buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0),
        )
        self.strategy_failures = Counter(
            "koordlet_strategy_failures_total",
            "strategy rounds skipped because the strategy raised, by strategy (names fixed at start-up)",
            ["strategy"],
            registry=registry,
        )
        self.collect_seconds = Histogram(
            "koordlet_collect_seconds",
            "duration of one collection round",
            registry=registry,
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0),
        )
        self.interface_unavailable = Gauge(
            "koordlet_interface_unavailable",
            "1 while a strategy finds a host interface it needs missing on this node (blkio, io, resctrl, "
            "procSysVm, memcgReaper), else 0",
            ["strategy", "interface"],
            registry=registry,
        )
        self.host_writes = Counter(
            "koordlet_host_writes_total",
            "host files (/proc/sys, /sys, resctrl) written, by strategy",
            ["strategy"],
            registry=registry,
        )
        self.path_refusals = Counter(
            "koordlet_cgroup_path_refusals_total",
            "pod fields and paths refused as cgroup paths (pod_uid, container_id, outside_root)",
            ["reason"],
            registry=registry,
        )
        self.node_slo_rejected = Counter(
            "koordlet_node_slo_rejected_total",
            "NodeSLOs refused by the slo-controller-config rules (the last good one stays in force)",
            registry=registry,
        )
        self.node_slo_skipped_keys = Counter(
            "koordlet_node_slo_skipped_keys_total",
            "systemStrategy keys of a NodeSLO refused by the rules and skipped alone (the other keys apply)",
            ["key"],
            registry=registry,
        )
        self.reports = Counter(
            "koordlet_node_metric_reports_total", "NodeMetric status reports by result", ["result"], registry=registry
        )
