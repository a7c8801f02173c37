"""The ClusterColocationProfile CRD's structural schema (manifests/crds/clustercolocationprofiles.yaml).

What the API server checks a profile against; offline and embedded modes check files against the
same rules (`policies.apis.structural`). A test keeps this equal to the CRD's `openAPIV3Schema` (without
its descriptions).
"""

from __future__ import annotations

from typing import Any, Final

_STRING_MAP: Final[dict[str, Any]] = {"type": "object", "additionalProperties": {"type": "string"}}

_LABEL_SELECTOR: Final[dict[str, Any]] = {
    "type": "object",
    "x-kubernetes-map-type": "atomic",
    "properties": {
        "matchLabels": _STRING_MAP,
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "operator"],
                "properties": {
                    "key": {"type": "string"},
                    "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}

PROFILE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "properties": {
                "namespaceSelector": _LABEL_SELECTOR,
                "selector": _LABEL_SELECTOR,
                "probability": {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True,
                    "minimum": 0,
                    "maximum": 100,
                    "pattern": "^(100|[1-9]?[0-9])%?$",
                },
                "qosClass": {"type": "string", "enum": ["LSE", "LSR", "LS", "BE", "SYSTEM"]},
                "priorityClassName": {"type": "string"},
                "koordinatorPriority": {"type": "integer", "format": "int32"},
                "labels": _STRING_MAP,
                "annotations": _STRING_MAP,
                "labelKeysMapping": _STRING_MAP,
                "annotationKeysMapping": _STRING_MAP,
                "labelSuffixes": _STRING_MAP,
                "schedulerName": {"type": "string"},
                "patch": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object"},
    },
}
