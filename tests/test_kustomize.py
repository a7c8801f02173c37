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


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
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


def test_every_image_is_set_by_one_images_entry() -> None:
    entries = {i["name"] for i in yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())["images"]}
    as_written = {c["image"] for c in containers(render(MANIFESTS, images=False))}
    assert as_written == entries  # no tag in the YAML files: the kustomization sets them all
    for container in containers(rendered()):
        name, _, tag = container["image"].rpartition(":")
        assert name and tag and tag != "latest"


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
