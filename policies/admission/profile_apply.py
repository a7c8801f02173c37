"""Applying matched ClusterColocationProfiles to an object
(`pkg/webhook/pod/mutating/cluster_colocation_profile.go`,
`pkg/webhook/reservation/mutating/cluster_colocation_profile.go`).

Shared by pods and reservations: the metadata steps act on the object itself, the scheduling steps
(schedulerName, priority) on the pod spec the caller points at, and the strategic merge patch on the
whole object with the caller's patch schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from policies.admission.plugin import AdmissionContext, Denied, Read
from policies.admission.profiles import ColocationProfile
from policies.apis.constants import LABEL_KOORDINATOR_PRIORITY, LABEL_QOS_CLASS, PROFILE_KIND
from policies.apis.objects import ensure_map, json_copy, labels_of
from policies.apis.shape import node_count_error
from policies.apis.strategic_merge import Schema, StrategicMergeError, strategic_merge

#: what an object must still be after a profile's patch: None, or `field: why`
StructureCheck = Callable[[Mapping[str, Any]], "str | None"]
#: what decoding the patched object into its kind's type keeps: drops the fields the kind does not
#: have, in place, and returns their paths (Koordinator's `json.Unmarshal` into the typed object)
Decode = Callable[[dict[str, Any]], "list[str]"]

PodSpecLocator = Callable[[dict[str, Any]], dict[str, Any] | None]

#: What applying profiles reads: the profiles, and the PriorityClass a profile names.
PROFILE_READS: Final = frozenset({Read(PROFILE_KIND), Read("PriorityClass")})


def priority_class_not_found(name: str) -> Denied:
    """The error text the Kubernetes client returns for a missing PriorityClass; Koordinator answers 500."""
    return Denied(f'priorityclasses.scheduling.k8s.io "{name}" not found', code=500)


def passes_probability(profile: ColocationProfile, rand_int: Callable[[int], int]) -> bool:
    """`shouldSkipProfile`: 0 never applies, 100 (or unset) always does, else skip when r >
    percent."""
    percent = profile.probability
    if percent is None or percent == 100:
        return True
    if percent == 0:
        return False
    return rand_int(100) <= percent


def enforced_profiles(matched: Sequence[ColocationProfile], ctx: AdmissionContext) -> list[ColocationProfile]:
    """The matched profiles to apply: all but the warn-only ones, which are noted in the context for
    the WarnOnlyProfiles plugin (an audit, and that plugin's what-if runs, apply them too)."""
    if ctx.audit:
        return list(matched)
    applied = []
    for profile in matched:
        if profile.warn_only and profile.name not in ctx.also_enforce:
            ctx.warn_only_matched.append(profile.name)
        else:
            applied.append(profile)
    return applied


def apply_profiles_in_place(
    obj: dict[str, Any],
    profiles: Sequence[ColocationProfile],
    ctx: AdmissionContext,
    pod_spec: PodSpecLocator,
    schema: Schema,
    structure: StructureCheck | None = None,
    decode: Decode | None = None,
) -> bool:
    """Apply `profiles` in order, leaving the result in `obj` (the runner diffs that dict).

    Returns whether a matched profile asked to skip the batch/mid resource rewrite; that holds even
    when the profile itself is skipped by its probability: Koordinator's
    `clusterColocationProfileMutatingPod` reads `ShouldSkipUpdateResource` before
    `shouldSkipProfile`.
    """
    skip_resource_rewrite = False
    explaining = ctx.explaining
    for profile in profiles:
        ctx.matched_profiles.append(profile.name)
        if profile.skip_update_resources:
            skip_resource_rewrite = True
        applied = passes_probability(profile, ctx.rand_int)
        before = json_copy(obj) if explaining else None
        if applied:
            mutated = apply_profile(obj, profile, ctx, pod_spec, schema, structure, decode)
            if mutated is not obj:  # a strategic merge patch produced a new document
                obj.clear()
                obj.update(mutated)
        if explaining:
            ctx.record(f"profile/{profile.name}", applied, before, obj)
    return skip_resource_rewrite


def apply_profile(
    obj: dict[str, Any],
    profile: ColocationProfile,
    ctx: AdmissionContext,
    pod_spec: PodSpecLocator,
    schema: Schema,
    structure: StructureCheck | None = None,
    decode: Decode | None = None,
) -> dict[str, Any]:
    """One profile, in Koordinator's exact order (`doMutateByColocationProfile`); returns the object
    (replaced by a patch). `structure`: what the patched object must still be (a Pod's containers,
    names); a patch that breaks it is refused with the profile's name and the field, never admitted."""
    metadata = ensure_map(obj, "metadata")
    if profile.labels:
        _update(ensure_map(metadata, "labels"), profile.labels)
    if profile.annotations:
        _update(ensure_map(metadata, "annotations"), profile.annotations)
    if profile.label_keys_mapping:
        _map_keys(metadata, "labels", profile.label_keys_mapping)
    if profile.annotation_keys_mapping:
        _map_keys(metadata, "annotations", profile.annotation_keys_mapping)
    if profile.label_suffixes and isinstance(metadata.get("labels"), dict):
        labels = metadata["labels"]
        arrived_with = labels_of(ctx.request.object or {}) if ctx.audit else {}
        for key, suffix in profile.label_suffixes.items():
            if key in labels and not _suffixed_before(labels[key], suffix, arrived_with.get(key)):
                labels[key] = f"{labels[key]}{suffix}"
    spec = pod_spec(obj) if profile.scheduler_name or profile.priority_class_name else None
    if profile.scheduler_name and spec is not None:
        spec["schedulerName"] = profile.scheduler_name
    if profile.qos_class:
        ensure_map(metadata, "labels")[LABEL_QOS_CLASS] = profile.qos_class
    if profile.priority_class_name and spec is not None:
        _set_priority_class(spec, profile.priority_class_name, ctx)
    if profile.koordinator_priority is not None:
        ensure_map(metadata, "labels")[LABEL_KOORDINATOR_PRIORITY] = str(profile.koordinator_priority)
    if profile.patch is not None:
        too_big = node_count_error(obj, "object")  # before the merge, which walks every value
        if too_big:
            raise Denied(f"ClusterColocationProfile {profile.name}: spec.patch not applied: {too_big}", code=400)
        try:
            patched = strategic_merge(obj, profile.patch, schema)
        except StrategicMergeError as exc:
            raise Denied(f"ClusterColocationProfile {profile.name}: spec.patch: {exc}", code=500) from exc
        broken = structure(patched) if structure is not None else None
        if broken:
            arrived_broken = structure(obj) if structure is not None else None
            if arrived_broken:  # the request's fault, not the profile's: a malformed object is a 400
                raise Denied(f"object: {arrived_broken}", code=400)
            message = f"ClusterColocationProfile {profile.name}: spec.patch makes an invalid object: {broken}"
            raise Denied(message, code=500)
        for dropped in decode(patched) if decode is not None else ():
            ctx.note(f"spec.patch sets {dropped}, which the kind does not have: dropped (not stored)")
        return patched
    return obj


def _update(values: dict[str, Any], entries: Mapping[str, str]) -> None:
    """`values.update(entries)`. A profile keeps its maps as read-only proxies, which `dict.update`
    reads key by key through the mapping protocol; the dict a proxy wraps (its `copy()`) is merged
    in C, with the same entries in the same order, several times faster."""
    values.update(entries.copy() if type(entries) is MappingProxyType else entries)


def _suffixed_before(value: str, suffix: str, arrived_with: str | None) -> bool:
    """In an audit: the label still holds the value the pod came with, and that ends with the
    suffix, so the suffix was appended when the pod was admitted (Koordinator's `labelSuffixes`
    append again)."""
    return value == arrived_with and value.endswith(suffix)


def _map_keys(metadata: dict[str, Any], section: str, mapping: Mapping[str, str]) -> None:
    """`section[new] = section[old]`, "" when old is absent (the key is created either way)."""
    values = ensure_map(metadata, section)
    for old, new in mapping.items():
        values[new] = values.get(old, "")


def _set_priority_class(spec: dict[str, Any], name: str, ctx: AdmissionContext) -> None:
    priority_class = ctx.cluster.priority_class(name)
    if priority_class is None:
        raise priority_class_not_found(name)
    spec["priorityClassName"] = name
    spec["priority"] = priority_class.get("value", 0)
    policy = priority_class.get("preemptionPolicy")
    if policy:
        spec["preemptionPolicy"] = policy
    else:
        spec.pop("preemptionPolicy", None)
