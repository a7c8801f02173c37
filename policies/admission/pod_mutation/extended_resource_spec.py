"""The `node.koordinator.sh/extended-resource-spec` annotation
(`pkg/webhook/pod/mutating/extended_resource_spec.go`).

A JSON copy of each container's batch resources, for the node agent. Written on every CREATE when it
differs from what the pod carries (compared by value), so a stale annotation is corrected to `{}`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from policies.admission.plugin import Denied
from policies.apis.constants import ANNOTATION_EXTENDED_RESOURCE_SPEC, BATCH_CPU, BATCH_MEMORY
from policies.apis.objects import annotations_of, ensure_map, spec_of
from policies.apis.quantity import QuantityError, canonical

_BATCH_RESOURCES = (BATCH_CPU, BATCH_MEMORY)


def build_extended_resource_spec(pod: Mapping[str, Any]) -> dict[str, Any]:
    containers: dict[str, Any] = {}
    for container in spec_of(pod).get("containers") or []:
        resources = (container or {}).get("resources") or {}
        entry = {}
        for section in ("limits", "requests"):
            values = _batch_values(resources.get(section))
            if values:
                entry[section] = values
        if entry:
            containers[str(container.get("name", ""))] = entry
    return {"containers": containers} if containers else {}


def _batch_values(resource_list: object) -> dict[str, str]:
    values: dict[str, str] = {}
    # `dict` first: the check against the Mapping ABC costs far more, and this runs per container.
    if not (isinstance(resource_list, dict) or isinstance(resource_list, Mapping)):
        return values
    try:
        for name in _BATCH_RESOURCES:
            if name in resource_list:
                values[name] = canonical(resource_list[name])
    except QuantityError as exc:
        raise Denied(f"quantities must be valid: {exc}", code=500) from exc
    return values


def _normalise(document: Any) -> Any:
    """The annotation as the same canonical shape `build_extended_resource_spec` produces."""
    if not isinstance(document, Mapping):
        raise ValueError("must be a JSON object")
    containers = document.get("containers") or {}
    if not isinstance(containers, Mapping):
        raise ValueError("containers must be a JSON object")
    result = {}
    for name, entry in containers.items():
        if not isinstance(entry, Mapping):
            raise ValueError(f"containers.{name} must be a JSON object")
        normalised = {}
        for section in ("limits", "requests"):
            values = entry.get(section) or {}
            if not isinstance(values, Mapping):
                raise ValueError(f"containers.{name}.{section} must be a JSON object")
            if values:
                normalised[section] = {k: canonical(v) for k, v in values.items()}
        if normalised:
            result[name] = normalised
    return {"containers": result} if result else {}


def set_extended_resource_spec(pod: dict[str, Any]) -> None:
    wanted = build_extended_resource_spec(pod)
    current_text = annotations_of(pod).get(ANNOTATION_EXTENDED_RESOURCE_SPEC)
    if current_text is None and not wanted:
        return
    if current_text is not None:
        try:
            current = _normalise(json.loads(current_text))
        except (ValueError, QuantityError) as exc:
            raise Denied(f"failed to parse annotation {ANNOTATION_EXTENDED_RESOURCE_SPEC}: {exc}", code=500) from exc
        if current == wanted:
            return
    annotations = ensure_map(ensure_map(pod, "metadata"), "annotations")
    # Go's json.Marshal: compact, map keys sorted (orjson: same bytes, several times faster).
    annotations[ANNOTATION_EXTENDED_RESOURCE_SPEC] = orjson.dumps(wanted, option=orjson.OPT_SORT_KEYS).decode()
