"""The colocation-config parser (`pkg/util/sloconfig/colocation_config_test.go` Test_GetNodeColocationStrategy,
Test_IsColocationStrategyValid, `pkg/slo-controller/config/colocation_cm_event_handler_test.go`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policies.apis.slo_config.colocation import DEFAULT_STRATEGY, ColocationDecodeError, is_valid, load_colocation
from policies.apis.slo_config.manager_config import REASON_COLOCATION_FAILED, load_manager_config

BASE = {
    "enable": False,
    "cpuReclaimThresholdPercent": 65,
    "memoryReclaimThresholdPercent": 65,
    "degradeTimeMinutes": 15,
    "updateTimeThresholdSeconds": 300,
    "resourceDiffThreshold": 0.1,
}


def strategy_for(
    document: dict[str, Any], labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    config = load_colocation(json.dumps(document))
    return dict(config.strategy_for(labels or {}, annotations or {}).document)


def test_defaults_when_absent_or_empty() -> None:
    """A missing or empty `colocation-config` is the default strategy (enable: false)."""
    for text in (None, ""):
        config = load_colocation(text)
        assert dict(config.cluster.document) == DEFAULT_STRATEGY
        assert not config.cluster.enable


def test_get_merged_node_strategy_1() -> None:
    """Test_GetNodeColocationStrategy "get merged node strategy 1": the first matching entry merges."""
    document = {**BASE, "nodeConfigs": [{"nodeSelector": {"matchLabels": {"xxx": "yyy"}}, "enable": True}]}
    got = strategy_for(document, {"xxx": "yyy"})
    assert got["enable"] is True and got["cpuReclaimThresholdPercent"] == 65
    assert strategy_for(document, {"xxx": "zzz"})["enable"] is False


def test_get_merged_node_strategy_2_first_match_only() -> None:
    """ "get merged node strategy 2": entries are tried in order and only the first match applies."""
    document = {
        "nodeConfigs": [
            {"nodeSelector": {"matchLabels": {"xxx": "yyy"}}, "enable": False},
            {"nodeSelector": {"matchLabels": {"xxx": "zzz"}}, "enable": True},
            {"nodeSelector": {}, "cpuReclaimThresholdPercent": 10},
        ]
    }
    got = strategy_for(document, {"xxx": "zzz"})
    assert got == {**DEFAULT_STRATEGY, "enable": True}


def test_invalid_selector_is_skipped() -> None:
    """ "get merged node strategy and ignore invalid selector": operator "out" skips the entry."""
    document = {
        **BASE,
        "nodeConfigs": [
            {
                "name": "xxx-out-yyy",
                "nodeSelector": {"matchExpressions": [{"key": "xxx", "operator": "out", "values": ["yyy"]}]},
                "enable": False,
            },
            {"name": "xxx-yyy", "nodeSelector": {"matchLabels": {"xxx": "yyy"}}, "enable": True},
        ],
    }
    assert strategy_for(document, {"xxx": "yyy"})["enable"] is True


def test_empty_selector_matches_every_node_and_absent_none() -> None:
    document = {
        **BASE,
        "nodeConfigs": [{"cpuReclaimThresholdPercent": 10}, {"nodeSelector": {}, "cpuReclaimThresholdPercent": 20}],
    }
    assert strategy_for(document)["cpuReclaimThresholdPercent"] == 20


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        # "get strategy merged with node ratios"
        (
            {
                "node.koordinator.sh/cpu-reclaim-ratio": "0.7",
                "node.koordinator.sh/memory-reclaim-ratio": "0.75",
                "node.koordinator.sh/mid-static-cpu-reserved-ratio": "0.1",
                "node.koordinator.sh/mid-static-memory-reserved-ratio": "0.12",
            },
            (70, 75, 10, 12),
        ),
        # truncated after a float multiply: 0.29 × 100 = 28.999…
        ({"node.koordinator.sh/cpu-reclaim-ratio": "0.29"}, (28, 65, 0, 0)),
        # "get strategy while parse node reclaim ratios failed": unparsable and negative ratios are ignored
        (
            {"node.koordinator.sh/cpu-reclaim-ratio": "invalid", "node.koordinator.sh/memory-reclaim-ratio": "-1"},
            (65, 65, 0, 0),
        ),
        # above 1 (more than all of the node; Koordinator takes it) ignored as well; 1 is all of it
        (
            {
                "node.koordinator.sh/cpu-reclaim-ratio": "1.5",
                "node.koordinator.sh/memory-reclaim-ratio": "1e30",
                "node.koordinator.sh/mid-static-cpu-reserved-ratio": "1",
            },
            (65, 65, 100, 0),
        ),
    ],
)
def test_node_ratio_labels(labels: dict[str, str], expected: tuple[int, int, int, int]) -> None:
    got = strategy_for(BASE, labels)
    assert (
        got["cpuReclaimThresholdPercent"],
        got["memoryReclaimThresholdPercent"],
        got["midStaticCPUReservedPercent"],
        got["midStaticMemoryReservedPercent"],
    ) == expected


def test_annotation_strategy_merges_and_labels_win() -> None:
    """ "get strategy merged with node strategy on annotations" and "get strategy disabled by node
    strategy on annotations"; the ratio labels are applied after the annotation."""
    annotation = {
        "node.koordinator.sh/colocation-strategy": json.dumps({"enable": False, "cpuReclaimThresholdPercent": 50})
    }
    labels = {"node.koordinator.sh/cpu-reclaim-ratio": "0.8"}
    got = strategy_for({**BASE, "enable": True}, labels, annotation)
    assert got["enable"] is False and got["cpuReclaimThresholdPercent"] == 80
    unparsable = {"node.koordinator.sh/colocation-strategy": "{not json"}
    assert strategy_for({**BASE, "enable": True}, {}, unparsable)["enable"] is True
    for overlay in (
        {"enable": False, "cpuReclaimThresholdPercent": 150},
        {"enable": False, "degradeTimeMinutes": 1e30},
    ):
        # above 100 %, or an integer beyond int64: the whole annotation is ignored, as an unparsable one
        refused = {"node.koordinator.sh/colocation-strategy": json.dumps(overlay)}
        got = strategy_for({**BASE, "enable": True}, {}, refused)
        assert got["enable"] is True and got["cpuReclaimThresholdPercent"] == BASE["cpuReclaimThresholdPercent"]


