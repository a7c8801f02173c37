"""`/mutate-pod`: the pod mutating plugins, in Koordinator's order
(`pkg/webhook/pod/mutating/mutating_handler.go`).

CREATE only; UPDATE, DELETE and CONNECT are admitted untouched, even for pods that opted into the
UPDATE registration with `pod.koordinator.sh/mutating-update`.
"""

from __future__ import annotations

from typing import Any

from policies.admission.plugin import CREATE, AdmissionContext, MutatingPlugin, Read
from policies.admission.pod_mutation.device_resources import normalise_device_resources
from policies.admission.pod_mutation.extended_resource_spec import set_extended_resource_spec
from policies.admission.pod_mutation.resource_rewrite import rewrite_pod_resources
from policies.admission.pod_validation import pod_validating_plugins
from policies.admission.profile_apply import PROFILE_READS, apply_profiles_in_place, enforced_profiles
from policies.admission.warn_only import WarnOnlyProfilesPlugin
from policies.apis.objects import copy_pod_for_mutation, json_copy, labels_of, namespace_of
from policies.apis.shape import pod_structure_error
from policies.apis.strategic_merge import POD_SCHEMA


def _pod_spec(pod: dict[str, Any]) -> dict[str, Any]:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        spec = pod["spec"] = {}
    return spec


class ClusterColocationProfilePlugin:
    """Matched profiles in name order, then the batch/mid resource rewrite once
    (`pkg/webhook/pod/mutating/cluster_colocation_profile.go`)."""

    name = "ClusterColocationProfile"
    operations = frozenset({CREATE})
    reads = PROFILE_READS | {Read("Namespace")}  # namespaces for the profiles' namespaceSelectors
    explains_itself = True

    def mutate(self, obj: dict[str, Any], ctx: AdmissionContext) -> None:
        if ctx.request.operation not in self.operations or not ctx.cluster.profiles:
            return
        namespace = namespace_of(obj) or ctx.request.namespace
        matched = ctx.cluster.profile_index.matching(labels_of(obj), lambda: ctx.cluster.namespace_labels(namespace))
        matched = enforced_profiles(matched, ctx)
        if not matched:
            return
        if not apply_profiles_in_place(obj, matched, ctx, _pod_spec, POD_SCHEMA, pod_structure_error):
            before = json_copy(obj) if ctx.explaining else None
            rewrite_pod_resources(obj)
            ctx.record("batch/mid resource rewrite", True, before, obj)


class ExtendedResourceSpecPlugin:
    name = "ExtendedResourceSpec"
    operations = frozenset({CREATE})
    reads: frozenset[Read] = frozenset()
    explains_itself = False

    def mutate(self, obj: dict[str, Any], ctx: AdmissionContext) -> None:
        if ctx.request.operation in self.operations:
            set_extended_resource_spec(obj)


class DeviceResourceSpecPlugin:
    name = "DeviceResourceSpec"
    operations = frozenset({CREATE})
    reads: frozenset[Read] = frozenset()
    explains_itself = False

    def mutate(self, obj: dict[str, Any], ctx: AdmissionContext) -> None:
        if ctx.request.operation in self.operations:
            normalise_device_resources(obj)


def pod_mutating_plugins() -> list[MutatingPlugin]:
    """The `/mutate-pod` plugin list, run in this order in one loop; the last one only reports what
    the warn-only profiles would have done, by running the others again with each one enforced and
    validating the result as `/validate-pod` would."""
    plugins: list[MutatingPlugin] = [
        ClusterColocationProfilePlugin(),
        ExtendedResourceSpecPlugin(),
        DeviceResourceSpecPlugin(),
    ]
    return [*plugins, WarnOnlyProfilesPlugin(plugins, copy_pod_for_mutation, pod_validating_plugins())]
