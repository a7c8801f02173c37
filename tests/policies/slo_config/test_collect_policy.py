"""The NodeMetric collect policy (`pkg/slo-controller/nodemetric/collect_policy_test.go`
Test_getNodeMetricCollectPolicy, `nodemetric_controller_test.go`)."""

from __future__ import annotations

import json

from policies.apis.slo_config.colocation import load_colocation
from scheduler_plugins.manager.noderesource.collect_policy import nodemetric_spec

DEFAULT = {
    "aggregateDurationSeconds": 300,
    "reportIntervalSeconds": 60,
    "nodeAggregatePolicy": {"durations": ["5m0s", "10m0s", "30m0s"]},
    "nodeMemoryCollectPolicy": "usageWithoutPageCache",
}


def test_config_disabled_gets_defaults() -> None:
    """ "config disabled": a disabled node gets the defaults, not its configured values."""
    config = load_colocation(json.dumps({"enable": False, "metricAggregateDurationSeconds": 30}))
    assert nodemetric_spec(config.strategy_for({}, {})) == {"metricCollectPolicy": DEFAULT}
    assert nodemetric_spec(None) == {"metricCollectPolicy": DEFAULT}


def test_config_enabled_with_node_config() -> None:
    """ "config enabled", and the node config of the spec's example."""
    config = load_colocation(
        json.dumps(
            {
                "enable": True,
                "metricAggregateDurationSeconds": 30,
                "metricReportIntervalSeconds": 50,
                "metricAggregatePolicy": {"durations": ["5m", "1h"]},
                "nodeConfigs": [
                    {"nodeSelector": {"matchLabels": {"xxx": "yyy"}}, "metricAggregateDurationSeconds": 10}
                ],
            }
        )
    )
    policy = nodemetric_spec(config.strategy_for({"xxx": "yyy"}, {}))["metricCollectPolicy"]
    assert policy == {
        "aggregateDurationSeconds": 10,
        "reportIntervalSeconds": 50,
        "nodeAggregatePolicy": {"durations": ["5m0s", "1h0m0s"]},
        "nodeMemoryCollectPolicy": "usageWithoutPageCache",
    }
