"""Every object we ship must be one a real API server accepts: rules the OpenAPI schemas cannot see.

kubernetes-validate (tests/test_kustomize.py) checks shapes; these are the API server's own rules
that refused our manifests on a real kube-apiserver (docs/development.md lists them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import REPO

SHIPPED = (REPO / "manifests", REPO / "examples")
#: kinds whose spec.template is a PodTemplateSpec
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job")
#: since Kubernetes 1.18 the API server refuses a CRD of these groups without the annotation
PROTECTED_GROUP_SUFFIXES = (".k8s.io", ".kubernetes.io")
APPROVAL_ANNOTATION = "api-approved.kubernetes.io"


def shipped_objects() -> Iterator[tuple[str, dict[str, Any]]]:
    for root in SHIPPED:
        for path in sorted(root.rglob("*")):
            if path.suffix not in (".yaml", ".yml", ".json"):
                continue
            where = str(path.relative_to(REPO))
            for obj in _documents(path):
                yield from _flattened(where, obj)


def _documents(path: Path) -> list[Any]:
    text = path.read_text()
    return [json.loads(text)] if path.suffix == ".json" else list(yaml.safe_load_all(text))


def _flattened(where: str, obj: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(obj, dict):
        return
    if obj.get("kind") == "List" or obj.get("kind", "").endswith("List"):
        for item in obj.get("items") or []:
            yield from _flattened(where, item)
        return
    yield where, obj


def pod_specs(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    if kind == "Pod" and obj.get("apiVersion") == "v1":
        yield spec
    elif kind in WORKLOADS:
        yield (spec.get("template") or {}).get("spec") or {}
    elif kind == "CronJob":
        yield spec["jobTemplate"]["spec"]["template"]["spec"]
    elif kind == "PodTemplate":
        yield obj["template"]["spec"]


def _name(where: str, obj: dict[str, Any]) -> str:
    return f"{where}: {obj.get('kind')} {obj.get('metadata', {}).get('name')}"


def test_every_container_of_every_shipped_pod_names_an_image() -> None:
    """A Pod without `image` is refused by the API server, so an example could not be applied."""
    missing = [
        f"{_name(where, obj)} container {container.get('name')}"
        for where, obj in shipped_objects()
        for spec in pod_specs(obj)
        for container in (spec.get("containers") or []) + (spec.get("initContainers") or [])
        if not container.get("image")
    ]
    assert missing == []


def test_the_scan_sees_the_example_snapshots() -> None:
    """Guards the test above against scanning nothing."""
    pods = [where for where, obj in shipped_objects() if obj.get("kind") == "Pod"]
    assert "examples/whatif/cluster/pods.yaml" in pods
    assert "manifests/scheduler/example-cluster/pods.yaml" in pods


def crds() -> list[tuple[str, dict[str, Any]]]:
    return [(w, o) for w, o in shipped_objects() if o.get("kind") == "CustomResourceDefinition"]


@pytest.mark.parametrize("where, crd", crds(), ids=lambda v: v["metadata"]["name"] if isinstance(v, dict) else "")
def test_a_crd_of_a_kubernetes_group_carries_the_api_approval_annotation(where: str, crd: dict[str, Any]) -> None:
    """kube-apiserver (>= 1.18) refuses a CRD in a `*.k8s.io`/`*.kubernetes.io` group without it."""
    group = crd["spec"]["group"]
    if not group.endswith(PROTECTED_GROUP_SUFFIXES):
        return
    annotations = crd["metadata"].get("annotations") or {}
    assert annotations.get(APPROVAL_ANNOTATION, "").startswith("https://github.com/"), where


def test_the_protected_groups_are_among_the_shipped_crds() -> None:
    groups = {crd["spec"]["group"] for _, crd in crds()}
    assert {"scheduling.sigs.k8s.io", "topology.node.k8s.io"} <= groups
