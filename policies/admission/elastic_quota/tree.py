"""The ElasticQuota tree the quota webhooks judge against
(`pkg/webhook/elasticquota/quota_topology.go`).

Koordinator keeps it in memory, fed by an informer; colocate builds it once per cluster snapshot from
the ElasticQuotas (and the Pods, for the "bound pods" checks) of the state directory. The tree is
read-only: a request is judged against the state as given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policies.admission.plugin import Denied
from policies.admission.quota_index import claimed_namespaces
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.constants import (
    ANNOTATION_QUOTA_SHARED_WEIGHT,
    ELASTIC_QUOTA_KIND,
    LABEL_QUOTA_ALLOW_FORCE_UPDATE,
    LABEL_QUOTA_ALLOW_LENT_RESOURCE,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_IS_ROOT,
    LABEL_QUOTA_NAME,
    LABEL_QUOTA_PARENT,
    LABEL_QUOTA_TREE_ID,
    ROOT_QUOTA_NAME,
)
from policies.apis.objects import annotations_of, labels_of, name_of, namespace_of, spec_of
from policies.apis.quantity import Quantity, QuantityError

ResourceList = Mapping[str, Quantity]


def resource_list(raw: Any, where: str) -> dict[str, Quantity]:
    """Parse a ResourceList; a value that is not a quantity is a denial naming the field."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise Denied(f"{where}: Invalid value: must be a map of resource name to quantity")
    parsed = {}
    for name, value in raw.items():
        try:
            parsed[name] = Quantity.parse(value)
        except QuantityError as exc:
            raise Denied(f"{where}.{name}: Invalid value: {json.dumps(value)}: {exc}") from exc
    return parsed


def _lenient_resource_list(raw: Any) -> dict[str, Quantity]:
    """A stored quota's ResourceList; entries that do not parse are left out rather than failing the tree."""
    parsed = {}
    for name, value in raw.items() if isinstance(raw, Mapping) else ():
        try:
            parsed[name] = Quantity.parse(value)
        except QuantityError:
            continue
    return parsed


def parent_of(quota: Mapping[str, Any]) -> str:
    """The parent label, the root quota when unset; the root itself has no parent."""
    if name_of(quota) == ROOT_QUOTA_NAME:
        return ""
    return labels_of(quota).get(LABEL_QUOTA_PARENT) or ROOT_QUOTA_NAME


def allow_lent_resource(quota: Mapping[str, Any]) -> bool:
    """The allow-lent-resource label: anything but "false" (or no label) lends."""
    return labels_of(quota).get(LABEL_QUOTA_ALLOW_LENT_RESOURCE) != "false"


def shared_weight(quota: Mapping[str, Any], max_quota: Mapping[str, Quantity]) -> dict[str, Quantity]:
    """The shared-weight annotation; missing, unparsable or all zero means `spec.max`."""
    text = annotations_of(quota).get(ANNOTATION_QUOTA_SHARED_WEIGHT)
    try:
        weights = _lenient_resource_list(json.loads(text)) if text else {}
    except ValueError:
        weights = {}
    if not weights or all(w.is_zero() for w in weights.values()):
        return dict(max_quota)
    return weights


@dataclass(frozen=True)
class QuotaInfo:
    name: str
    parent: str
    is_parent: bool
    tree_id: str
    is_tree_root: bool
    allow_force_update: bool
    min: ResourceList
    max: ResourceList

    @classmethod
    def of(cls, quota: Mapping[str, Any], strict: bool = True) -> QuotaInfo:
        """The facts the checks read; `strict` refuses malformed quantities (a request's quota)."""
        labels, spec, name = labels_of(quota), spec_of(quota), name_of(quota)

        def parse(raw: Any, where: str) -> dict[str, Quantity]:
            return resource_list(raw, where) if strict else _lenient_resource_list(raw)

        return cls(
            name=name,
            parent=parent_of(quota),
            is_parent=labels.get(LABEL_QUOTA_IS_PARENT) == "true",
            tree_id=labels.get(LABEL_QUOTA_TREE_ID, ""),
            is_tree_root=labels.get(LABEL_QUOTA_IS_ROOT) == "true",
            allow_force_update=labels.get(LABEL_QUOTA_ALLOW_FORCE_UPDATE) == "true",
            min=parse(spec.get("min"), f"ElasticQuota {name}: spec.min"),
            max=parse(spec.get("max"), f"ElasticQuota {name}: spec.max"),
        )


@dataclass(frozen=True)
class QuotaTree:
    infos: Mapping[str, QuotaInfo] = field(default_factory=dict)
    children: Mapping[str, frozenset[str]] = field(default_factory=dict)
    namespace_owner: Mapping[str, str] = field(default_factory=dict)
    labelled_pods: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # quota -> pod names
    pod_namespaces: frozenset[str] = frozenset()

    @classmethod
    def build(cls, quotas: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]] = ()) -> QuotaTree:
        infos: dict[str, QuotaInfo] = {}
        children: dict[str, set[str]] = {ROOT_QUOTA_NAME: set()}
        owners: dict[str, str] = {}
        for quota in sorted(quotas, key=name_of):
            info = QuotaInfo.of(quota, strict=False)
            infos[info.name] = info
            children.setdefault(info.name, set())
            if info.parent:
                children.setdefault(info.parent, set()).add(info.name)
            for namespace in claimed_namespaces(quota):
                owners.setdefault(namespace, info.name)
        labelled: dict[str, list[str]] = {}
        namespaces = set()
        for pod in sorted(pods, key=lambda p: (namespace_of(p), name_of(p))):
            namespaces.add(namespace_of(pod))
            quota_name = labels_of(pod).get(LABEL_QUOTA_NAME)
            if quota_name:
                labelled.setdefault(quota_name, []).append(name_of(pod))
        return cls(
            infos,
            {k: frozenset(v) for k, v in children.items()},
            owners,
            {k: tuple(v) for k, v in labelled.items()},
            frozenset(namespaces),
        )

    def children_of(self, name: str) -> list[str]:
        return sorted(self.children.get(name, ()))

    def has_bound_pods(self, name: str, namespaces: Iterable[str]) -> bool:
        """Pods labelled with the quota, in a namespace named like it, or in one it claimed."""
        return (
            bool(self.labelled_pods.get(name))
            or name in self.pod_namespaces
            or any(ns in self.pod_namespaces for ns in namespaces)
        )


def quota_tree_of(snapshot: ClusterSnapshot) -> QuotaTree:
    """The snapshot's ElasticQuota tree (`quota_topology.go`), built on first use and kept with
    it."""
    return snapshot.derived("quota_tree", lambda s: QuotaTree.build(s.list(ELASTIC_QUOTA_KIND), s.list("Pod")))
