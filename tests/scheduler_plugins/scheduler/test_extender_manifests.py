"""`manifests/scheduler/` deploys what the extender serves and reads, with no more rights than that."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from scheduler_plugins.scheduler.cli import register_commands
from scheduler_plugins.scheduler.cluster.sources import extender_kinds
from scheduler_plugins.scheduler.framework.config import load_config
from scheduler_plugins.scheduler.registry import in_tree_registry
from tests.support.kustomize import K8S_VERSION, only, render
from tests.support.paths import REPO

DIRECTORY = REPO / "manifests" / "scheduler"


def kustomized() -> list[dict[str, Any]]:
    """The objects `kubectl apply -k manifests/scheduler` creates (generated ConfigMaps unhashed)."""
    return render(DIRECTORY)


def one(kind: str) -> dict[str, Any]:
    return only(kustomized(), kind)


@pytest.mark.parametrize("obj", kustomized(), ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_every_extender_manifest_validates_against_the_kubernetes_schema(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_rbac_covers_the_watched_kinds_and_binding_and_nothing_more() -> None:
    rules = one("ClusterRole")["rules"]
    shipped = load_config(DIRECTORY / "scheduler-config.yaml", in_tree_registry()).profile()
    watched_kinds = extender_kinds(shipped.plugin_names())
    assert {k.kind for k in watched_kinds} >= {"ElasticQuota", "Device", "NodeResourceTopology"}
    for kind in watched_kinds:
        assert any(
            kind.group in r["apiGroups"] and kind.plural in r["resources"] and set(r["verbs"]) == {"list", "watch"}
            for r in rules
        ), kind.kind
    assert any(r["resources"] == ["pods/binding"] and r["verbs"] == ["create"] for r in rules)
    granted = {(g, res, v) for r in rules for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
    watched = {(k.group, k.plural, v) for k in watched_kinds for v in ("list", "watch")}
    assert granted - watched == {
        ("", "pods/binding", "create"),
        ("", "pods", "patch"),
        ("scheduling.koordinator.sh", "reservations/status", "patch"),
    }
    binding = one("ClusterRoleBinding")
    account = one("ServiceAccount")
    assert binding["roleRef"]["name"] == one("ClusterRole")["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"]["namespace"]}
    ]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register_commands(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_the_deployment_runs_the_extender_in_api_server_mode_with_probes_on_its_routes() -> None:
    deployment = one("Deployment")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    args = parse_args(container["args"])
    assert args.cluster is None and args.kubeconfig is None  # the pod's service account
    assert spec["serviceAccountName"] == one("ServiceAccount")["metadata"]["name"]
    assert container["ports"][0]["containerPort"] == args.port
    assert container["readinessProbe"]["httpGet"]["path"] == f"{args.url_prefix}/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == f"{args.url_prefix}/healthz"
    (mount,) = [m for m in container["volumeMounts"] if args.config.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    config_map = one("ConfigMap")
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    assert Path(args.config).name in config_map["data"]
    load_config(str(DIRECTORY / Path(args.config).name), in_tree_registry())
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
    assert spec["securityContext"]["runAsNonRoot"] and container["securityContext"]["readOnlyRootFilesystem"]
    service = one("Service")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
