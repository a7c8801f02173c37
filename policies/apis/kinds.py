"""The one table of Kubernetes kinds colocate reads or writes: group, version, plural, scope.

Every component that names an API resource (the reflectors, the webhook routes, the RBAC checks,
the API-server stand-in of the tests) looks it up here, so a group or a plural is spelled once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from policies.apis.constants import (
    DEVICE_KIND,
    ELASTIC_QUOTA_GROUP,
    ELASTIC_QUOTA_KIND,
    NODE_RESOURCE_TOPOLOGY_KIND,
    POD_GROUP_GROUP,
    POD_GROUP_KIND,
    POD_MIGRATION_JOB_KIND,
    PROFILE_GROUP,
    PROFILE_KIND,
    PROFILE_VERSION,
    RESERVATION_GROUP,
    RESERVATION_KIND,
)


@dataclass(frozen=True, slots=True)
class Kind:
    """One API resource: `Kind("Pod", "", "v1", "pods", namespaced=True)`."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection_path(self, namespace: str = "") -> str:
        """The REST path that lists and watches this kind (in one namespace when given)."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        scope = f"/namespaces/{namespace}" if namespace else ""
        return f"{prefix}{scope}/{self.plural}"


NODE_METRIC_KIND: Final = "NodeMetric"
NODE_SLO_KIND: Final = "NodeSLO"
POLICY_REPORT_KIND: Final = "PolicyReport"

_ALL: Final = (
    Kind(PROFILE_KIND, PROFILE_GROUP, PROFILE_VERSION, "clustercolocationprofiles", False),
    Kind("Namespace", "", "v1", "namespaces", False),
    Kind("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False),
    Kind(ELASTIC_QUOTA_KIND, ELASTIC_QUOTA_GROUP, "v1alpha1", "elasticquotas", True),
    Kind("ConfigMap", "", "v1", "configmaps", True),
    Kind("Node", "", "v1", "nodes", False),
    Kind("Pod", "", "v1", "pods", True),
    Kind(NODE_METRIC_KIND, "slo.koordinator.sh", "v1alpha1", "nodemetrics", False),
    Kind(RESERVATION_KIND, RESERVATION_GROUP, "v1alpha1", "reservations", False),
    Kind(POD_GROUP_KIND, POD_GROUP_GROUP, "v1alpha1", "podgroups", True),
    Kind(POD_MIGRATION_JOB_KIND, RESERVATION_GROUP, "v1alpha1", "podmigrationjobs", False),
    Kind("Secret", "", "v1", "secrets", True),
    Kind("Service", "", "v1", "services", True),
    Kind("Lease", "coordination.k8s.io", "v1", "leases", True),
    Kind("MutatingWebhookConfiguration", "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", False),
    Kind(
        "ValidatingWebhookConfiguration", "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", False
    ),
    Kind("CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions", False),
    Kind("Event", "", "v1", "events", True),
    Kind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True),
    Kind(NODE_SLO_KIND, "slo.koordinator.sh", "v1alpha1", "nodeslos", False),
    Kind(DEVICE_KIND, RESERVATION_GROUP, "v1alpha1", "devices", False),
    Kind(NODE_RESOURCE_TOPOLOGY_KIND, "topology.node.k8s.io", "v1alpha1", "noderesourcetopologies", False),
    Kind(POLICY_REPORT_KIND, "wgpolicyk8s.io", "v1alpha2", "policyreports", True),
)

#: Every kind by its name.
KINDS: Final[Mapping[str, Kind]] = MappingProxyType({k.kind: k for k in _ALL})


def kind_named(name: str) -> Kind:
    """The table row of kind `name`; a KeyError names a kind nobody declared."""
    return KINDS[name]
