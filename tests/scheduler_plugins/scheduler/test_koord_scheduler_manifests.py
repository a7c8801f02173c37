"""`manifests/koord-scheduler/`: a second kube-scheduler that schedules what the profiles send to
`koord-scheduler`, on its own Lease, with colocate's extender beside it on localhost."""

from __future__ import annotations

import argparse
import re
from typing import Any
from urllib.parse import urlsplit

import yaml

from colocate.cluster.files import read_manifest_file
from scheduler_plugins.scheduler.cli import register_commands
from scheduler_plugins.scheduler.cluster.sources import extender_kinds
from scheduler_plugins.scheduler.extender.server import VERBS
from scheduler_plugins.scheduler.framework.config import load_config
from scheduler_plugins.scheduler.registry import in_tree_registry
from tests.support.kustomize import render
from tests.support.paths import REPO

DIRECTORY = REPO / "manifests" / "koord-scheduler"
COMPONENT = {"app.kubernetes.io/name": "colocate", "app.kubernetes.io/component": "koord-scheduler"}


def objects() -> list[dict[str, Any]]:
    return render(DIRECTORY)


def one(kind: str, name: str = "") -> dict[str, Any]:
    (found,) = [o for o in objects() if o["kind"] == kind and (not name or o["metadata"]["name"] == name)]
    return found


