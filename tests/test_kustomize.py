"""`kubectl kustomize` of every part under manifests/: what an operator installs, valid for Kubernetes 1.30.

`manifests/` (the default install) renders the CRDs, the webhook and the koord-scheduler with its
extender sidecar, their RBAC, PodDisruptionBudgets and NetworkPolicies, and nothing privileged;
each other part (koordlet, descheduler, examples, monitoring, the cert-manager component) renders
on its own, and `overlays/everything` renders them all. Every built-in object passes
kubernetes-validate, and every image goes through a kustomization's `images:`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support.kustomize import K8S_VERSION, KUSTOMIZATIONS, MANIFESTS, containers, render
from tests.support.paths import REPO

EVERYTHING = MANIFESTS / "overlays" / "everything"
CERT_MANAGER = MANIFESTS / "overlays" / "cert-manager"
#: the parts docs/deploy.md lists, each applied on its own or through the everything overlay
PARTS = ("crds", "deploy", "koord-scheduler", "koordlet", "descheduler", "examples", "monitoring")


def rendered() -> list[dict[str, Any]]:
    return render(MANIFESTS)


def builtin(obj: dict[str, Any]) -> bool:
    group = obj["apiVersion"].rpartition("/")[0]
    return not group or group.endswith(".k8s.io") or group in ("apps", "policy")


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def kubectl_minor() -> int | None:
    """The installed kubectl's minor version, None without kubectl."""
    if shutil.which("kubectl") is None:
        return None
    out = subprocess.run(["kubectl", "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=60)
    return int(re.sub(r"\D", "", yaml.safe_load(out.stdout)["clientVersion"]["minor"]))


@pytest.mark.skipif(
    (kubectl_minor() or 0) < 21,
    reason="needs kubectl 1.21 or later (kustomize Components, docs/deploy.md): not installed",
)
@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda d: str(d.relative_to(MANIFESTS)) or "manifests")
def test_the_python_rendering_is_what_kubectl_kustomize_renders(directory: Path) -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    ours = render(directory)
    generated = {o["metadata"]["name"] for o in ours if o["kind"] == "ConfigMap"} or {"-"}
    unhash = re.compile(r"\b(" + "|".join(map(re.escape, generated)) + r")-[a-z0-9]{10}\b")
    theirs = sorted(yaml.safe_load_all(unhash.sub(r"\1", out)), key=key)
    assert theirs == sorted(ours, key=key)


def test_it_renders_every_part_of_an_installation() -> None:
    objects = rendered()
    kinds = {o["kind"] for o in objects}
    assert {
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    } <= kinds
    components = {o["metadata"]["labels"]["app.kubernetes.io/component"] for o in objects if o["kind"] == "Deployment"}
    assert components == {"webhook", "koord-scheduler", "manager"}


def installable() -> list[dict[str, Any]]:
    """Every object of every overlay, once (the cert-manager overlay changes the Deployment)."""
    found = {(key(o), yaml.safe_dump(o)): o for d in (EVERYTHING, CERT_MANAGER) for o in render(d)}
    return list(found.values())


@pytest.mark.parametrize("obj", [o for o in installable() if builtin(o)], ids=lambda o: "/".join(key(o)).strip("/"))
def test_every_builtin_object_validates_against_the_kubernetes_schema(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


IMAGES = MANIFESTS / "components" / "images"


def image_entries(component: Path = IMAGES) -> dict[str, str]:
    """The images component's entries: each image as written in the manifests, and what it becomes."""
    entries = yaml.safe_load((component / "kustomization.yaml").read_text())["images"]
    return {e["name"]: f"{e.get('newName', e['name'])}:{e['newTag']}" for e in entries}


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda d: str(d.relative_to(MANIFESTS)) or "manifests")
def test_every_image_of_every_rendering_is_the_one_the_images_component_sets(directory: Path) -> None:
    entries = image_entries()
    for container in containers(render(directory, images=False)):
        assert container["image"] in entries  # no tag in the YAML files: the component sets them all
    for container in containers(render(directory)):
        assert container["image"] in entries.values(), (directory, container["image"])
        name, _, tag = container["image"].rpartition(":")
        assert name and tag and tag != "latest"


def test_pointing_the_images_component_at_a_registry_moves_every_part_and_overlay(tmp_path: Path) -> None:
    """docs/deploy.md's one line: every part applied on its own and every overlay follow it."""
    copy = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy)
    component = copy / "components" / "images" / "kustomization.yaml"
    document = yaml.safe_load(component.read_text())
    document["images"][0] = {"name": "colocate", "newName": "registry.example.com/team/colocate", "newTag": "9.9.9"}
    component.write_text(yaml.safe_dump(document))
    moved = 0
    for directory in KUSTOMIZATIONS:
        for container in containers(render(copy / directory.relative_to(MANIFESTS))):
            assert not container["image"].startswith("colocate"), (directory, container["image"])
            moved += container["image"] == "registry.example.com/team/colocate:9.9.9"
    assert moved >= 6  # webhook, extender sidecar, manager, koordlet, descheduler, standalone extender


