"""`kubectl kustomize manifests/`: everything an operator installs, valid for Kubernetes 1.30.

It renders the webhook, the koord-scheduler with its extender sidecar, the CRDs, RBAC,
PodDisruptionBudgets and NetworkPolicies; every built-in object passes kubernetes-validate, and
every image goes through the kustomization's `images:` (one line to change registry or tag).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support.kustomize import K8S_VERSION, containers, render
from tests.support.paths import REPO

MANIFESTS = REPO / "manifests"


def rendered() -> list[dict[str, Any]]:
    return render(MANIFESTS)


def builtin(obj: dict[str, Any]) -> bool:
    group = obj["apiVersion"].rpartition("/")[0]
    return not group or group.endswith(".k8s.io") or group in ("apps", "policy")


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_the_python_rendering_is_what_kubectl_kustomize_renders() -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(MANIFESTS)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    generated = {o["metadata"]["name"] for o in rendered() if o["kind"] == "ConfigMap"}
    unhash = re.compile(r"\b(" + "|".join(map(re.escape, generated)) + r")-[a-z0-9]{10}\b")
    theirs = sorted(yaml.safe_load_all(unhash.sub(r"\1", out)), key=key)
    assert theirs == sorted(rendered(), key=key)


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


@pytest.mark.parametrize("obj", [o for o in rendered() if builtin(o)], ids=lambda o: "/".join(key(o)).strip("/"))
def test_every_builtin_object_validates_against_the_kubernetes_schema(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_every_image_is_set_by_one_images_entry() -> None:
    entries = {i["name"] for i in yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())["images"]}
    as_written = {c["image"] for c in containers(render(MANIFESTS, images=False))}
    assert as_written == entries  # no tag in the YAML files: the kustomization sets them all
    for container in containers(rendered()):
        name, _, tag = container["image"].rpartition(":")
        assert name and tag and tag != "latest"
