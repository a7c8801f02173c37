"""`/mutate-reservation` (`pkg/webhook/reservation/mutating/`): ClusterColocationProfiles applied to
a Reservation on CREATE.

Same machinery as pods, with Koordinator's differences: namespaceSelectors are ignored (reservations
are cluster-scoped), scheduling fields go to `spec.template.spec` and only when a template exists, and
there is no resource rewrite, extended-resource-spec or device step. `/validate-reservation` has no
Koordinator counterpart and no plugins: it admits every well-formed request.
"""

from __future__ import annotations

from typing import Any, Final

from policies.admission.plugin import CREATE, AdmissionContext, MutatingPlugin, ValidatingPlugin
from policies.admission.profile_apply import PROFILE_READS, apply_profiles_in_place, enforced_profiles
from policies.admission.warn_only import WarnOnlyProfilesPlugin
from policies.apis.objects import json_copy, labels_of
from policies.apis.strategic_merge import RESERVATION_SCHEMA

#: The fields of a Reservation and of its `spec` (Koordinator's `ReservationSpec`, as our CRD schema
#: `manifests/crds/reservations.yaml` types them). A profile's patch is merged into the Reservation
#: itself (`doMutateByColocationProfile`), and Koordinator then decodes it into the typed object,
#: which drops any other field; the API server's structural pruning would drop it too. So a pod
#: field such as `spec.terminationGracePeriodSeconds` is dropped here, and `apply --explain` says so.
RESERVATION_FIELDS: Final = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
RESERVATION_SPEC_FIELDS: Final = frozenset(
    {
        "template",
        "owners",
        "ttl",
        "expires",
        "preAllocation",
        "allocateOnce",
        "allocatePolicy",
        "unschedulable",
        "taints",
    }
)


def decode_reservation(reservation: dict[str, Any]) -> list[str]:
    """Drop what a Reservation does not have, in place; the dropped fields' paths."""
    dropped = [key for key in reservation if key not in RESERVATION_FIELDS]
    for key in dropped:
        del reservation[key]
    spec = reservation.get("spec")
    if isinstance(spec, dict):
        unknown = [key for key in spec if key not in RESERVATION_SPEC_FIELDS]
        for key in unknown:
            del spec[key]
        dropped += [f"spec.{key}" for key in unknown]
    return dropped


def template_pod_spec(reservation: dict[str, Any]) -> dict[str, Any] | None:
    """`spec.template.spec` (created under an existing template), or None without a template."""
    spec = reservation.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    if not isinstance(template, dict):
        return None
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        pod_spec = template["spec"] = {}
    return pod_spec


class ClusterReservationPlugin:
    name = "ClusterReservation"
    operations = frozenset({CREATE})
    reads = PROFILE_READS  # no Namespace: a Reservation's profiles ignore namespaceSelector
    explains_itself = True

    def mutate(self, obj: dict[str, Any], ctx: AdmissionContext) -> None:
        if ctx.request.operation not in self.operations or not ctx.cluster.profiles:
            return
        matched = enforced_profiles(ctx.cluster.profile_index.matching(labels_of(obj), None), ctx)
        if not matched:
            return
        # no resource rewrite; a patch's fields a Reservation does not have are dropped
        apply_profiles_in_place(obj, matched, ctx, template_pod_spec, RESERVATION_SCHEMA, decode=decode_reservation)


def reservation_mutating_plugins() -> list[MutatingPlugin]:
    profiles: list[MutatingPlugin] = [ClusterReservationPlugin()]
    return [*profiles, WarnOnlyProfilesPlugin(profiles, json_copy, [])]


def reservation_validating_plugins() -> list[ValidatingPlugin]:
    return []
