"""ClusterColocationProfile (`config.koordinator.sh/v1alpha1`), parsed once into a frozen model.

A profile that does not fit the schema is refused with its name and every wrong field, and only that
profile is dropped: the others keep working. Selectors that are well-typed but invalid are kept
(see `policies.apis.selectors`), because Koordinator treats them as matching.

`strict` is for profiles that no API server has checked (files, in `apply` and embedded `serve`):
they are also held to the CRD's structural schema (`policies.admission.profile_schema`), so a field the CRD
does not know (`qosclass:`), a value outside an enum (`operator: Equals`) or a wrong type is refused
here as `kubectl apply` would refuse it, instead of being dropped or matching every pod. Profiles
listed from an API server passed whichever CRD is installed there (Koordinator's own has no enum on
selector operators) and keep Koordinator's behaviour.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from policies.admission.patch_risks import sensitive_fields
from policies.admission.profile_schema import PROFILE_SCHEMA
from policies.apis.constants import (
    ANNOTATION_ENFORCEMENT,
    ANNOTATION_SENSITIVE_PATCH,
    ANNOTATION_SKIP_UPDATE_RESOURCES,
    ENFORCEMENT_MODES,
    ENFORCEMENT_WARN,
    KNOWN_QOS_CLASSES,
    PROFILE_KIND,
    SENSITIVE_PATCH_ALLOW,
)
from policies.apis.field_errors import ConfigError, FieldError, invalid, required, unsupported
from policies.apis.objects import metadata_of
from policies.apis.selectors import InvalidSelector, LabelSelector, SelectorShapeError, compile_selector
from policies.apis.shape import pod_structure_error
from policies.apis.strategic_merge import POD_SCHEMA, StrategicMergeError, strategic_merge
from policies.apis.structural import validate

_PERCENT_RE: Final = re.compile(r"^(-?\d+)%$")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_EMPTY: Final[Mapping[str, str]] = MappingProxyType({})


def _no_entries() -> Mapping[str, str]:
    return _EMPTY


class ProfileError(ConfigError):
    """A ClusterColocationProfile that cannot be used; the message names the profile and every wrong
    field."""

    def __init__(self, name: str, errors: list[FieldError]) -> None:
        self.name = name
        self.errors = tuple(errors)
        ValueError.__init__(
            self, f"ClusterColocationProfile {name!r} is invalid, not used: " + "; ".join(map(str, errors))
        )


@dataclass(frozen=True, slots=True)
class ColocationProfile:
    name: str
    namespace_selector: LabelSelector | InvalidSelector = LabelSelector()
    selector: LabelSelector | InvalidSelector = LabelSelector()
    probability: int | None = None
    qos_class: str = ""
    priority_class_name: str = ""
    koordinator_priority: int | None = None
    labels: Mapping[str, str] = field(default_factory=_no_entries)
    annotations: Mapping[str, str] = field(default_factory=_no_entries)
    label_keys_mapping: Mapping[str, str] = field(default_factory=_no_entries)
    annotation_keys_mapping: Mapping[str, str] = field(default_factory=_no_entries)
    label_suffixes: Mapping[str, str] = field(default_factory=_no_entries)
    scheduler_name: str = ""
    patch: Mapping[str, Any] | None = None
    skip_update_resources: bool = False
    warnings: tuple[str, ...] = field(default=(), compare=False)
    #: `colocate.io/enforcement: warn`: evaluated, reported in warnings and audits, never applied
    warn_only: bool = False


def _string_map(spec: Mapping[str, Any], key: str, problems: list[FieldError]) -> Mapping[str, str]:
    raw = spec.get(key)
    if raw is None:
        return _EMPTY
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        problems.append(invalid(f"spec.{key}", detail="must map strings to strings"))
        return _EMPTY
    return MappingProxyType(dict(raw))


def _string(spec: Mapping[str, Any], key: str, problems: list[FieldError]) -> str:
    raw = spec.get(key)
    if raw is None:
        return ""
    if not isinstance(raw, str):
        problems.append(invalid(f"spec.{key}", raw, "must be a string"))
        return ""
    return raw


def parse_probability(raw: Any) -> int:
    """Percent from an int-or-string (`50` or `"50%"`), floored like `GetScaledValueFromIntOrPercent`."""
    if isinstance(raw, bool):
        raise ValueError("must be an integer or a percentage string")
    if isinstance(raw, int):
        value = raw
    elif isinstance(raw, str) and (match := _PERCENT_RE.match(raw)):
        value = int(match.group(1))
    else:
        raise ValueError('must be an integer or a percentage string such as "50%"')
    if not 0 <= value <= 100:
        raise ValueError("must be 0..100")
    return value


def _selector(
    spec: Mapping[str, Any], key: str, problems: list[FieldError], warnings: list[str]
) -> LabelSelector | InvalidSelector:
    try:
        compiled = compile_selector(spec.get(key), f"spec.{key}")
    except SelectorShapeError as exc:
        problems.extend(exc.errors)
        return LabelSelector()
    if isinstance(compiled, InvalidSelector):
        warnings.append(f"{compiled.error} (Koordinator treats an unparseable selector as matching)")
    return compiled


def _covered(path: str, reported: list[FieldError]) -> bool:
    return any(path == e.path or path.startswith((e.path + ".", e.path + "[")) for e in reported)


def _probe_pod() -> dict[str, Any]:
    """A pod every sound patch leaves a pod: what `patch_structure_error` patches (a fresh copy)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "colocate-load-check", "namespace": "default"},
        "spec": {"containers": [{"name": "colocate-load-check", "image": "colocate-load-check"}]},
    }


