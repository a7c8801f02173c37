"""`/validate-configmap`: the slo-controller-config strategies (Koordinator's
`pkg/webhook/cm/plugins/sloconfig/`)."""

from __future__ import annotations

import json

import pytest

from tests.support.admission import admit, make_snapshot
from tests.support.builders import make_node, make_slo_config

EMPTY = make_snapshot(priority_classes=False)


def reason_and_message(outcome) -> tuple[str, object]:
    assert (outcome.allowed, outcome.code) == (False, 400), outcome
    assert outcome.message.startswith("___") and outcome.message.endswith("___")
    body = json.loads(outcome.message[3:-3])
    return body["reason"], body["message"]


def entry(name: str, selector: dict, **fields) -> dict:
    return {"name": name, "nodeSelector": selector, **fields}


def test_a_valid_config_is_admitted():
    config = make_slo_config(
        {
            "colocation-config": {"enable": True, "cpuReclaimThresholdPercent": 60, "resourceDiffThreshold": 0.1},
            "resource-threshold-config": {"clusterStrategy": {"enable": True, "cpuSuppressThresholdPercent": 65}},
            "resource-qos-config": {"clusterStrategy": {"lsClass": {"cpuQOS": {"groupIdentity": 2}}}},
            "system-config": {"clusterStrategy": {"minFreeKbytesFactor": 100}},
            "cpu-burst-config": {"clusterStrategy": {"cpuBurstPercent": 1000}},
        }
    )
    assert admit("/validate-configmap", config, EMPTY).allowed


def test_a_strategy_that_does_not_parse_is_refused_naming_the_configmap():
    reason, message = reason_and_message(
        admit("/validate-configmap", make_slo_config({"colocation-config": "{oops"}), EMPTY)
    )
    assert reason == "ParseConfigFail"
    assert message.startswith(
        "Failed to parse colocation config in configmap koordinator-system/slo-controller-config, err: "
    )


def test_a_wrongly_typed_field_is_a_parse_failure():
    config = make_slo_config({"system-config": {"clusterStrategy": {"minFreeKbytesFactor": "many"}}})
    reason, message = reason_and_message(admit("/validate-configmap", config, EMPTY))
    assert reason == "ParseConfigFail"
    assert "system-config.clusterStrategy.minFreeKbytesFactor" in message


@pytest.mark.parametrize(
    "key, document, failures",
    [
        (
            "colocation-config",
            {"metricAggregateDurationSeconds": 0, "resourceDiffThreshold": 1.5},
            {
                "colocation-config.metricAggregateDurationSeconds": (
                    "metricAggregateDurationSeconds must be 1 or greater"
                ),
                "colocation-config.resourceDiffThreshold": "resourceDiffThreshold must be 1 or less",
            },
        ),
        (
            "resource-threshold-config",
            {"clusterStrategy": {"cpuSuppressThresholdPercent": -1}},
            {
                "resource-threshold-config.clusterStrategy.cpuSuppressThresholdPercent": (
                    "cpuSuppressThresholdPercent must be 0 or greater"
                )
            },
        ),
        (
            "resource-threshold-config",
            {"clusterStrategy": {"cpuEvictBESatisfactionLowerPercent": 35}},
            {
                "resource-threshold-config.clusterStrategy.cpuEvictBESatisfactionLowerPercent": (
                    "cpuEvictBESatisfactionLowerPercent must be less than cpuEvictBESatisfactionUpperPercent"
                )
            },
        ),
        (
            "resource-qos-config",
            {"clusterStrategy": {"beClass": {"memoryQOS": {"wmarkMinAdj": 60}}}},
            {"resource-qos-config.clusterStrategy.beClass.memoryQOS.wmarkMinAdj": "wmarkMinAdj must be 50 or less"},
        ),
        (
            "system-config",
            {"clusterStrategy": {"watermarkScaleFactor": 0}},
            {"system-config.clusterStrategy.watermarkScaleFactor": "watermarkScaleFactor must be greater than 0"},
        ),
        (
            "cpu-burst-config",
            {"nodeStrategies": [entry("n", {"matchLabels": {"a": "b"}}, cfsQuotaBurstPercent=50)]},
            {"cpu-burst-config.nodeStrategies[0].cfsQuotaBurstPercent": "cfsQuotaBurstPercent must be 100 or greater"},
        ),
    ],
)
def test_field_rules_name_the_key_and_the_field(key, document, failures):
    reason, message = reason_and_message(admit("/validate-configmap", make_slo_config({key: document}), EMPTY))
    assert (reason, message) == ("ConfigParamInvalid", failures)


def test_a_node_strategy_without_selector_is_refused():
    config = make_slo_config({"colocation-config": {"nodeConfigs": [{"name": "bare"}]}})
    reason, message = reason_and_message(admit("/validate-configmap", config, EMPTY))
    assert reason == "ConfigParamInvalid"
    assert message == (
        "nodeConfigs NodeSelector must not empty error! configType: colocation-config,nodeConfig name:bare"
    )


