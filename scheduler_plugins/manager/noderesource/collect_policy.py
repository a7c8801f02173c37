"""The NodeMetric spec of one node (`pkg/slo-controller/nodemetric/collect_policy.go`,
`nodemetric_controller.go` getNodeMetricSpec): the collect policy of the node's colocation strategy
when that strategy is valid and enabled, else the defaults — a disabled node gets the defaults,
not its configured values (Koordinator's behaviour)."""

from __future__ import annotations

from typing import Any

from policies.apis.slo_config.colocation import DEFAULT_STRATEGY, ColocationStrategy, is_valid


def _policy(document: Any) -> dict[str, Any]:
    policy: dict[str, Any] = {
        "aggregateDurationSeconds": document["metricAggregateDurationSeconds"],
        "reportIntervalSeconds": document["metricReportIntervalSeconds"],
    }
    durations = (document.get("metricAggregatePolicy") or {}).get("durations")
    policy["nodeAggregatePolicy"] = {"durations": list(durations)} if durations else {}
    policy["nodeMemoryCollectPolicy"] = document["metricMemoryCollectPolicy"]
    return policy


def nodemetric_spec(strategy: ColocationStrategy | None) -> dict[str, Any]:
    """`{"metricCollectPolicy": {...}}` for this node's strategy (None: the defaults)."""
    if strategy is not None and strategy.enable and is_valid(strategy.document):
        document = {**DEFAULT_STRATEGY, **strategy.document}
    else:
        document = dict(DEFAULT_STRATEGY)
    return {"metricCollectPolicy": _policy(document)}
