"""`kubectl kustomize DIR` for the tests, in Python: the part of kustomize our manifests use.

`resources` (files and directories), `components` (directories of `kind: Component`),
`namespace`, `configMapGenerator` (files and `options.labels`; the name without kustomize's
content hash), `patches` (inline JSON 6902 patches with a `kind`/`name` target) and `images`.
tests/test_kustomize.py checks that this gives what `kubectl kustomize` gives where kubectl is
installed, so the other tests may trust it everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonpatch
import yaml

from colocate.cluster.files import read_manifest_file
from tests.support.paths import REPO

#: the Kubernetes version whose OpenAPI schema every shipped manifest is validated against
K8S_VERSION = "1.30"

MANIFESTS = REPO / "manifests"
#: every kustomization an operator may apply (components are applied through an overlay)
KUSTOMIZATIONS = sorted(
    path.parent
    for path in MANIFESTS.rglob("kustomization.yaml")
    if yaml.safe_load(path.read_text())["kind"] == "Kustomization"
)

CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PriorityClass",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ClusterColocationProfile",
    }
)


def render(directory: Path, *, images: bool = True) -> list[dict[str, Any]]:
    """The objects `kubectl kustomize directory` prints; `images=False` leaves the images as written."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    objects: list[dict[str, Any]] = []
    for entry in kustomization.get("resources", ()):
        target = directory / entry
        objects.extend(render(target, images=images) if target.is_dir() else read_manifest_file(target))
    for entry in kustomization.get("components", ()):
        component = directory / entry
        assert yaml.safe_load((component / "kustomization.yaml").read_text())["kind"] == "Component"
        objects = apply_component(component, objects, images=images)
    return transform(directory, kustomization, objects, images=images)


def apply_component(directory: Path, objects: list[dict[str, Any]], *, images: bool) -> list[dict[str, Any]]:
    """A component's resources are added to `objects`, then its transformations apply to all of them."""
    component = yaml.safe_load((directory / "kustomization.yaml").read_text())
    for entry in component.get("resources", ()):
        target = directory / entry
        objects = objects + (render(target, images=images) if target.is_dir() else read_manifest_file(target))
    return transform(directory, component, objects, images=images)


def transform(
    directory: Path, kustomization: dict[str, Any], objects: list[dict[str, Any]], *, images: bool
) -> list[dict[str, Any]]:
    """Generators, patches, the namespace and the images of one kustomization, in kustomize's order."""
    namespace = kustomization.get("namespace")
    for generator in kustomization.get("configMapGenerator", ()):
        metadata: dict[str, Any] = {"name": generator["name"]}
        labels = (generator.get("options") or {}).get("labels")
        if labels:
            metadata["labels"] = dict(labels)
        if generator.get("namespace") or namespace:
            metadata["namespace"] = generator.get("namespace") or namespace
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": metadata,
                "data": {Path(f).name: (directory / f).read_text() for f in generator["files"]},
            }
        )
    for patch in kustomization.get("patches", ()):
        target = patch["target"]
        matched = [
            i
            for i, o in enumerate(objects)
            if o["kind"] == target["kind"] and o["metadata"]["name"] == target.get("name", o["metadata"]["name"])
        ]
        assert matched, f"{directory}: patch target {target} matches nothing"
        for i in matched:
            objects[i] = jsonpatch.apply_patch(objects[i], yaml.safe_load(patch["patch"]))
    if namespace:
        for obj in objects:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj["metadata"]["namespace"] = namespace
    for image in kustomization.get("images", ()) if images else ():
        for container in containers(objects):
            name, _, tag = container["image"].partition(":")
            if name == image["name"]:
                container["image"] = f"{image.get('newName', name)}:{image.get('newTag', tag)}".rstrip(":")
    return objects


def containers(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every container and init container of the workloads among `objects`."""
    found: list[dict[str, Any]] = []
    for obj in objects:
        spec = obj.get("spec", {}).get("template", {}).get("spec", {})
        found.extend(spec.get("containers", ()))
        found.extend(spec.get("initContainers", ()))
    return found


def only(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The one object of `kind` among `objects` (an error when there is none, or more than one)."""
    (found,) = [o for o in objects if o["kind"] == kind]
    return found