@pytest.mark.parametrize(
    ("fields", "valid"),
    [
        ({}, True),
        (DEFAULT_STRATEGY, True),
        ({"midCPUThresholdPercent": -1}, False),
        ({"midCPUThresholdPercent": 101}, False),
        ({"midMemoryThresholdPercent": -1}, False),
        ({"midMemoryThresholdPercent": 101}, False),
        ({"midUnallocatedPercent": -1}, False),
        ({"midUnallocatedPercent": 101}, False),
        ({"batchCPUThresholdPercent": 101}, True),  # no upper bound in the controller
        ({"batchCPUThresholdPercent": -1}, False),
        # refused here, not in Koordinator: a node reclaiming 150 % of its cpu writes batch-cpu above
        # its capacity (docs/koordinator.md)
        ({"cpuReclaimThresholdPercent": 150}, False),
        ({"memoryReclaimThresholdPercent": 101}, False),
        ({"midStaticCPUReservedPercent": 101}, False),
        ({"cpuReclaimThresholdPercent": 100}, True),
        ({"degradeTimeMinutes": 0}, False),
        ({"resourceDiffThreshold": 0}, False),
        ({"metricMemoryCollectPolicy": ""}, False),
    ],
)
def test_is_colocation_strategy_valid(fields: dict[str, Any], valid: bool) -> None:
    """Test_IsColocationStrategyValid, and the reclaim percents at most 100."""
    assert is_valid(fields) is valid


def test_invalid_node_entry_becomes_a_copy_of_the_cluster_strategy() -> None:
    """An invalid node entry's strategy is replaced by the cluster's; its selector still matches."""
    document = {
        **BASE,
        "enable": True,
        "nodeConfigs": [
            {"nodeSelector": {"matchLabels": {"a": "b"}}, "degradeTimeMinutes": 0, "cpuReclaimThresholdPercent": 1}
        ],
    }
    got = strategy_for(document, {"a": "b"})
    assert got["cpuReclaimThresholdPercent"] == 65 and got["degradeTimeMinutes"] == 15


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        '{"cpuReclaimThresholdPercent": "60"}',  # a string where Go wants an int64
        '{"cpuReclaimThresholdPercent": 60.5}',
        '{"cpuReclaimThresholdPercent": 150}',  # more than all of the node
        '{"memoryReclaimThresholdPercent": 101}',
        '{"degradeTimeMinutes": 1e30}',  # integral, but beyond int64: Go refuses it
        '{"degradeTimeMinutes": -1e19}',
        '{"enable": "true"}',
        '{"resourceDiffThreshold": 0}',  # decodes, but the cluster strategy is invalid
        '{"metricAggregatePolicy": {"durations": ["five minutes"]}}',
        "[1, 2]",
    ],
)
def test_unusable_documents_are_refused(text: str) -> None:
    with pytest.raises(ColocationDecodeError):
        load_colocation(text)


def test_a_failed_load_keeps_the_last_good_config() -> None:
    """colocation_cm_event_handler: a bad document keeps the previous config and reports
    ColocationCfgUnmarshalFailed; at start nothing was loaded, so the config is unavailable."""
    good, issues = load_manager_config({"data": {"colocation-config": json.dumps({"enable": True})}})
    assert good.available and not good.error and not issues
    kept, issues = load_manager_config({"data": {"colocation-config": "{broken"}}, good)
    assert kept.colocation == good.colocation and kept.available and kept.error
    assert [i.reason for i in issues] == [REASON_COLOCATION_FAILED]
    fresh, _ = load_manager_config({"data": {"colocation-config": "{broken"}}, None)
    assert not fresh.available


def test_no_configmap_at_start_is_defaults_in_error_status() -> None:
    config, _ = load_manager_config(None)
    assert config.available and config.error and not config.colocation.cluster.enable
    assert load_manager_config(None, config)[0] is config  # a deleted ConfigMap changes nothing


def test_webhook_refuses_what_the_manager_cannot_decode() -> None:
    """One parser: the webhook's validation runs the manager's decoder on colocation-config, so a
    document the manager would refuse (a number where Go wants a string) is denied at admission."""
    from policies.admission.configmap import changed_documents
    from policies.admission.plugin import Denied

    configmap = {
        "metadata": {"name": "slo-controller-config", "namespace": "koordinator-system"},
        "data": {"colocation-config": json.dumps({"enable": True, "cpuCalculatePolicy": 5})},
    }
    with pytest.raises(Denied, match="ParseConfigFail"):
        changed_documents(configmap, None, "koordinator-system/slo-controller-config")
    configmap["data"]["colocation-config"] = json.dumps({"enable": True, "cpuCalculatePolicy": "maxUsageRequest"})
    assert changed_documents(configmap, None, "koordinator-system/slo-controller-config")
    for refused in ({"cpuReclaimThresholdPercent": 150}, {"degradeTimeMinutes": 1e30}):
        configmap["data"]["colocation-config"] = json.dumps({"enable": True, **refused})
        with pytest.raises(Denied):
            changed_documents(configmap, None, "koordinator-system/slo-controller-config")
