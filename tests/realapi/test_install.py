"""What an operator installs, sent to a real API server (kube-apiserver v1.20.2): every CRD in
manifests/crds, and every kustomization (manifests/, each part, the overlays) rendered the project's
way (tests/support/kustomize.py; kubectl 1.20's `-k` predates components) and server-side applied.

Objects that would act on this control plane are server-side dry-run instead (admission, defaulting
and validation run; nothing is kept); kinds v1.20 does not serve are named with the reason, and
a `policy/v1` PodDisruptionBudget is dry-run as the `policy/v1beta1` that v1.20 serves.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from colocate.cluster.rest import ApiError
from tests.support.kustomize import KUSTOMIZATIONS, MANIFESTS, render
from tests.support.realapi import RealApi
from tests.support.realapi_process import free_port
from webhook.dispatch import NAMESPACE_NAME_LABEL as NAME_LABEL

pytestmark = pytest.mark.realapi

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]},
}
CRD_FILES = sorted((MANIFESTS / "crds").glob("*.yaml"))
CRD_FILES = [path for path in CRD_FILES if path.name != "kustomization.yaml"]

#: kinds applied as a dry run only, and why: their real objects would act on the session's cluster
DRY_RUN_ONLY = {
    "MutatingWebhookConfiguration": "would send every pod to a webhook Service that nothing serves here",
    "ValidatingWebhookConfiguration": "would send every pod to a webhook Service that nothing serves here",
    "Deployment": "no kubelet runs its pods here",
    "DaemonSet": "no kubelet runs its pods here",
}
#: (apiVersion, kind) v1.20 does not serve, and why; the test fails on one missing from this table
NOT_ON_1_20 = {
    ("policy/v1", "PodDisruptionBudget"): "policy/v1 arrived in 1.21 (dry-run as policy/v1beta1 instead)",
    ("monitoring.coreos.com/v1", "PodMonitor"): "the Prometheus Operator's CRD, not installed here",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "the Prometheus Operator's CRD, not installed here",
    ("cert-manager.io/v1", "Certificate"): "cert-manager's CRD, not installed here",
    ("cert-manager.io/v1", "Issuer"): "cert-manager's CRD, not installed here",
}


def served(realapi: RealApi, obj: Mapping[str, Any]) -> bool:
    try:
        realapi.path_of(obj["apiVersion"], obj["kind"], "probe", "default")
    except ApiError:
        return False
    return True


def install_crds(realapi: RealApi, crds: list[dict[str, Any]]) -> dict[str, str]:
    """Apply each CRD; the refused ones by name, with the server's message."""
    refused: dict[str, str] = {}
    for crd in crds:
        try:
            realapi.apply([crd])
        except ApiError as exc:
            refused[crd["metadata"]["name"]] = str(exc)
    realapi.wait_crds_established(c["metadata"]["name"] for c in crds if c["metadata"]["name"] not in refused)
    return refused


@pytest.mark.parametrize("path", CRD_FILES, ids=lambda p: p.stem)
def test_every_crd_is_accepted_and_served(realapi: RealApi, path: Path) -> None:
    crds = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]

    refused = install_crds(realapi, crds)

    assert refused == {}, f"kube-apiserver v1.20.2 refuses {path.relative_to(MANIFESTS.parent)}"
    for crd in crds:
        spec = crd["spec"]
        for version in (v["name"] for v in spec["versions"] if v.get("served")):
            probe = {"apiVersion": f"{spec['group']}/{version}", "kind": spec["names"]["kind"]}
            assert served(realapi, probe), f"{spec['names']['kind']} {version} is not served"


