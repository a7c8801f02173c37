"""Degrade, reset and the write decision (Koordinator's `batchresource/plugin_test.go`
TestPlugin_isDegradeNeeded, `noderesource/resource_calculator_test.go` Test_isNodeResourceSyncNeeded,
Test_updateNodeResource "reset be resource with enable=false config", `midresource` TestPluginNeedSync)."""

from __future__ import annotations

import pytest

from policies.apis.constants import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY
from policies.apis.slo_config.colocation import DEFAULT_STRATEGY, ColocationStrategy, merge
from tests.scheduler_plugins.manager.noderesource.builders import (
    STRATEGY_65,
    config,
    decide,
    default_metric,
    metric,
    node,
    run,
)

EXTENDED = {BATCH_CPU: "20000", BATCH_MEMORY: "40G", MID_CPU: "0", MID_MEMORY: "0"}


@pytest.mark.parametrize(
    ("the_metric", "why"),
    [
        (None, "NodeMetric missing"),  # "empty NodeMetric should degrade"
        (metric([], updated=None), "NodeMetric never updated"),  # "empty NodeMetric status should degrade"
        (metric([], updated="2026-01-01T00:00:00Z"), "NodeMetric stale"),  # "outdated NodeMetric status should degrade"
    ],
)
def test_degrade_removes_batch_and_mid(the_metric: dict[str, object] | None, why: str) -> None:
    """A missing, never-updated or stale (> degradeTimeMinutes) NodeMetric removes batch and mid
    resources from the node (they are left out, not written as 0) and the node is written."""
    plan = run(config(), node(allocatable=EXTENDED), the_metric=the_metric, now="2026-01-01T00:16:00Z")
    assert plan.degraded
    assert plan.allocatable == {}
    assert plan.prepared is not None and BATCH_CPU not in plan.prepared["capacity"]
    assert plan.update and plan.reason.startswith(f"degraded: {why}")


def test_fresh_metric_within_degrade_time_does_not_degrade() -> None:
    plan = run(config(), node(), the_metric=metric([], updated="2026-01-01T00:00:00Z"), now="2026-01-01T00:14:59Z")
    assert not plan.degraded and BATCH_CPU in plan.allocatable


def test_node_metric_without_status_node_metric_writes_nothing() -> None:
    """Koordinator's reconcile panics on it (recovered); we report an error and write nothing."""
    the_metric = metric([])
    del the_metric["status"]["nodeMetric"]
    plan = run(config(), node(allocatable=EXTENDED), the_metric=the_metric)
    assert plan.prepared is None and not plan.update and plan.error
    assert plan.allocatable == EXTENDED


def test_disabled_in_config_resets() -> None:
    """Test_updateNodeResource "reset be resource with enable=false config"."""
    plan = run(config({"enable": False}), node(allocatable=EXTENDED), the_metric=default_metric())
    assert plan.allocatable == {} and plan.update
    assert plan.reason.startswith("disabled: DisableInConfig")


def test_node_config_can_disable_but_never_enable() -> None:
    """A node entry switches a node off, never on while the cluster says false."""
    on = {"nodeSelector": {"matchLabels": {"pool": "a"}}, "enable": True}
    plan = run(config({"enable": False, "nodeConfigs": [on]}), node(labels={"pool": "a"}), the_metric=default_metric())
    assert plan.allocatable == {}
    off = {"nodeSelector": {"matchLabels": {"pool": "a"}}, "enable": False}
    plan = run(config({**STRATEGY_65, "nodeConfigs": [off]}), node(labels={"pool": "a"}), the_metric=default_metric())
    assert plan.allocatable == {}


def strategy(**fields: object) -> ColocationStrategy:
    return ColocationStrategy.of(merge(DEFAULT_STRATEGY, fields))


@pytest.mark.parametrize(
    ("old", "new", "threshold", "expected"),
    [
        ({BATCH_CPU: "20000", BATCH_MEMORY: "40G"}, {BATCH_CPU: "30000", BATCH_MEMORY: "40G"}, 0.1, True),
        ({BATCH_CPU: "20000", BATCH_MEMORY: "40G"}, {BATCH_CPU: "15000", BATCH_MEMORY: "40G"}, 0.1, True),
        ({BATCH_CPU: "20000", BATCH_MEMORY: "40G"}, {BATCH_CPU: "20000", BATCH_MEMORY: "40Gi"}, 0.1, False),
        ({BATCH_CPU: "20000", BATCH_MEMORY: "40G"}, {BATCH_CPU: "30000", BATCH_MEMORY: "50Gi"}, 0.6, False),
        ({BATCH_CPU: "20000", BATCH_MEMORY: "40G"}, {BATCH_CPU: "20000"}, 0.6, True),  # removed
        ({}, {MID_CPU: "0"}, 0.1, True),  # added
        ({MID_CPU: "0"}, {MID_CPU: "0"}, 0.1, False),  # 0 -> 0 is no difference
    ],
)
def test_difference_rule(old: dict[str, str], new: dict[str, str], threshold: float, expected: bool) -> None:
    """Test_isNodeResourceSyncNeeded "needSync for cpu diff larger than 0.1" / "no need to sync,
    everything's ok.": |new - old| > old × resourceDiffThreshold, or present on one side only."""
    decision = decide(strategy(resourceDiffThreshold=threshold), old, new, {}, {}, 1000.0, 1060.0)
    assert decision.status is expected


def test_expired_last_write_writes() -> None:
    """Test_isNodeResourceSyncNeeded "needSync for expired node resource": nothing changed, but the
    last write is older than updateTimeThresholdSeconds."""
    same = {BATCH_CPU: "20000"}
    assert decide(strategy(), same, same, {}, {}, 1000.0, 1000.0 + 600).status
    assert not decide(strategy(), same, same, {}, {}, 1000.0, 1000.0 + 299).status
    assert decide(strategy(), same, same, {}, {}, None, 1000.0).reason == "first write"


def test_meta_sync_on_normalization_ratio() -> None:
    """Test_isNodeResourceSyncNeeded "need to sync meta": the ratio annotation is created, removed,
    or moves by more than 0.01."""
    key = "node.koordinator.sh/cpu-normalization-ratio"
    assert decide(strategy(), {}, {}, {}, {key: "1.00"}, 1000.0, 1001.0).meta
    assert not decide(strategy(), {}, {}, {key: "1.00"}, {key: "1.005"}, 1000.0, 1001.0).meta
    assert decide(strategy(), {}, {}, {key: "1.00"}, {key: "1.20"}, 1000.0, 1001.0).meta


def test_plan_with_last_sync_uses_the_rule() -> None:
    """`manager plan --last-sync`: within the interval and the threshold the node is not written."""
    written = {BATCH_CPU: "25000", BATCH_MEMORY: "33G", MID_CPU: "0", MID_MEMORY: "0"}
    annotations = {"node.koordinator.sh/cpu-normalization-ratio": "1.00"}
    the_node = node(allocatable=written, annotations=annotations)
    plan = run(config(), the_node, the_metric=default_metric(), last_write="2026-01-01T00:09:00Z")
    assert not plan.update
    plan = run(config(), the_node, the_metric=default_metric(), last_write="2026-01-01T00:04:00Z")
    assert plan.update and plan.reason.startswith("last write 360s ago")
