"""Security-sensitive changes a ClusterColocationProfile's `patch` makes to every pod it selects.

A strategic-merge patch can add anything to a pod, as Koordinator allows, and that stays the default.
These are the fields through which a profile author could raise what a pod may do on its node or in
the cluster (the Pod Security "privileged" level's fields, the pod's identity and its placement):
`apply --explain` and `audit` name them, and `--refuse-sensitive-patches` refuses profiles that
patch them, unless a profile is annotated `colocate.io/sensitive-patch: allow` (reviewed).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

#: pod spec fields that change who the pod is, where it runs, or what of the node it shares
_SPEC_FIELDS: Final = (
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "hostUsers",
    "nodeName",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "securityContext",
)
_CONTAINER_SECTIONS: Final = ("containers", "initContainers", "ephemeralContainers")


def _items(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, Mapping):
                yield index, item


def sensitive_fields(patch: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The security-sensitive fields `patch` sets, as field paths; empty when none."""
    if not isinstance(patch, Mapping):
        return ()
    found: list[str] = []
    metadata = patch.get("metadata")
    if isinstance(metadata, Mapping) and "namespace" in metadata:
        found.append("metadata.namespace")
    spec = patch.get("spec")
    if not isinstance(spec, Mapping):
        return tuple(found)
    found.extend(f"spec.{name}" for name in _SPEC_FIELDS if name in spec)
    for index, volume in _items(spec.get("volumes")):
        if "hostPath" in volume:
            found.append(f"spec.volumes[{index}].hostPath")
    for section in _CONTAINER_SECTIONS:
        for index, container in _items(spec.get(section)):
            if "securityContext" in container:
                found.append(f"spec.{section}[{index}].securityContext")
            for port_index, port in _items(container.get("ports")):
                if "hostPort" in port:
                    found.append(f"spec.{section}[{index}].ports[{port_index}].hostPort")
    return tuple(found)
