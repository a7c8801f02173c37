"""Field rules of the slo-controller-config strategies (Koordinator's `validate:` struct tags).

Koordinator validates each decoded strategy with go-playground/validator: every field carrying a tag
is checked, every failing field is reported (the first failing rule per field), and a pair of fields
tied by `gtfield`/`ltfield` fails when the other one is missing. The table below is those tags, keyed
by JSON field name so that the messages name what the user wrote.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union

from policies.apis.shape import MAX_DEPTH, depth_error


@dataclass(frozen=True, slots=True)
class Rule:
    """One numeric field: `min`/`max` inclusive, `gt` exclusive, and an ordering against a sibling."""

    integer: bool = True
    min: float | None = None
    max: float | None = None
    gt: float | None = None
    greater_than_field: str = ""
    less_than_field: str = ""


Schema = Mapping[str, Union[Rule, "Schema"]]


def percent(**extra: Any) -> Rule:
    return Rule(min=0, max=100, **extra)


COLOCATION_STRATEGY: Schema = {
    "metricAggregateDurationSeconds": Rule(min=1),
    "metricReportIntervalSeconds": Rule(min=1),
    # at most all of the capacity (Koordinator sets no maximum; above 100 the safety margin turns
    # negative and the batch resources exceed the node: docs/koordinator.md)
    "cpuReclaimThresholdPercent": percent(),
    "memoryReclaimThresholdPercent": percent(),
    "degradeTimeMinutes": Rule(min=1),
    "updateTimeThresholdSeconds": Rule(min=1),
    "resourceDiffThreshold": Rule(integer=False, gt=0, max=1),
    "midCPUThresholdPercent": percent(),
    "midMemoryThresholdPercent": percent(),
    "midUnallocatedPercent": percent(),
    "midStaticCPUReservedPercent": percent(),
    "midStaticMemoryReservedPercent": percent(),
    "batchCPUThresholdPercent": Rule(min=0),
    "batchMemoryThresholdPercent": Rule(min=0),
}

RESOURCE_THRESHOLD_STRATEGY: Schema = {
    "cpuSuppressThresholdPercent": percent(),
    "cpuSuppressMinPercent": percent(),
    "memoryEvictThresholdPercent": percent(greater_than_field="memoryEvictLowerPercent"),
    "memoryEvictLowerPercent": percent(less_than_field="memoryEvictThresholdPercent"),
    "cpuEvictBESatisfactionUpperPercent": percent(greater_than_field="cpuEvictBESatisfactionLowerPercent"),
    "cpuEvictBESatisfactionLowerPercent": percent(less_than_field="cpuEvictBESatisfactionUpperPercent"),
    "cpuEvictBEUsageThresholdPercent": percent(),
    "cpuEvictTimeWindowSeconds": Rule(gt=0),
}

_RESOURCE_QOS: Schema = {
    "cpuQOS": {"groupIdentity": Rule(min=-1, max=2), "schedIdle": Rule(min=0, max=1)},
    "memoryQOS": {
        "minLimitPercent": percent(),
        "lowLimitPercent": percent(),
        "throttlingPercent": percent(),
        "wmarkRatio": percent(),
        "wmarkScalePermill": Rule(min=1, max=1000),
        "wmarkMinAdj": Rule(min=-25, max=50),
        "pageCacheLimitEnable": Rule(min=0, max=1),
        "pageCacheLimitSync": Rule(min=0, max=1),
        "pageCacheLimitSize": Rule(min=0),
        "priorityEnable": Rule(min=0, max=1),
        "priority": Rule(min=0, max=12),
        "oomKillGroup": Rule(min=0, max=1),
    },
    "resctrlQOS": {
        "catRangeStartPercent": percent(less_than_field="catRangeEndPercent"),
        "catRangeEndPercent": percent(greater_than_field="catRangeStartPercent"),
        "mbaPercent": percent(),
    },
}

RESOURCE_QOS_STRATEGY: Schema = {
    qos_class: _RESOURCE_QOS for qos_class in ("lsrClass", "lsClass", "beClass", "systemClass", "cgroupRoot")
}

SYSTEM_STRATEGY: Schema = {
    "minFreeKbytesFactor": Rule(gt=0),
    "watermarkScaleFactor": Rule(gt=0, max=400),
    "memcgReapBackGround": Rule(min=0, max=1),
    "pageCacheLimitEnabled": Rule(min=0, max=1),
}

CPU_BURST_STRATEGY: Schema = {
    "cpuBurstPercent": Rule(min=1, max=10000),
    "cfsQuotaBurstPercent": Rule(min=100),
    "cfsQuotaBurstPeriodSeconds": Rule(min=-1),
    "sharePoolThresholdPercent": percent(),
}


class NestedTooDeep(ValueError):
    """A document nested deeper than `MAX_DEPTH` levels (no slo-controller-config needs a tenth of it)."""


def load_json(text: str) -> Any:
    """One slo-controller-config document's JSON, at most `MAX_DEPTH` levels deep. Every later walk
    over it (merge, copy, validation, printing) recurses, so a deeper document would raise
    RecursionError from one of them at some depth or other; it is refused here, at every depth,
    as a syntax error is: a ValueError (`NestedTooDeep`)."""
    try:
        document = json.loads(text)
    except RecursionError:
        raise NestedTooDeep(f"nested more than {MAX_DEPTH} levels deep") from None
    if depth_error(document, "document") is not None:
        raise NestedTooDeep(f"nested more than {MAX_DEPTH} levels deep")
    return document


def load_object(
    text: str, error: Callable[[str], Exception], not_an_object: str = "must be a JSON object"
) -> dict[str, Any]:
    """The JSON object one slo-controller-config document holds (`load_json`), or `error(message)`:
    `invalid JSON: ...`, or `not_an_object` (where `{type}` names what the document is instead)."""
    try:
        document = load_json(text)
    except ValueError as exc:
        raise error(f"invalid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise error(not_an_object.format(type=json_type(document)))
    return document


class TypeMismatch(ValueError):
    """A value Go's json.Unmarshal would refuse for the field's type (a parse failure, not a rule)."""


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def is_int64(value: int | float) -> bool:
    """Whether a JSON number decodes into a Go int64: integral and within its range (`1e30` is
    integral, and refused). The one integer rule of the slo-controller-config's parsers."""
    if isinstance(value, float) and not value.is_integer():
        return False
    return -(2**63) <= value < 2**63


