"""ElasticQuota defaulting on CREATE (Koordinator's `fillQuotaDefaultInformation`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.admission import QUOTA_MUTATE, admit, make_snapshot, patched
from tests.support.builders import make_quota

FIXTURES = Path(__file__).parent / "fixtures"
TREE = make_snapshot(fixtures=(FIXTURES / "quota-tree.yaml",), priority_classes=False)
PARENT = "quota.scheduling.koordinator.sh/parent"
TREE_ID = "quota.scheduling.koordinator.sh/tree-id"
WEIGHT = "quota.scheduling.koordinator.sh/shared-weight"


def defaulted(quota: dict) -> dict:
    outcome = admit(QUOTA_MUTATE, quota, TREE)
    assert outcome.allowed, outcome.message
    return patched(quota, outcome)


def test_a_quota_without_parent_goes_under_the_root_with_max_as_shared_weight():
    result = defaulted(make_quota("q", max={"cpu": 120, "memory": "1048576"}))
    assert result["metadata"]["labels"] == {PARENT: "koordinator-root-quota"}
    assert result["metadata"]["annotations"] == {WEIGHT: '{"cpu":"120","memory":"1048576"}'}


def test_a_child_inherits_its_parents_tree_id():
    result = defaulted(make_quota("q", parent="parent", max={"cpu": "20", "memory": "20Gi"}))
    assert result["metadata"]["labels"][TREE_ID] == "tree-1"


def test_a_child_of_an_unknown_parent_is_refused():
    outcome = admit(QUOTA_MUTATE, make_quota("q", parent="ghost", max={"cpu": "1"}), TREE)
    assert (outcome.allowed, outcome.code, outcome.message) == (False, 400, "fill quota q failed, parent not exist")


def test_a_quota_without_max_gets_the_literal_null():
    assert defaulted(make_quota("q"))["metadata"]["annotations"][WEIGHT] == "null"


@pytest.mark.parametrize(
    "weight, expected",
    [
        ('{"cpu":"0"}', '{"memory":"1048576"}'),  # keys reconciled with max
        ('{"memory":"5"}', '{"memory":"5"}'),  # already right: untouched
    ],
)
def test_an_existing_shared_weight_is_reconciled_with_max(weight, expected):
    quota = make_quota("q", max={"memory": "1048576"}, annotations={WEIGHT: weight})
    assert defaulted(quota)["metadata"]["annotations"][WEIGHT] == expected


def test_the_root_quota_is_not_defaulted():
    assert admit(QUOTA_MUTATE, make_quota("koordinator-root-quota", max={"cpu": "1"}), TREE).patch == []


def test_only_create_is_defaulted():
    quota = make_quota("child-b", max={"cpu": "1"})
    assert admit(QUOTA_MUTATE, quota, TREE, "UPDATE", quota).patch == []


@pytest.mark.parametrize(
    "quota, fragment",
    [
        (make_quota("q", max={"cpu": "lots"}), 'ElasticQuota q: spec.max.cpu: Invalid value: "lots"'),
        (
            make_quota("q", max={"cpu": "1"}, annotations={WEIGHT: "{oops"}),
            "fillDefaultQuotaInfo unmarshal sharedWeight failed:",
        ),
    ],
)
def test_bad_input_is_a_400_denial(quota, fragment):
    outcome = admit(QUOTA_MUTATE, quota, TREE)
    assert (outcome.allowed, outcome.code) == (False, 400)
    assert fragment in outcome.message
