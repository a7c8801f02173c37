"""`manifests/descheduler/` deploys what the descheduler runs and reads, with no more rights than that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from colocate.main import build_parser
from scheduler_plugins.descheduler.cluster import WATCHED_KINDS
from scheduler_plugins.descheduler.framework.config import load_config
from scheduler_plugins.descheduler.registry import in_tree_registry
from scheduler_plugins.descheduler.service import bind_address
from tests.support.kustomize import K8S_VERSION, only, render
from tests.support.paths import REPO

DIRECTORY = REPO / "manifests" / "descheduler"


def kustomized() -> list[dict[str, Any]]:
    """The objects `kubectl apply -k manifests/descheduler` creates (generated ConfigMaps unhashed)."""
    return render(DIRECTORY)


def one(kind: str) -> dict[str, Any]:
    return only(kustomized(), kind)


@pytest.mark.parametrize("obj", kustomized(), ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_every_manifest_validates_against_the_kubernetes_schema(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_rbac_covers_the_watched_kinds_evictions_events_migrations_and_the_lease_and_nothing_more() -> None:
    rules = one("ClusterRole")["rules"]
    granted = {(g, res, v) for r in rules for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
    watched = {(k.group, k.plural, v) for k in WATCHED_KINDS for v in ("list", "watch")}
    migration = {  # the MigrationController's PodMigrationJobs and Reservations (migration/backend.py)
        ("", "pods", "get"),
        *(("scheduling.koordinator.sh", "podmigrationjobs", v) for v in ("get", "list", "create", "update", "delete")),
        ("scheduling.koordinator.sh", "podmigrationjobs/status", "update"),
        *(("scheduling.koordinator.sh", "reservations", v) for v in ("get", "create", "delete")),
    }
    assert granted - watched == {("", "pods/eviction", "create"), ("", "events", "create"), *migration}
    assert watched <= granted
    role = one("Role")
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
    ]
    account = one("ServiceAccount")["metadata"]
    subject = [{"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}]
    assert one("ClusterRoleBinding")["subjects"] == subject == one("RoleBinding")["subjects"]


def test_the_deployment_runs_the_shipped_configuration_with_probes_on_its_health_port() -> None:
    deployment = one("Deployment")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    args = build_parser().parse_args(container["args"])
    assert args.cluster is None and args.kubeconfig is None  # the pod's service account
    config = load_config(DIRECTORY / Path(args.config).name, in_tree_registry())
    assert config.leader_election.leader_elect and config.descheduling_interval > 0
    assert config.leader_election.resource_namespace == deployment["metadata"]["namespace"]
    (mount,) = [m for m in container["volumeMounts"] if args.config.startswith(m["mountPath"] + "/")]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == one("ConfigMap")["metadata"]["name"]
    port = container["ports"][0]
    healthz, _ = config.bind_addresses(in_cluster=True)
    assert bind_address(healthz) == ("0.0.0.0", port["containerPort"])
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    assert spec["serviceAccountName"] == one("ServiceAccount")["metadata"]["name"]


def test_the_example_configuration_parses() -> None:
    load_config(DIRECTORY / "example-config.yaml", in_tree_registry())


@pytest.mark.parametrize("path", sorted(DIRECTORY.glob("*config*.yaml")), ids=lambda p: p.name)
def test_a_shipped_configuration_run_off_cluster_listens_on_loopback_only(path: Path) -> None:
    """`colocate descheduler run --config <shipped> --kubeconfig ...` on a laptop: /healthz and /metrics
    are not served to the network."""
    config = load_config(path, in_tree_registry())
    for address in config.bind_addresses(in_cluster=False):
        assert bind_address(address)[0] == "127.0.0.1", address