def patch_structure_error(patch: Mapping[str, Any]) -> str | None:
    """`field: why` when `patch` turns a sound pod into something that is not a Pod (no spec, no
    containers, a container without a name); a profile with such a patch is refused when it loads.
    A patch that fails to merge is left to admission, where the pod it meets decides."""
    try:
        patched = strategic_merge(_probe_pod(), patch, POD_SCHEMA)
    except StrategicMergeError:
        return None
    return pod_structure_error(patched)


def parse_profile(obj: Mapping[str, Any], *, strict: bool = False, refuse_sensitive: bool = False) -> ColocationProfile:
    """Validate and freeze one ClusterColocationProfile object; `strict` adds the CRD's schema;
    `refuse_sensitive` refuses a patch of security-sensitive fields unless the profile is annotated
    `colocate.io/sensitive-patch: allow`."""
    metadata = metadata_of(obj)
    name = metadata.get("name")
    problems: list[FieldError] = []
    warnings: list[str] = []
    if obj.get("kind", PROFILE_KIND) != PROFILE_KIND:
        problems.append(invalid("kind", obj.get("kind"), f"expected {PROFILE_KIND}"))
    if not isinstance(name, str) or not name:
        problems.append(required("metadata.name"))
        name = str(name or "")
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise ProfileError(name, [*problems, invalid("spec", detail="must be an object")])

    probability = _probability(spec, problems)
    qos_class = _string(spec, "qosClass", problems)
    if qos_class and qos_class not in KNOWN_QOS_CLASSES:
        problems.append(unsupported("spec.qosClass", qos_class, sorted(KNOWN_QOS_CLASSES)))
    koordinator_priority = _koordinator_priority(spec, problems)
    patch = _patch(spec, metadata, refuse_sensitive, problems)
    enforcement = (metadata.get("annotations") or {}).get(ANNOTATION_ENFORCEMENT, ENFORCEMENT_MODES[0])
    if enforcement not in ENFORCEMENT_MODES:
        problems.append(unsupported(f"metadata.annotations[{ANNOTATION_ENFORCEMENT}]", enforcement, ENFORCEMENT_MODES))

    profile = ColocationProfile(
        name=name,
        namespace_selector=_selector(spec, "namespaceSelector", problems, warnings),
        selector=_selector(spec, "selector", problems, warnings),
        probability=probability,
        qos_class=qos_class,
        priority_class_name=_string(spec, "priorityClassName", problems),
        koordinator_priority=koordinator_priority,
        labels=_string_map(spec, "labels", problems),
        annotations=_string_map(spec, "annotations", problems),
        label_keys_mapping=_string_map(spec, "labelKeysMapping", problems),
        annotation_keys_mapping=_string_map(spec, "annotationKeysMapping", problems),
        label_suffixes=_string_map(spec, "labelSuffixes", problems),
        scheduler_name=_string(spec, "schedulerName", problems),
        patch=patch,
        skip_update_resources=ANNOTATION_SKIP_UPDATE_RESOURCES in (metadata.get("annotations") or {}),
        warnings=tuple(warnings),
        warn_only=enforcement == ENFORCEMENT_WARN,
    )
    if strict:  # what the schema adds to the checks above, each field reported once
        problems.extend(e for e in validate(obj, PROFILE_SCHEMA) if not _covered(e.path, problems))
    if problems:
        raise ProfileError(name, problems)
    return profile


def _probability(spec: Mapping[str, Any], problems: list[FieldError]) -> int | None:
    """`spec.probability` parsed, or None (absent, or refused into `problems`)."""
    if spec.get("probability") is None:
        return None
    try:
        return parse_probability(spec["probability"])
    except ValueError as exc:
        problems.append(invalid("spec.probability", spec["probability"], str(exc)))
        return None


def _koordinator_priority(spec: Mapping[str, Any], problems: list[FieldError]) -> int | None:
    """`spec.koordinatorPriority`, a 32-bit integer, or None (absent, or refused into `problems`)."""
    value = spec.get("koordinatorPriority")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not _INT32_MIN <= value <= _INT32_MAX:
        problems.append(invalid("spec.koordinatorPriority", value, "must be a 32-bit integer"))
        return None
    return value


def _patch(
    spec: Mapping[str, Any], metadata: Mapping[str, Any], refuse_sensitive: bool, problems: list[FieldError]
) -> Mapping[str, Any] | None:
    """`spec.patch`, checked: an object that makes a valid pod, and with `refuse_sensitive` one that
    patches no security-sensitive field unless the profile is annotated as reviewed."""
    patch = spec.get("patch")
    if patch is not None and not isinstance(patch, Mapping):
        problems.append(invalid("spec.patch", detail="must be an object (a strategic merge patch)"))
        patch = None
    broken = patch_structure_error(patch) if patch is not None else None
    if broken:
        problems.append(invalid("spec.patch", detail=f"makes an invalid pod: {broken}"))
    sensitive = sensitive_fields(patch)
    allowed = (metadata.get("annotations") or {}).get(ANNOTATION_SENSITIVE_PATCH)
    if allowed is not None and allowed != SENSITIVE_PATCH_ALLOW:
        problems.append(
            unsupported(f"metadata.annotations[{ANNOTATION_SENSITIVE_PATCH}]", allowed, [SENSITIVE_PATCH_ALLOW])
        )
    elif refuse_sensitive and sensitive and allowed != SENSITIVE_PATCH_ALLOW:
        problems.append(
            invalid(
                "spec.patch",
                detail=f"changes security-sensitive fields ({', '.join(sensitive)}): refused by "
                f"--refuse-sensitive-patches (annotate the profile {ANNOTATION_SENSITIVE_PATCH}: "
                f"{SENSITIVE_PATCH_ALLOW} once reviewed)",
            )
        )
    return patch
