"""Read-only accessors for Kubernetes objects kept as plain JSON dicts.

They tolerate missing or null sections, so that a pod without labels or a spec reads as empty rather
than raising in the middle of a policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _section(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    # `dict` first, then absent: an isinstance check against the Mapping ABC costs far more, and
    # this runs per field (most pods and nodes have no annotations, or no labels).
    if isinstance(value, dict):
        return value
    return _EMPTY if value is None or not isinstance(value, Mapping) else value


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _section(obj, "metadata")


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _section(metadata_of(obj), "labels")


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _section(metadata_of(obj), "annotations")


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _section(obj, "spec")


def status_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _section(obj, "status")


def node_name_of(pod: Mapping[str, Any]) -> str:
    """The node a pod is bound to (`spec.nodeName`), "" when it is not."""
    return str(spec_of(pod).get("nodeName") or "")


def name_of(obj: Mapping[str, Any]) -> str:
    return str(metadata_of(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(metadata_of(obj).get("namespace") or "")


def ensure_map(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """`parent[key]` as a dict, created (or replacing a null) when missing."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON document; several times faster than `copy.deepcopy` for dicts and lists."""
    if isinstance(value, dict):
        copy = dict(value)  # a shallow copy in C, then its containers replaced by copies (same keys, same order)
        for key, item in copy.items():
            if isinstance(item, (dict, list)):
                copy[key] = json_copy(item)
        return copy
    if isinstance(value, list):
        return [json_copy(v) if isinstance(v, (dict, list)) else v for v in value]
    return value


def copy_pod_for_mutation(pod: dict[str, Any]) -> dict[str, Any]:
    """A copy of a pod in which every part the pod mutators write is private.

    Copies metadata (with labels and annotations), the top level of spec, and each container's
    resources; everything else is shared with the original, read-only. The mutators replace whole
    values elsewhere (a strategic merge patch works on its own deep copy), so the original stays
    untouched, which the property tests check. Several times cheaper than a deep copy of a pod.
    """
    copy = dict(pod)
    metadata = pod.get("metadata")
    if isinstance(metadata, dict):
        metadata = copy["metadata"] = dict(metadata)
        for key in ("labels", "annotations"):
            if isinstance(metadata.get(key), dict):
                metadata[key] = dict(metadata[key])
    spec = pod.get("spec")
    if isinstance(spec, dict):
        spec = copy["spec"] = dict(spec)
        for section in ("containers", "initContainers"):
            if isinstance(spec.get(section), list):
                spec[section] = [_copy_container(c) for c in spec[section]]
        if isinstance(spec.get("overhead"), dict):
            spec["overhead"] = dict(spec["overhead"])
    return copy


def _copy_container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    copy = dict(container)
    if isinstance(copy.get("resources"), dict):
        copy["resources"] = json_copy(copy["resources"])
    return copy
