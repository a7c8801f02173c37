"""ElasticQuota validation against the quota tree of the cluster state (Koordinator's
`pkg/webhook/elasticquota/quota_topology_check.go`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from colocate.cluster.files import read_manifest_file
from policies.admission.elastic_quota.tree import quota_tree_of
from tests.support.admission import QUOTA_VALIDATE, admit, make_snapshot
from tests.support.builders import make_quota

FIXTURES = Path(__file__).parent / "fixtures"
TREE = make_snapshot(fixtures=(FIXTURES / "quota-tree.yaml",), priority_classes=False)
FULL = {"cpu": "20", "memory": "20Gi"}
STORED = {
    obj["metadata"]["name"]: obj
    for obj in read_manifest_file(FIXTURES / "quota-tree.yaml")
    if obj["kind"] == "ElasticQuota"
}


def create(quota: dict):
    return admit(QUOTA_VALIDATE, quota, TREE)


def denied(outcome) -> str:
    assert (outcome.allowed, outcome.code) == (False, 400), outcome
    return outcome.message


def child(name: str = "new", **overrides) -> dict:
    fields = dict(parent="parent", tree_id="tree-1", min={"cpu": "1", "memory": "1Gi"}, max=FULL)
    fields.update(overrides)
    return make_quota(name, **fields)


def test_a_child_that_fits_its_parent_is_admitted():
    assert create(child()).allowed


@pytest.mark.parametrize(
    "quota, message",
    [
        (child("child-a"), "AddQuota quota already exist:child-a"),
        (
            child(namespaces=["ns-a2"]),
            "AddQuota quota new's annotation namespace ns-a2 is already bound to quota child-a",
        ),
        (child(max={"cpu": "-1", "memory": "-1Gi"}), "new quota.Spec.Max's value < 0, in dimensions :[cpu memory]"),
        (child(min={"cpu": "-2"}), "new quota.Spec.Min's value < 0, in dimensions :[cpu]"),
        (
            child(annotations={"quota.scheduling.koordinator.sh/shared-weight": '{"cpu":"-1"}'}),
            "new quota.Annotation[quota.scheduling.koordinator.sh/shared-weight]'s value < 0, in dimension :[cpu]",
        ),
        (child(min={"gpu": "1"}), "resourceKey gpu of quota new is included in min, which is not included in max"),
        (child(min={"cpu": "30"}), "resourceKey cpu of quota new min 30 > max 20"),
        (
            child(
                max={"cpu": "20", "memory": "20Gi", "pods": "10"},
                used={"pods": "11"},
                annotations={"quota.scheduling.koordinator.sh/max-strict-check-resource-keys": '["pods"]'},
            ),
            "resourceKey pods of quota new max 10 < used 11",
        ),
        (
            child(
                used={"pods": "1"},
                annotations={"quota.scheduling.koordinator.sh/max-strict-check-resource-keys": '["pods"]'},
            ),
            "resourceKey pods of quota new is included in used, which is not included in max"
            " but should check max >= used",
        ),
    ],
)
def test_self_checks(quota, message):
    assert denied(create(quota)) == message


@pytest.mark.parametrize(
    "quota, message",
    [
        (child(tree_id="tree-2"), "new tree id is different from parent parent, [tree-2] vs [tree-1]"),
        (child(parent="ghost"), "new has parentName ghost but not find parentInfo in quotaInfoMap"),
        (child(parent="child-b"), "new has parentName child-b but the parentQuotaInfo's IsParent is false"),
        (
            child(min={"cpu": "1"}, max={"cpu": "20"}),
            "failed to check sub and parent group quotaKey, err: checkSubAndParentGroupQuotaKey "
            "failed: parent's max keys are not the same with new's",
        ),
        (
            child(min={"cpu": "3", "memory": "5Gi"}),
            "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: parent",
        ),
    ],
)
def test_topology_checks_on_create(quota, message):
    assert denied(create(quota)) == message


def test_allow_force_update_skips_the_min_sums():
    quota = child(
        min={"cpu": "3", "memory": "5Gi"}, labels={"quota.scheduling.koordinator.sh/allow-force-update": "true"}
    )
    assert create(quota).allowed


def test_a_leaf_under_the_root_skips_the_parent_checks():
    assert create(make_quota("solo", min={"cpu": "100"}, max={"cpu": "100"})).allowed


def update(new: dict, old: dict | None = None):
    old = old or STORED[new["metadata"]["name"]]
    return admit(QUOTA_VALIDATE, new, TREE, "UPDATE", old)


def edited(name: str, *, labels: dict | None = None, spec: dict | None = None, annotations: dict | None = None) -> dict:
    import copy

    quota = copy.deepcopy(STORED[name])
    quota["metadata"].setdefault("labels", {}).update(labels or {})
    quota["metadata"].setdefault("annotations", {}).update(annotations or {})
    quota["spec"].update(spec or {})
    return quota


def test_an_update_that_touches_no_tracked_field_is_not_validated():
    # a negative shared weight would be refused, but the shared weight is not a tracked field
    quota = edited("child-a", annotations={"quota.scheduling.koordinator.sh/shared-weight": '{"cpu":"-5"}'})
    assert update(quota).allowed


@pytest.mark.parametrize(
    "quota, message",
    [
        (
            edited("child-a", spec={"min": {"cpu": "9", "memory": "4Gi"}}),
            "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: parent",
        ),
        (
            edited("parent", spec={"min": {"cpu": "7", "memory": "10Gi"}}),
            "checkMinQuotaSum all children's MinQuota > current MinQuota, current: parent",
        ),
        (
            edited("child-a", labels={"quota.scheduling.koordinator.sh/tree-id": "tree-9"}),
            "child-a tree id changed [tree-1] vs [tree-9]",
        ),
        (
            edited("parent", labels={"quota.scheduling.koordinator.sh/is-parent": "false"}),
            "quota has children, isParent is forbidden to modify as false, quotaName:parent",
        ),
        (
            edited("child-a", labels={"quota.scheduling.koordinator.sh/is-parent": "true"}),
            "quota has bound pods, isParent is forbidden to modify as true, quotaName: child-a",
        ),
        (
            edited("lonely", labels={"quota.scheduling.koordinator.sh/is-parent": "true"}),
            "quota has bound pods, isParent is forbidden to modify as true, quotaName: lonely",
        ),
        (
            edited("child-b", annotations={"quota.scheduling.koordinator.sh/namespaces": '["ns-a"]'}),
            "UpdadteQuota, quota child-b update namespaces, but namespace ns-a is already bound to quota child-a",
        ),
        (
            edited("parent", spec={"min": {"cpu": "10"}, "max": {"cpu": "20"}}),
            "failed to check sub and parent group quotaKey, err: checkSubAndParentGroupQuotaKey failed: "
            "child-a's max keys are not the same with parent's",
        ),
    ],
)
def test_update_checks(quota, message):
    assert denied(update(quota)) == message


def test_a_quota_missing_from_the_state_cannot_be_updated():
    quota = child("unknown")
    changed = child("unknown", min={"cpu": "2", "memory": "1Gi"})
    assert denied(update(changed, quota)) == "UpdateQuota quota not exist in quotaInfoMap:unknown"


@pytest.mark.parametrize("name", ["koordinator-root-quota", "koordinator-system-quota"])
def test_the_root_and_system_quotas_cannot_be_updated(name):
    old = make_quota(name, max={"cpu": "1"})
    assert denied(update(make_quota(name, max={"cpu": "2"}), old)) == f"invalid quota {name}"


def test_a_valid_update_is_admitted():
    assert update(edited("child-b", spec={"min": {"cpu": "4", "memory": "2Gi"}})).allowed


@pytest.mark.parametrize(
    "quota, message",
    [
        (make_quota("koordinator-default-quota"), "can not delete quotaGroup :koordinator-default-quota"),
        (make_quota("ghost"), "not found quota:ghost"),
        (STORED["parent"], "delete quota failed, quota parent has 2 child quotas"),
        (STORED["child-a"], "delete quota failed, quota child-a has 3 child pods: worker-0, worker-1, ..."),
    ],
)
def test_delete_checks(quota, message):
    assert denied(admit(QUOTA_VALIDATE, None, TREE, "DELETE", quota)) == message


def test_a_quota_without_children_or_pods_can_be_deleted():
    assert admit(QUOTA_VALIDATE, None, TREE, "DELETE", STORED["child-b"]).allowed


@pytest.mark.parametrize(
    "quota, fragment",
    [
        (child(min={"cpu": "ten"}), 'ElasticQuota new: spec.min.cpu: Invalid value: "ten"'),
        (
            child(annotations={"quota.scheduling.koordinator.sh/max-strict-check-resource-keys": "pods"}),
            "new quota.Annotation[quota.scheduling.koordinator.sh/max-strict-check-resource-keys]'s value is invalid",
        ),
    ],
)
def test_malformed_quotas_get_a_clear_denial(quota, fragment):
    assert fragment in denied(create(quota))


def test_the_tree_is_built_once_per_snapshot():
    cluster = make_snapshot(fixtures=(FIXTURES / "quota-tree.yaml",), priority_classes=False)
    assert quota_tree_of(cluster) is quota_tree_of(cluster)
    assert quota_tree_of(cluster).children_of("parent") == ["child-a", "child-b"]