def deployment_parts() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    deployment = one("Deployment")
    spec = deployment["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in spec["containers"]}
    return deployment, spec, containers["kube-scheduler"], containers["extender"]


def config_files() -> dict[str, str]:
    data: dict[str, str] = one("ConfigMap")["data"]
    return data


def scheduler_configuration() -> dict[str, Any]:
    _, _, scheduler, _ = deployment_parts()
    (flag,) = [a for a in scheduler["command"] if a.startswith("--config=")]
    path = flag.removeprefix("--config=")
    (mount,) = [m for m in scheduler["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    loaded: dict[str, Any] = yaml.safe_load(config_files()[path.removeprefix(mount["mountPath"] + "/")])
    return loaded


def extender_args() -> argparse.Namespace:
    _, _, _, extender = deployment_parts()
    parser = argparse.ArgumentParser()
    register_commands(parser.add_subparsers(dest="command"))
    return parser.parse_args(extender["args"])


def test_it_is_the_upstream_kube_scheduler_scheduling_what_the_profiles_send_to_koord_scheduler() -> None:
    _, _, scheduler, _ = deployment_parts()
    assert scheduler["image"].startswith("registry.k8s.io/kube-scheduler")
    assert scheduler["command"][0] == "kube-scheduler"
    names = {p["schedulerName"] for p in scheduler_configuration()["profiles"]}
    profiles = yaml.safe_load_all((REPO / "manifests/cluster/profiles.yaml").read_text())
    sent_to = {p["spec"]["schedulerName"] for p in profiles if p and p["spec"].get("schedulerName")}
    assert sent_to and sent_to <= names and "default-scheduler" not in names


def test_replicas_elect_a_leader_on_their_own_lease() -> None:
    deployment, spec, _, _ = deployment_parts()
    election = scheduler_configuration()["leaderElection"]
    assert deployment["spec"]["replicas"] >= 2 and election["leaderElect"] is True
    assert election["resourceName"] != "kube-scheduler" and election["resourceLock"] == "leases"
    assert election["resourceNamespace"] == deployment["metadata"]["namespace"]
    role = one("Role", "koord-scheduler-leader-election")
    assert role["metadata"]["namespace"] == election["resourceNamespace"]
    assert {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "resourceNames": [election["resourceName"]],
        "verbs": ["get", "update"],
    } in role["rules"]
    account = spec["serviceAccountName"]
    bound = {
        b["roleRef"]["name"]
        for b in objects()
        if b["kind"] in ("RoleBinding", "ClusterRoleBinding")
        and {"kind": "ServiceAccount", "name": account, "namespace": "koordinator-system"} in b["subjects"]
    }
    assert {
        "system:kube-scheduler",
        "system:volume-scheduler",
        "extension-apiserver-authentication-reader",
        role["metadata"]["name"],
        "koord-scheduler-extender",
    } <= bound
    budget = one("PodDisruptionBudget")
    assert budget["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"] == COMPONENT
    assert budget["spec"]["maxUnavailable"] == 1 and spec["affinity"]["podAntiAffinity"]


def test_the_extender_is_a_localhost_sidecar_serving_the_verbs_kube_scheduler_calls() -> None:
    args = extender_args()
    (extender,) = scheduler_configuration()["extenders"]
    url = urlsplit(extender["urlPrefix"])
    assert (url.hostname, url.port, url.path) == ("127.0.0.1", args.port, args.url_prefix)
    assert args.host == "127.0.0.1"  # nothing outside the pod can call bind
    assert {extender[k] for k in ("filterVerb", "prioritizeVerb", "preemptVerb", "bindVerb")} == set(VERBS)
    assert extender["nodeCacheCapable"] is True and extender["ignorable"] is False
    assert args.cluster is None and args.kubeconfig is None  # the pod's service account
    assert not [o for o in objects() if o["kind"] == "Service"]
    _, _, _, sidecar = deployment_parts()
    for probe, path in (("readinessProbe", "readyz"), ("livenessProbe", "healthz")):
        (url_in_probe,) = re.findall(r"http://[^']+", " ".join(sidecar[probe]["exec"]["command"]))
        assert url_in_probe == f"http://127.0.0.1:{args.port}{args.url_prefix}/{path}"


def test_the_extender_runs_colocates_scheduler_profile() -> None:
    args = extender_args()
    _, _, _, sidecar = deployment_parts()
    (mount,) = [m for m in sidecar["volumeMounts"] if args.config.startswith(m["mountPath"] + "/")]
    text = config_files()[args.config.removeprefix(mount["mountPath"] + "/")]
    assert text == (REPO / "manifests/scheduler/scheduler-config.yaml").read_text(), (
        "manifests/koord-scheduler/colocate-scheduler-config.yaml must equal manifests/scheduler/scheduler-config.yaml"
    )
    load_config(str(DIRECTORY / "colocate-scheduler-config.yaml"), in_tree_registry())


def test_the_service_account_may_read_and_bind_what_the_extender_needs() -> None:
    rules = one("ClusterRole", "koord-scheduler-extender")["rules"]
    shipped = load_config(DIRECTORY / "colocate-scheduler-config.yaml", in_tree_registry()).profile()
    watched = extender_kinds(shipped.plugin_names())
    assert {k.kind for k in watched} >= {"Reservation", "PodGroup", "ElasticQuota", "Device", "NodeResourceTopology"}
    for kind in watched:
        assert any(
            kind.group in r["apiGroups"] and kind.plural in r["resources"] and {"list", "watch"} <= set(r["verbs"])
            for r in rules
        ), kind.kind
    assert any(r["resources"] == ["pods/binding"] and r["verbs"] == ["create"] for r in rules)


def test_the_extender_rights_equal_the_standalone_extenders() -> None:
    """The sidecar's ClusterRole grants exactly what manifests/scheduler/extender-rbac.yaml grants
    the standalone extender (that file's test pins it to the watched kinds), so neither drifts."""
    (standalone,) = [
        o for o in read_manifest_file(REPO / "manifests/scheduler/extender-rbac.yaml") if o["kind"] == "ClusterRole"
    ]
    assert one("ClusterRole", "koord-scheduler-extender")["rules"] == standalone["rules"]


def test_both_containers_are_locked_down() -> None:
    _, spec, scheduler, extender = deployment_parts()
    assert spec["securityContext"]["runAsNonRoot"]
    for container in (scheduler, extender):
        assert container["securityContext"]["readOnlyRootFilesystem"]
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
        assert container["resources"]["requests"] and container["resources"]["limits"]
