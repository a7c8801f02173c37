"""`/validate-pod`: the pod validating plugins in Koordinator's order
(`pkg/webhook/pod/validating/`).

The first plugin that refuses ends the request with its message (code 400). Gated validators that
Koordinator keeps off by default (quota admission, device resources, enhanced validator) are not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.admission.plugin import CREATE, UPDATE, AdmissionContext, Denied, Read, ValidatingPlugin
from policies.admission.pod_validation.colocation import colocation_errors
from policies.apis.constants import ANNOTATION_RESERVE_POD, ELASTIC_QUOTA_KIND, LABEL_QUOTA_PREEMPTIBLE
from policies.apis.field_errors import aggregate, forbidden
from policies.apis.objects import annotations_of, labels_of, name_of, namespace_of


class ReservePodPlugin:
    """Users may not set the internal reservation-pod marker
    (`pkg/webhook/pod/validating/verify_annotations.go`)."""

    name = "ReservePod"
    operations = frozenset({CREATE, UPDATE})
    reads: frozenset[Read] = frozenset()

    def validate(self, obj: Mapping[str, Any], ctx: AdmissionContext) -> None:
        if ctx.request.operation in self.operations and ANNOTATION_RESERVE_POD in annotations_of(obj):
            raise Denied(str(forbidden(f"annotations.{ANNOTATION_RESERVE_POD}", "cannot set in annotations")))


class ColocationRulesPlugin:
    """QoS and priority immutability, QoS x priority compatibility, batch resources, LSR CPUs (7.2)."""

    name = "ClusterColocationProfile"
    operations = frozenset({CREATE, UPDATE})
    reads: frozenset[Read] = frozenset()

    def validate(self, obj: Mapping[str, Any], ctx: AdmissionContext) -> None:
        if ctx.request.operation not in self.operations:
            return
        old = ctx.request.old_object if ctx.request.operation == UPDATE else None
        errors = colocation_errors(obj, old)
        if errors:
            raise Denied(aggregate(errors))


class ElasticQuotaPodPlugin:
    """Pods may not be charged to a parent quota; the preemptible label is immutable (7.3)."""

    name = "QuotaMetaChecker"
    operations = frozenset({CREATE, UPDATE})
    reads = frozenset({Read(ELASTIC_QUOTA_KIND)})

    def validate(self, obj: Mapping[str, Any], ctx: AdmissionContext) -> None:
        operation = ctx.request.operation
        if operation not in self.operations:
            return
        old = ctx.request.old_object
        if operation == UPDATE and old is not None:
            if labels_of(old).get(LABEL_QUOTA_PREEMPTIBLE) != labels_of(obj).get(LABEL_QUOTA_PREEMPTIBLE):
                raise Denied("Preemptible label is forbidden modify now.")
        quota = ctx.cluster.quotas.quota_of_pod(obj, namespace_of(obj) or ctx.request.namespace)
        if ctx.cluster.quotas.is_parent(quota):
            raise Denied(f"pod can not be linked to a parentQuotaGroup,quota:{quota}, pod:{name_of(obj)}")


def pod_validating_plugins() -> list[ValidatingPlugin]:
    """The `/validate-pod` plugin list, run in this order in one loop."""
    return [ReservePodPlugin(), ColocationRulesPlugin(), ElasticQuotaPodPlugin()]
