"""The route table matches spec section 2, and `colocate apply` handles every new kind."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from webhook.apply import ApplyOptions, run_apply
from webhook.registry import default_routes

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "manifests" / "samples" / "quota-tree"

# path -> (kind, group/resource, operations, failure policy, webhook name), spec section 2
EXPECTED = {
    "/mutate-node-status": ("Node", "/nodes/status", ("CREATE", "UPDATE"), "Ignore", "mnode-status.koordinator.sh"),
    "/validate-node": ("Node", "/nodes", ("CREATE", "UPDATE"), "Ignore", "vnode.koordinator.sh"),
    "/mutate-reservation": (
        "Reservation",
        "scheduling.koordinator.sh/reservations",
        ("CREATE",),
        "Fail",
        "mreservation-create.koordinator.sh",
    ),
    "/mutate-scheduling-sigs-k8s-io-v1alpha1-elasticquota": (
        "ElasticQuota",
        "scheduling.sigs.k8s.io/elasticquotas",
        ("CREATE",),
        "Fail",
        "melasticquota.koordinator.sh",
    ),
    "/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota": (
        "ElasticQuota",
        "scheduling.sigs.k8s.io/elasticquotas",
        ("CREATE", "UPDATE", "DELETE"),
        "Fail",
        "velasticquota.koordinator.sh",
    ),
    "/validate-configmap": (
        "ConfigMap",
        "/configmaps",
        ("CREATE", "UPDATE", "DELETE"),
        "Fail",
        "vconfigmap.koordinator.sh",
    ),
}


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_routes_follow_koordinators_registrations(path):
    route = default_routes().by_path()[path]
    [registration] = route.registrations
    assert (
        route.kind,
        f"{route.api_group}/{route.rule_resource}",
        registration.operations,
        registration.failure_policy,
        registration.name,
    ) == EXPECTED[path]


def test_the_configmap_webhook_selects_only_the_slo_config_and_speaks_v1beta1():
    [registration] = default_routes().by_path()["/validate-configmap"].registrations
    assert registration.object_selector == {
        "matchExpressions": [
            {"key": "koordinator.sh/configmap-type", "operator": "In", "values": ["slo-controller-config"]}
        ]
    }
    assert registration.admission_review_versions == ("v1beta1",)


def test_every_kind_has_its_mutating_route_before_its_validating_one():
    registry = default_routes()
    assert registry.kinds() == ["ConfigMap", "ElasticQuota", "Node", "Pod", "Reservation"]
    assert [r.path for r in registry.for_kind("Node")] == ["/mutate-node-status", "/validate-node"]


def apply(
    tmp_path: Path, obj: dict, state: Path = SAMPLE / "state", operation: str = "CREATE", old: dict | None = None
) -> tuple[int, str, str]:
    target = tmp_path / "object.yaml"
    target.write_text(yaml.safe_dump(obj))
    old_file = None
    if old is not None:
        old_file = tmp_path / "old.yaml"
        old_file.write_text(yaml.safe_dump(old))
    out, err = io.StringIO(), io.StringIO()
    code = run_apply(
        ApplyOptions(
            cluster=state, files=(str(target),), operation=operation, old_object=str(old_file) if old_file else None
        ),
        stdout=out,
        stderr=err,
    )
    return code, out.getvalue(), err.getvalue()


def test_the_quota_tree_sample_refuses_team_b_with_its_reason(tmp_path):
    code, out, err = apply(tmp_path, yaml.safe_load((SAMPLE / "team-b.yaml").read_text()))
    assert (code, out) == (1, "")
    assert err.strip() == (
        "denied by /validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota (code 400): "
        "checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: team-parent"
    )


def test_the_quota_tree_sample_admits_team_c_defaulted(tmp_path):
    code, out, _ = apply(tmp_path, yaml.safe_load((SAMPLE / "team-c.yaml").read_text()))
    assert code == 0
    labels = json.loads(out)["metadata"]["labels"]
    assert labels["quota.scheduling.koordinator.sh/tree-id"] == "tree-1"


def test_apply_deletes_a_quota_only_without_pods(tmp_path):
    quotas = list(yaml.safe_load_all((SAMPLE / "state" / "quotas.yaml").read_text()))
    team_a = next(q for q in quotas if q["metadata"]["name"] == "team-a")
    code, _, err = apply(tmp_path, team_a, operation="DELETE")
    assert code == 1 and "delete quota failed, quota team-a has 1 child pods: trainer-0" in err


def test_apply_amplifies_a_node_status_update(tmp_path):
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "annotations": {"node.koordinator.sh/resource-amplification-ratio": '{"memory": 2}'}},
        "status": {"allocatable": {"memory": "1Gi"}},
    }
    old = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"memory": "1Gi"}}}
    code, out, _ = apply(tmp_path, node, operation="UPDATE", old=old)
    assert code == 0
    assert json.loads(out)["status"]["allocatable"]["memory"] == "2Gi"


def test_apply_refuses_a_broken_slo_config(tmp_path):
    # Labelled as the slo-controller-config: the API server sends no other ConfigMap to the webhook.
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "slo-controller-config",
            "namespace": "koordinator-system",
            "labels": {"koordinator.sh/configmap-type": "slo-controller-config"},
        },
        "data": {"cpu-burst-config": '{"clusterStrategy": {"cpuBurstPercent": 0}}'},
    }
    code, _, err = apply(tmp_path, config)
    assert code == 1
    assert '"cpu-burst-config.clusterStrategy.cpuBurstPercent":"cpuBurstPercent must be 1 or greater"' in err
