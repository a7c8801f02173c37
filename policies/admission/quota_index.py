"""The ElasticQuota facts pod admission needs, indexed once per cluster snapshot
(`pkg/webhook/elasticquota/pod_check.go`, `quota_topology.go`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policies.apis.constants import (
    ANNOTATION_QUOTA_NAMESPACES,
    DEFAULT_QUOTA_NAME,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_NAME,
)
from policies.apis.objects import annotations_of, labels_of, name_of, namespace_of


@dataclass(frozen=True)
class QuotaIndex:
    parents: frozenset[str] = frozenset()  # quota names with is-parent "true"
    names: frozenset[str] = frozenset()
    namespaced: frozenset[tuple[str, str]] = frozenset()  # (namespace, name) of every quota
    namespace_owner: Mapping[str, str] = field(default_factory=dict)  # from the namespaces annotation

    @classmethod
    def build(cls, quotas: Iterable[Mapping[str, Any]]) -> QuotaIndex:
        parents: set[str] = set()
        names: set[str] = set()
        namespaced: set[tuple[str, str]] = set()
        owners: dict[str, str] = {}
        for quota in sorted(quotas, key=name_of):
            name = name_of(quota)
            names.add(name)
            namespaced.add((namespace_of(quota), name))
            if labels_of(quota).get(LABEL_QUOTA_IS_PARENT) == "true":
                parents.add(name)
            for namespace in claimed_namespaces(quota):
                owners.setdefault(namespace, name)
        return cls(frozenset(parents), frozenset(names), frozenset(namespaced), owners)

    def quota_of_pod(self, pod: Mapping[str, Any], namespace: str) -> str:
        """The quota a pod is charged to; names outside the tree count as the default quota."""
        name = labels_of(pod).get(LABEL_QUOTA_NAME) or ""
        if not name:
            if (namespace, namespace) in self.namespaced:
                name = namespace
            else:
                name = self.namespace_owner.get(namespace, DEFAULT_QUOTA_NAME)
        return name if name in self.names else DEFAULT_QUOTA_NAME

    def is_parent(self, name: str) -> bool:
        return name in self.parents


def claimed_namespaces(quota: Mapping[str, Any] | None) -> list[str]:
    """The namespaces annotation (a JSON string array); unreadable text claims nothing."""
    text = annotations_of(quota).get(ANNOTATION_QUOTA_NAMESPACES) if quota else None
    if not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [ns for ns in value if isinstance(ns, str)] if isinstance(value, list) else []
