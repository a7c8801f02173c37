"""`/validate-node`: label changes against the slo-controller-config node strategies (Koordinator's
`pkg/webhook/node/plugins/sloconfig/slo_plugin.go`)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.admission import admit, make_snapshot
from tests.support.builders import make_node

FIXTURES = Path(__file__).parent / "fixtures"
CLUSTER = make_snapshot(fixtures=(FIXTURES / "slo-config.yaml",), priority_classes=False)


def test_a_label_change_that_makes_two_strategies_select_the_node_is_refused():
    old = make_node("node-a", labels={"pool": "a"})
    new = make_node("node-a", labels={"pool": "a", "zone": "z1"})
    outcome = admit("/validate-node", new, CLUSTER, "UPDATE", old)
    assert (outcome.allowed, outcome.code) == (False, 400)
    assert outcome.message.startswith("___") and outcome.message.endswith("___")
    assert json.loads(outcome.message[3:-3]) == {
        "reason": "ExistNodeConfict",
        "message": {"config": "colocation-config", "strategies": ["pool-a", "zone-1"], "exampleNodes": ["node-a"]},
    }


def test_unchanged_labels_are_not_checked():
    node = make_node("node-a", labels={"pool": "a", "zone": "z1"})
    assert admit("/validate-node", node, CLUSTER, "UPDATE", node).allowed


def test_create_only_logs_a_conflict():
    assert admit("/validate-node", make_node("n", labels={"pool": "a", "zone": "z1"}), CLUSTER).allowed


def test_no_config_map_means_no_conflict():
    old, new = make_node("n", labels={}), make_node("n", labels={"pool": "a", "zone": "z1"})
    assert admit("/validate-node", new, make_snapshot(priority_classes=False), "UPDATE", old).allowed


def test_a_label_change_matching_one_strategy_is_allowed():
    old, new = make_node("n", labels={}), make_node("n", labels={"pool": "a"})
    assert admit("/validate-node", new, CLUSTER, "UPDATE", old).allowed
