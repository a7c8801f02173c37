"""`manifests/manager/` deploys what the manager runs, reads and writes, with no more rights than that."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pytest

from colocate.cli.flags import bind_address
from colocate.main import build_parser
from policies.admission.configmap import changed_documents
from policies.apis.slo_config.manager_config import load_manager_config
from scheduler_plugins.manager.cluster import watched_kinds
from scheduler_plugins.manager.noderesource.plugins_profile import DEFAULT_TABLE
from tests.support.kustomize import K8S_VERSION, only, render
from tests.support.paths import REPO

DIRECTORY = REPO / "manifests" / "manager"


def kustomized() -> list[dict[str, Any]]:
    return render(DIRECTORY)


def one(kind: str) -> dict[str, Any]:
    return only(kustomized(), kind)


@pytest.mark.parametrize("obj", kustomized(), ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_every_manifest_validates_against_the_kubernetes_schema(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(g, res, v) for r in rules for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}


def test_rbac_covers_what_the_manager_watches_and_writes_and_nothing_more() -> None:
    cluster_wide = grants(one("ClusterRole")["rules"])
    namespaced = grants(one("Role")["rules"])
    # the plugins' setup adds its kinds: a row in the plugin table that watches one needs its rule here
    watched = {(k.group, k.plural, v) for k in watched_kinds(DEFAULT_TABLE.watched_kinds) for v in ("list", "watch")}
    assert watched <= cluster_wide | namespaced
    writes = {
        ("", "nodes", "patch"),
        ("", "nodes/status", "patch"),
        ("slo.koordinator.sh", "nodeslos", "create"),
        ("slo.koordinator.sh", "nodeslos", "update"),
        ("slo.koordinator.sh", "nodeslos", "patch"),
        ("slo.koordinator.sh", "nodemetrics", "create"),
        ("slo.koordinator.sh", "nodemetrics", "update"),
        ("slo.koordinator.sh", "nodemetrics", "patch"),
        ("topology.node.k8s.io", "noderesourcetopologies", "patch"),
        ("", "events", "create"),
    }
    assert cluster_wide - watched == writes
    assert not any(verb == "delete" for _, _, verb in cluster_wide | namespaced)
    assert namespaced - watched == {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
    assert ("", "configmaps", "list") in namespaced  # the slo-controller-config only, in its namespace


def test_the_deployment_elects_a_leader_and_probes_its_health_port() -> None:
    deployment = one("Deployment")
    assert deployment["spec"]["replicas"] == 2
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    args = build_parser().parse_args(container["args"])
    assert args.cluster is None and args.kubeconfig is None  # the pod's service account
    assert args.leader_elect == "true" and args.leader_election_namespace == deployment["metadata"]["namespace"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"health": bind_address(args.health_addr)[1], "metrics": bind_address(args.metrics_addr)[1]}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert spec["serviceAccountName"] == one("ServiceAccount")["metadata"]["name"]
    selector = one("PodDisruptionBudget")["spec"]["selector"]["matchLabels"]
    assert selector == deployment["spec"]["selector"]["matchLabels"]


def test_the_shipped_config_turns_colocation_on_and_the_webhook_admits_it() -> None:
    configmap = one("ConfigMap")
    config, issues = load_manager_config(configmap)
    assert not issues and config.colocation.cluster.enable
    assert changed_documents(configmap, None, "koordinator-system/slo-controller-config")
    assert json.loads(configmap["data"]["colocation-config"])["enable"] is True