def _check_type(value: Any, rule: Rule, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "int64" if rule.integer else "float64"
        raise TypeMismatch(f"cannot unmarshal {json_type(value)} into field {path} of type {kind}")
    if rule.integer and not is_int64(value):
        raise TypeMismatch(f"cannot unmarshal number {value} into field {path} of type int64")


def json_type(value: Any) -> str:
    """The JSON type of a decoded value as Go's encoding/json names it in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "number"


def _partner_bound(schema: Schema, partner: str, upper: bool) -> float | None:
    """The largest (`upper`) or smallest value the partner's own rule allows; None when unbounded."""
    rule = schema.get(partner)
    if not isinstance(rule, Rule):
        return None
    if upper:
        return rule.max
    return rule.min if rule.min is not None else rule.gt


def _first_failure(
    name: str, value: float, rule: Rule, siblings: Mapping[str, Any], schema: Schema, partner_required: bool
) -> str | None:
    if rule.gt is not None and not value > rule.gt:
        return f"{name} must be greater than {_number_text(rule.gt)}"
    if rule.min is not None and value < rule.min:
        return f"{name} must be {_number_text(rule.min)} or greater"
    if rule.max is not None and value > rule.max:
        return f"{name} must be {_number_text(rule.max)} or less"
    for partner, greater in ((rule.greater_than_field, True), (rule.less_than_field, False)):
        if not partner:
            continue
        other = siblings.get(partner)
        if other is None and not partner_required:
            # an absent partner may take any value its own rule allows: the pair must be satisfiable
            other = _partner_bound(schema, partner, upper=not greater)
            if other is None:
                continue
        if not isinstance(other, (int, float)) or not (value > other if greater else value < other):
            return f"{name} must be {'greater' if greater else 'less'} than {partner}"
    return None


def check_fields(
    document: Mapping[str, Any], schema: Schema, path: str, failures: dict[str, str], partner_required: bool = True
) -> None:
    """Add `path.field -> reason` for every field of `document` that breaks its rule.

    `partner_required` (the ConfigMap, as go-playground's `gtfield`/`ltfield` judge it): a field tied
    to an absent sibling fails. Without it (a rendered NodeSLO, which carries Koordinator's defaults
    such as `memoryEvictThresholdPercent: 70` alone) the pair need only be satisfiable.
    Raises TypeMismatch for a value of the wrong JSON type (Koordinator fails to decode those).
    """
    for name, rule in schema.items():
        value = document.get(name)
        if value is None:
            continue
        where = f"{path}.{name}"
        if isinstance(rule, Rule):
            _check_type(value, rule, where)
            failure = _first_failure(name, value, rule, document, schema, partner_required)
            if failure:
                failures[where] = failure
        else:
            if not isinstance(value, Mapping):
                raise TypeMismatch(f"cannot unmarshal {json_type(value)} into field {where} of type object")
            check_fields(value, rule, where, failures, partner_required)