def test_the_cert_manager_overlay_installs_every_part_of_the_default_install() -> None:
    assert {key(o) for o in rendered()} <= {key(o) for o in render(CERT_MANAGER)}


def test_the_default_install_is_nothing_privileged_and_no_example_profile() -> None:
    objects = rendered()
    assert not [o for o in objects if o["kind"] in ("ClusterColocationProfile", "DaemonSet")]
    for obj in objects:
        spec = obj.get("spec", {}).get("template", {}).get("spec", {})
        assert not spec.get("hostPID") and not spec.get("hostNetwork"), key(obj)
        for container in containers([obj]):
            assert not container.get("securityContext", {}).get("privileged"), key(obj)


@pytest.mark.parametrize("part", PARTS)
def test_the_everything_overlay_installs_every_part(part: str) -> None:
    everything = {key(o) for o in render(EVERYTHING)}
    assert {key(o) for o in render(MANIFESTS / part)} <= everything
    assert {key(o) for o in rendered()} <= everything


def test_every_applyable_directory_is_a_documented_part() -> None:
    deploy_md = (REPO / "docs" / "deploy.md").read_text()
    for directory in KUSTOMIZATIONS:
        if directory != MANIFESTS:
            assert f"manifests/{directory.relative_to(MANIFESTS)}" in deploy_md


def test_no_rendering_carries_a_ca_bundle_so_reapplying_never_blanks_one() -> None:
    """kubectl apply (client- or server-side) only owns the fields it applies: caBundle is not one."""
    for directory in KUSTOMIZATIONS:
        for obj in render(directory):
            if obj["kind"].endswith("WebhookConfiguration"):
                assert all("caBundle" not in w["clientConfig"] for w in obj["webhooks"]), directory


def webhook_deployment(directory: Path) -> dict[str, Any]:
    (found,) = [
        o for o in render(directory) if o["kind"] == "Deployment" and o["metadata"]["name"] == "colocate-webhook"
    ]
    return found


def test_the_webhook_manages_its_certificates_in_the_cluster_and_is_never_preempted() -> None:
    pod = webhook_deployment(MANIFESTS)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "--self-managed-certs" in container["args"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    (certs,) = [v for v in pod["volumes"] if v["name"] == "certs"]
    assert certs["secret"]["optional"] is True  # the leader creates the Secret after the pods start
    assert container["startupProbe"]["periodSeconds"] * container["startupProbe"]["failureThreshold"] >= 120


def test_with_cert_manager_the_webhook_waits_for_the_certificate_cert_manager_issues() -> None:
    objects = render(CERT_MANAGER)
    pod = webhook_deployment(CERT_MANAGER)["spec"]["template"]["spec"]
    assert "--self-managed-certs" not in pod["containers"][0]["args"]
    (certs,) = [v for v in pod["volumes"] if v["name"] == "certs"]
    assert "optional" not in certs["secret"]
    certificates = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Certificate"}
    for configuration in [o for o in objects if o["kind"].endswith("WebhookConfiguration")]:
        namespace, _, name = configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].partition("/")
        assert certificates[name]["metadata"]["namespace"] == namespace
        assert certificates[name]["spec"]["secretName"] == certs["secret"]["secretName"]
        service = configuration["webhooks"][0]["clientConfig"]["service"]
        assert f"{service['name']}.{service['namespace']}.svc" in certificates[name]["spec"]["dnsNames"]


@pytest.mark.parametrize(
    "copy, original",
    [
        ("deploy/priorityclasses.yaml", "cluster/priorityclasses.yaml"),
        ("examples/profiles.yaml", "cluster/profiles.yaml"),
    ],
)
def test_the_kustomize_copies_of_the_embedded_cluster_state_are_equal(copy: str, original: str) -> None:
    assert (MANIFESTS / copy).read_text() == (MANIFESTS / original).read_text()


def test_only_kube_scheduler_may_reach_the_standalone_extender() -> None:
    """The extender has no authentication and binds what it is told: its NetworkPolicy admits only
    kube-scheduler's pods in kube-system, to the extender's port."""
    objects = render(MANIFESTS / "scheduler")
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    (policy,) = [o for o in objects if o["kind"] == "NetworkPolicy"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    selected = policy["spec"]["podSelector"]["matchLabels"]
    assert (
        selected.items() <= pod_labels.items()
        and policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    )
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    (rule,) = policy["spec"]["ingress"]
    assert [p["port"] for p in rule["ports"]] == [p["containerPort"] for p in container["ports"]]
    assert rule["from"] == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"component": "kube-scheduler"}},
        }
    ]
