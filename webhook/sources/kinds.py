"""The one table of object kinds the handlers read, and which routes read each (spec 15).

Live mode lists and watches exactly the kinds the registered routes need: a route's `object_type`
picks its rows here, so a new route family only adds its reads to this table, and the RBAC
manifest is checked against it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from policies.constants import PROFILE_KIND
from webhook.registry import Registry

SLO_CONFIG_NAMESPACE: Final = "koordinator-system"
SLO_CONFIG_NAME: Final = "slo-controller-config"


@dataclass(frozen=True)
class WatchedKind:
    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool
    read_by: frozenset[str]  # Route.object_type values whose handlers read this kind
    namespace: str = ""  # watch one namespace only
    field_selector: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection_path(self) -> str:
        """The REST path that lists and watches this kind (one namespace when `namespace` is set)."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        scope = f"/namespaces/{self.namespace}" if self.namespace else ""
        return f"{prefix}{scope}/{self.plural}"


WATCHED_KINDS: Final = (
    WatchedKind(PROFILE_KIND, "config.koordinator.sh", "v1alpha1", "clustercolocationprofiles", False,
                frozenset({"pod", "reservation"})),
    WatchedKind("Namespace", "", "v1", "namespaces", False, frozenset({"pod"})),
    WatchedKind("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False, frozenset({"pod", "reservation"})),
    WatchedKind("ElasticQuota", "scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas", True,
                frozenset({"pod", "elasticquota"})),
    WatchedKind("ConfigMap", "", "v1", "configmaps", True, frozenset({"node", "configmap"}),
                namespace=SLO_CONFIG_NAMESPACE, field_selector=f"metadata.name={SLO_CONFIG_NAME}"),
    WatchedKind("Node", "", "v1", "nodes", False, frozenset({"configmap"})),
    WatchedKind("Pod", "", "v1", "pods", True, frozenset({"elasticquota"})),
)


def watched_kinds(registry: Registry) -> tuple[WatchedKind, ...]:
    """The kinds the routes of `registry` read, in table order."""
    object_types = {route.object_type for route in registry.routes}
    return tuple(k for k in WATCHED_KINDS if k.read_by & object_types)