def as_v1beta1(budget: dict[str, Any]) -> dict[str, Any]:
    """A policy/v1 PodDisruptionBudget as v1.20's policy/v1beta1 (the same spec fields)."""
    return {**budget, "apiVersion": "policy/v1beta1"}


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda d: str(d.relative_to(MANIFESTS.parent)))
def test_every_kustomization_is_accepted(realapi: RealApi, directory: Path) -> None:
    objects = render(directory)
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    assert install_crds(realapi, crds) == {}, "CRDs refused"
    namespaces = {o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")}
    realapi.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in sorted(namespaces))

    refused: dict[str, str] = {}
    skipped: dict[tuple[str, str], str] = {}
    for obj in (o for o in objects if o["kind"] != "CustomResourceDefinition"):
        what = f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
        if not served(realapi, obj):
            skipped[(obj["apiVersion"], obj["kind"])] = NOT_ON_1_20.get((obj["apiVersion"], obj["kind"]), "?")
            obj = as_v1beta1(obj) if obj["kind"] == "PodDisruptionBudget" else obj
            if not served(realapi, obj):
                continue
        try:
            realapi.apply([obj], dry_run=obj["kind"] in DRY_RUN_ONLY or obj["apiVersion"] == "policy/v1beta1")
        except ApiError as exc:
            refused[what] = str(exc)

    assert refused == {}
    assert "?" not in skipped.values(), f"kinds v1.20 does not serve, without a reason: {skipped}"


def test_before_1_21_the_webhooks_own_namespace_is_excluded_only_once_labelled(realapi: RealApi) -> None:
    """The shipped configurations exclude kube-system and koordinator-system by the
    `kubernetes.io/metadata.name` label, which API servers set only since 1.21: on 1.20 a pod of
    colocate's own namespace needs the webhook (a cold start that cannot happen) until the
    namespace is labelled by hand, as docs/deploy.md says."""
    plane = realapi.require_local("send every pod of the cluster to a webhook that does not answer")
    namespace = "koordinator-system"
    realapi.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}])
    realapi.default_service_account(namespace)
    shipped = yaml.safe_load_all((MANIFESTS / "deploy" / "webhooks.yaml").read_text())
    configurations = [unanswered(c, plane.pki.ca.read_bytes(), free_port()) for c in shipped if c]
    own_pod = {**POD, "metadata": {"name": f"own-{realapi.run_id}"}}
    realapi.apply(configurations)
    try:
        message = refusal(lambda: realapi.apply([own_pod], namespace, dry_run=True))
        realapi.core.patch_namespace(namespace, {"metadata": {"labels": {NAME_LABEL: namespace}}})
        realapi.apply([own_pod], namespace, dry_run=True)  # admitted: the webhook is not asked
    finally:
        for configuration in configurations:
            realapi.delete(configuration["apiVersion"], configuration["kind"], configuration["metadata"]["name"])
        realapi.core.patch_namespace(namespace, {"metadata": {"labels": {NAME_LABEL: None}}})

    assert 'failed calling webhook "mpod-create.koordinator.sh"' in message


def unanswered(configuration: dict[str, Any], ca_bundle: bytes, port: int) -> dict[str, Any]:
    """`configuration` calling 127.0.0.1:`port`, where nothing listens, instead of the Service."""
    for webhook in configuration["webhooks"]:
        path = webhook["clientConfig"]["service"]["path"]
        webhook["clientConfig"] = {
            "url": f"https://127.0.0.1:{port}{path}",
            "caBundle": base64.b64encode(ca_bundle).decode(),
        }
    return configuration


def refusal(attempt: Callable[[], object]) -> str:
    with pytest.raises(ApiError) as refused:
        attempt()
    return str(refused.value)


@pytest.mark.parametrize("kind", sorted(NOT_ON_1_20), ids=" ".join)
def test_kinds_the_server_may_not_serve(realapi: RealApi, kind: tuple[str, str]) -> None:
    """Named, and skipped with the reason, where the server does not serve them (v1.20 does not);
    on a server that does (`--kubeconfig`), every such object of every part is a valid dry run."""
    api_version, name = kind
    if not served(realapi, {"apiVersion": api_version, "kind": name}):
        pytest.skip(f"{api_version} {name} is not served: {NOT_ON_1_20[kind]}")
    objects = [o for d in KUSTOMIZATIONS for o in render(d) if (o["apiVersion"], o["kind"]) == kind]
    realapi.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": o["metadata"]["namespace"]}}
        for o in objects
        if o["metadata"].get("namespace")
    )
    realapi.apply(objects, dry_run=True)