def test_an_invalid_node_selector_is_refused():
    selector = {"matchExpressions": [{"key": "pool", "operator": "Near", "values": ["a"]}]}
    config = make_slo_config({"colocation-config": {"nodeConfigs": [entry("odd", selector)]}})
    reason, message = reason_and_message(admit("/validate-configmap", config, EMPTY))
    assert reason == "ConfigParamInvalid" and "failed to parse node selector" in message and "name:odd" in message


def test_overlapping_node_selectors_are_refused():
    config = make_slo_config(
        {
            "colocation-config": {
                "nodeConfigs": [
                    entry("pool-a", {"matchLabels": {"pool": "a"}}),
                    entry("pool-a-ssd", {"matchLabels": {"pool": "a", "disk": "ssd"}}),
                ]
            }
        }
    )
    reason, message = reason_and_message(admit("/validate-configmap", config, EMPTY))
    assert (reason, message) == (
        "NodeStrategiesOverlap",
        {"config": "colocation-config", "strategies": ["pool-a", "pool-a-ssd"]},
    )


def test_expression_values_generate_one_synthetic_node_each():
    config = make_slo_config(
        {
            "colocation-config": {
                "nodeConfigs": [
                    entry("pools", {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a", "b"]}]}),
                    entry("pool-b", {"matchLabels": {"pool": "b"}}),
                ]
            }
        }
    )
    assert reason_and_message(admit("/validate-configmap", config, EMPTY))[0] == "NodeStrategiesOverlap"


def test_a_cluster_node_selected_twice_is_a_conflict():
    config = make_slo_config(
        {
            "colocation-config": {
                "nodeConfigs": [
                    entry("pool-a", {"matchLabels": {"pool": "a"}}),
                    entry("zone-1", {"matchLabels": {"zone": "z1"}}),
                ]
            }
        }
    )
    cluster = make_snapshot(
        make_node("fine", labels={"pool": "a"}),
        make_node("both", labels={"pool": "a", "zone": "z1"}),
        priority_classes=False,
    )
    reason, message = reason_and_message(admit("/validate-configmap", config, cluster))
    assert (reason, message) == (
        "ExistNodeConfict",
        {"config": "colocation-config", "strategies": ["pool-a", "zone-1"], "exampleNodes": ["both"]},
    )
    assert admit(
        "/validate-configmap", config, make_snapshot(make_node("fine", labels={"pool": "a"}), priority_classes=False)
    ).allowed


def test_update_checks_only_the_changed_keys():
    broken = {"colocation-config": "{oops"}
    old = make_slo_config(broken)
    new = make_slo_config({**broken, "system-config": {"clusterStrategy": {"minFreeKbytesFactor": 100}}})
    assert admit("/validate-configmap", new, EMPTY, "UPDATE", old).allowed
    worse = make_slo_config({**broken, "system-config": {"clusterStrategy": {"minFreeKbytesFactor": 0}}})
    assert reason_and_message(admit("/validate-configmap", worse, EMPTY, "UPDATE", old))[0] == "ConfigParamInvalid"


def test_other_configmaps_and_deletes_are_admitted():
    broken = {"colocation-config": "{oops"}
    assert admit("/validate-configmap", make_slo_config(broken, name="something-else"), EMPTY).allowed
    assert admit("/validate-configmap", make_slo_config(broken, namespace="default"), EMPTY).allowed
    assert admit("/validate-configmap", None, EMPTY, "DELETE", make_slo_config(broken)).allowed


def _counting_matches(monkeypatch) -> list[int]:
    """Counts LabelSelector.matches calls (the work the overlap check does)."""
    from policies.apis import selectors

    calls = [0]
    original = selectors.LabelSelector.matches

    def counted(self, labels):
        calls[0] += 1
        return original(self, labels)

    monkeypatch.setattr(selectors.LabelSelector, "matches", counted)
    return calls


def test_the_overlap_check_is_linear_in_the_node_entries(monkeypatch):
    """Issue 41: 4,000 nodeConfigs took 3.4 s, each synthetic node tried against every entry."""
    calls = _counting_matches(monkeypatch)
    entries = [entry(f"pool-{i}", {"matchLabels": {"pool": f"p{i}"}}) for i in range(2000)]
    entries.append(entry("any-ssd", {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}))
    config = make_slo_config({"colocation-config": {"nodeConfigs": entries}})
    assert admit("/validate-configmap", config, EMPTY).allowed
    assert calls[0] <= 3 * len(entries), f"{calls[0]} selector matches for {len(entries)} entries"


def test_the_indexed_overlap_check_still_finds_overlaps_in_entry_order(monkeypatch):
    entries = [entry(f"pool-{i}", {"matchLabels": {"pool": f"p{i}"}}) for i in range(50)]
    entries += [
        entry(
            "ssd-in-p7",
            {
                "matchLabels": {"disk": "ssd"},
                "matchExpressions": [{"key": "pool", "operator": "In", "values": ["p6", "p7"]}],
            },
        ),
        entry("not-p3", {"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["p3"]}]}),
    ]
    config = make_slo_config({"colocation-config": {"nodeConfigs": entries}})
    reason, message = reason_and_message(admit("/validate-configmap", config, EMPTY))
    assert (reason, message) == (
        "NodeStrategiesOverlap",
        {"config": "colocation-config", "strategies": ["pool-0", "not-p3"]},
    )
