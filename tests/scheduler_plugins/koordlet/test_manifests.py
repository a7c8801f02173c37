"""`manifests/koordlet/` deploys the agent with exactly the rights it uses, and the CRDs it reads
and writes are in `manifests/crds/`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from colocate.cli.parser import Parser
from colocate.cluster.files import read_manifest_file
from scheduler_plugins.koordlet.agent import watched_kinds
from scheduler_plugins.koordlet.cli import register_commands
from tests.support.kustomize import K8S_VERSION, only, render
from tests.support.paths import REPO

DIRECTORY = REPO / "manifests" / "koordlet"


def kustomized() -> list[dict[str, Any]]:
    """The objects `kubectl apply -k manifests/koordlet` creates."""
    return render(DIRECTORY)


def one(kind: str) -> dict[str, Any]:
    return only(kustomized(), kind)


@pytest.mark.parametrize("obj", kustomized(), ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_every_koordlet_manifest_validates_against_the_kubernetes_schema(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def shipped_pods() -> list[tuple[str, dict[str, Any]]]:
    """Every v1 Pod the repository ships under manifests/ (examples and samples)."""
    found = []
    for path in sorted((REPO / "manifests").rglob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if isinstance(obj, dict) and obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1":
                found.append((f"{path.relative_to(REPO)}:{obj['metadata']['name']}", obj))
    return found


@pytest.mark.parametrize("obj", [o for _, o in shipped_pods()], ids=[name for name, _ in shipped_pods()])
def test_every_shipped_pod_is_a_valid_object(obj: dict[str, Any]) -> None:
    """The example node's BE pod once lacked `status.containerStatuses[].ready` (and the other
    fields a ContainerStatus requires): the API server would not take it."""
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_rbac_covers_the_watched_kinds_evictions_events_and_node_metric_status_and_nothing_more() -> None:
    rules = one("ClusterRole")["rules"]
    granted = {(g, res, v) for r in rules for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
    watched = {(k.group, k.plural, v) for k in watched_kinds("n1") for v in ("list", "watch")}
    assert watched <= granted
    assert granted - watched == {
        ("", "pods/eviction", "create"),
        ("", "events", "create"),
        ("slo.koordinator.sh", "nodemetrics", "create"),
        ("slo.koordinator.sh", "nodemetrics/status", "patch"),
    }
    binding, account = one("ClusterRoleBinding"), one("ServiceAccount")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"]["namespace"]}
    ]


def test_the_daemonset_runs_the_agent_on_the_hosts_cgroups_and_proc_with_its_node_name() -> None:
    daemonset = one("DaemonSet")
    spec = daemonset["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    parser = Parser(prog="colocate")
    register_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(container["args"])
    assert args.node_name == "$(NODE_NAME)"
    assert container["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert args.kubeconfig is None and args.node_dir is None  # the pod's service account
    assert spec["serviceAccountName"] == one("ServiceAccount")["metadata"]["name"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    host_paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    assert host_paths[mounts[str(args.cgroup_root)]] == "/sys/fs/cgroup"
    assert host_paths[mounts[str(args.proc_root)]] == "/proc"
    assert container["ports"][0]["containerPort"] == args.port
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_the_crds_of_node_slo_and_node_metric_are_installed_with_a_status_subresource() -> None:
    crds = REPO / "manifests" / "crds"
    listed = yaml.safe_load((crds / "kustomization.yaml").read_text())["resources"]
    for name, kind in (("nodeslos.yaml", "NodeSLO"), ("nodemetrics.yaml", "NodeMetric")):
        assert name in listed
        (crd,) = read_manifest_file(Path(crds / name))
        assert crd["spec"]["names"]["kind"] == kind and crd["spec"]["scope"] == "Cluster"
        assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}
    # the koordlet is privileged: not in the default install, in the everything overlay
    top = yaml.safe_load((REPO / "manifests" / "kustomization.yaml").read_text())["resources"]
    everything = yaml.safe_load((REPO / "manifests/overlays/everything/kustomization.yaml").read_text())["resources"]
    assert "koordlet" not in top and "crds" in top
    assert "../../koordlet" in everything and "../../crds" in everything
