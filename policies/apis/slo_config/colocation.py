"""`colocation-config`: the typed, defaulted ColocationStrategy of the cluster and of each node.

The one decoder of the document (`apis/configuration/slo_controller_config.go` ColocationCfg), shared
by the manager and the webhook: Go's `json.Unmarshal` refuses a value of the wrong JSON type, so
`decode_colocation` does too (`ColocationDecodeError`, naming the field). Loading follows
`pkg/slo-controller/config/colocation_cm_event_handler.go`: cluster = defaults ⊕ document, refused
when invalid; each node entry = cluster ⊕ entry, replaced by a copy of the cluster strategy when
invalid (its selector kept). A node's strategy (`sloconfig.GetNodeColocationStrategy`) is the first
matching node entry, then the node's annotation, then its ratio labels.

A strategy is kept as the JSON document Koordinator would marshal (`document`), because that is what
`a ⊕ b` operates on and what `manager plan` prints, plus typed fields read once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from policies.apis.constants import (
    ANNOTATION_NODE_COLOCATION_STRATEGY,
    LABEL_CPU_RECLAIM_RATIO,
    LABEL_MEMORY_RECLAIM_RATIO,
    LABEL_MID_STATIC_CPU_RESERVED_RATIO,
    LABEL_MID_STATIC_MEMORY_RESERVED_RATIO,
)
from policies.apis.durations import go_duration, parse_duration
from policies.apis.selectors import InvalidSelector, LabelSelector, SelectorShapeError, compile_selector
from policies.apis.slo_config.rules import is_int64, json_type, load_json, load_object

CALCULATE_BY_USAGE: Final = "usage"
CALCULATE_BY_REQUEST: Final = "request"
CALCULATE_BY_MAX_USAGE_REQUEST: Final = "maxUsageRequest"
MID_RECLAIM_MODE_STATIC: Final = "static"

_INT: Final = "int"
_FLOAT: Final = "float"
_BOOL: Final = "bool"
_STRING: Final = "string"
_OBJECT: Final = "object"
_POLICY: Final = "aggregatePolicy"

#: the ColocationStrategy fields in Go's struct order (that is the order Koordinator marshals them in)
FIELDS: Final[Mapping[str, str]] = {
    "enable": _BOOL,
    "metricAggregateDurationSeconds": _INT,
    "metricReportIntervalSeconds": _INT,
    "metricAggregatePolicy": _POLICY,
    "metricMemoryCollectPolicy": _STRING,
    "cpuReclaimThresholdPercent": _INT,
    "cpuCalculatePolicy": _STRING,
    "memoryReclaimThresholdPercent": _INT,
    "memoryCalculatePolicy": _STRING,
    "degradeTimeMinutes": _INT,
    "updateTimeThresholdSeconds": _INT,
    "resourceDiffThreshold": _FLOAT,
    "midReclaimMode": _STRING,
    "midCPUThresholdPercent": _INT,
    "midMemoryThresholdPercent": _INT,
    "midUnallocatedPercent": _INT,
    "midStaticCPUReservedPercent": _INT,
    "midStaticMemoryReservedPercent": _INT,
    "batchCPUThresholdPercent": _INT,
    "batchMemoryThresholdPercent": _INT,
    "extensions": _OBJECT,
}

#: `sloconfig.DefaultColocationStrategy()` as Koordinator marshals it
DEFAULT_STRATEGY: Final[Mapping[str, Any]] = {
    "enable": False,
    "metricAggregateDurationSeconds": 300,
    "metricReportIntervalSeconds": 60,
    "metricAggregatePolicy": {"durations": ["5m0s", "10m0s", "30m0s"]},
    "metricMemoryCollectPolicy": "usageWithoutPageCache",
    "cpuReclaimThresholdPercent": 60,
    "cpuCalculatePolicy": CALCULATE_BY_USAGE,
    "memoryReclaimThresholdPercent": 65,
    "memoryCalculatePolicy": CALCULATE_BY_USAGE,
    "degradeTimeMinutes": 15,
    "updateTimeThresholdSeconds": 300,
    "resourceDiffThreshold": 0.1,
    "midCPUThresholdPercent": 100,
    "midMemoryThresholdPercent": 100,
    "midUnallocatedPercent": 0,
    "midStaticCPUReservedPercent": 0,
    "midStaticMemoryReservedPercent": 0,
}

#: the percents of a node's capacity a strategy reclaims or reserves: each at most 100
RECLAIM_PERCENTS: Final = (
    "cpuReclaimThresholdPercent",
    "memoryReclaimThresholdPercent",
    "midStaticCPUReservedPercent",
    "midStaticMemoryReservedPercent",
)

#: node label -> the percent field it overrides (`UpdateColocationStrategyForNode`), in Koordinator's order
RATIO_LABELS: Final = (
    (LABEL_CPU_RECLAIM_RATIO, "cpuReclaimThresholdPercent"),
    (LABEL_MEMORY_RECLAIM_RATIO, "memoryReclaimThresholdPercent"),
    (LABEL_MID_STATIC_CPU_RESERVED_RATIO, "midStaticCPUReservedPercent"),
    (LABEL_MID_STATIC_MEMORY_RESERVED_RATIO, "midStaticMemoryReservedPercent"),
)


class ColocationDecodeError(ValueError):
    """The document does not decode into a ColocationCfg (what Go's json.Unmarshal refuses)."""


def _decode_field(name: str, kind: str, value: Any, path: str) -> Any:
    where = f"{path}.{name}" if path else name
    wrong = ColocationDecodeError(
        f"json: cannot unmarshal {json_type(value)} into Go struct field {where} of type {kind}"
    )
    if kind == _BOOL:
        if not isinstance(value, bool):
            raise wrong
        return value
    if kind == _INT:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong
        if not is_int64(value):
            raise ColocationDecodeError(
                f"json: cannot unmarshal number {value} into Go struct field {where} of type int64"
            )
        return int(value)
    if kind == _FLOAT:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong
        return float(value)
    if kind == _STRING:
        if not isinstance(value, str):
            raise wrong
        return value
    if kind == _OBJECT:
        if not isinstance(value, dict):
            raise wrong
        return value
    # metricAggregatePolicy: {"durations": [Go duration text]}
    if not isinstance(value, dict):
        raise wrong
    durations = value.get("durations")
    if durations is None:
        return {}
    if not isinstance(durations, list):
        raise ColocationDecodeError(f"json: cannot unmarshal {json_type(durations)} into {where}.durations")
    texts = []
    for item in durations:
        if not isinstance(item, str):
            raise ColocationDecodeError(
                f"json: cannot unmarshal {json_type(item)} into {where}.durations of type string"
            )
        try:
            texts.append(go_duration(parse_duration(item)))
        except ValueError as exc:
            raise ColocationDecodeError(f"{where}.durations: time: invalid duration {item!r}") from exc
    return {"durations": texts} if texts else {}


def decode_strategy(raw: Mapping[str, Any], path: str = "") -> dict[str, Any]:
    """The strategy fields `raw` sets (unknown fields and nulls dropped, as Go's decoder does)."""
    decoded: dict[str, Any] = {}
    for name, kind in FIELDS.items():
        value = raw.get(name)
        if value is None:
            continue
        decoded[name] = _decode_field(name, kind, value, path)
    return decoded


def merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """`util.MergeCfg`: the overlay's set fields decoded onto a copy of base; objects merge, arrays replace."""
    merged = dict(base)
    for name, value in overlay.items():
        current = merged.get(name)
        if isinstance(value, dict) and isinstance(current, dict):
            merged[name] = merge(current, value)
        else:
            merged[name] = value
    return merged


def ordered(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document in Go's field order (how Koordinator would marshal it)."""
    return {name: document[name] for name in FIELDS if name in document}


@dataclass(frozen=True, slots=True)
class ColocationStrategy:
    """One node's (or the cluster's) strategy, every default filled in; `document` is its JSON."""

    document: Mapping[str, Any]
    enable: bool
    metric_aggregate_duration_seconds: int
    metric_report_interval_seconds: int
    metric_memory_collect_policy: str
    cpu_reclaim_threshold_percent: int
    cpu_calculate_policy: str
    memory_reclaim_threshold_percent: int
    memory_calculate_policy: str
    degrade_time_minutes: int
    update_time_threshold_seconds: int
    resource_diff_threshold: float
    mid_reclaim_mode: str
    mid_cpu_threshold_percent: int
    mid_memory_threshold_percent: int
    mid_unallocated_percent: int
    mid_static_cpu_reserved_percent: int
    mid_static_memory_reserved_percent: int
    batch_cpu_threshold_percent: int | None
    batch_memory_threshold_percent: int | None

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> ColocationStrategy:
        """Typed view of a merged document; a field the document lacks takes the default."""
        doc = ordered(document)

        def get(name: str) -> Any:
            return doc.get(name, DEFAULT_STRATEGY.get(name))

        return cls(
            document=doc,
            enable=bool(get("enable")),
            metric_aggregate_duration_seconds=get("metricAggregateDurationSeconds"),
            metric_report_interval_seconds=get("metricReportIntervalSeconds"),
            metric_memory_collect_policy=get("metricMemoryCollectPolicy"),
            cpu_reclaim_threshold_percent=get("cpuReclaimThresholdPercent"),
            cpu_calculate_policy=get("cpuCalculatePolicy"),
            memory_reclaim_threshold_percent=get("memoryReclaimThresholdPercent"),
            memory_calculate_policy=get("memoryCalculatePolicy"),
            degrade_time_minutes=get("degradeTimeMinutes"),
            update_time_threshold_seconds=get("updateTimeThresholdSeconds"),
            resource_diff_threshold=get("resourceDiffThreshold"),
            mid_reclaim_mode=doc.get("midReclaimMode", ""),
            mid_cpu_threshold_percent=get("midCPUThresholdPercent"),
            mid_memory_threshold_percent=get("midMemoryThresholdPercent"),
            mid_unallocated_percent=get("midUnallocatedPercent"),
            mid_static_cpu_reserved_percent=get("midStaticCPUReservedPercent"),
            mid_static_memory_reserved_percent=get("midStaticMemoryReservedPercent"),
            batch_cpu_threshold_percent=doc.get("batchCPUThresholdPercent"),
            batch_memory_threshold_percent=doc.get("batchMemoryThresholdPercent"),
        )

    @property
    def aggregate_durations(self) -> list[str]:
        policy = self.document.get("metricAggregatePolicy") or {}
        return list(policy.get("durations") or [])


def is_valid(document: Mapping[str, Any]) -> bool:
    """`sloconfig.IsColocationStrategyValid` over the fields the document sets, and a reclaimed or
    reserved percent of the capacity above 100 refused (`RECLAIM_PERCENTS`; Koordinator has no
    maximum for the reclaim percents)."""

    def at_least(name: str, low: float, high: float | None = None, strict: bool = False) -> bool:
        value = document.get(name)
        if value is None:
            return True
        if strict and not value > low:
            return False
        if value < low:
            return False
        return high is None or value <= high

    return (
        at_least("metricAggregateDurationSeconds", 0, strict=True)
        and at_least("metricReportIntervalSeconds", 0, strict=True)
        and at_least("cpuReclaimThresholdPercent", 0, 100)
        and at_least("midStaticCPUReservedPercent", 0, 100)
        and at_least("memoryReclaimThresholdPercent", 0, 100)
        and at_least("midStaticMemoryReservedPercent", 0, 100)
        and at_least("degradeTimeMinutes", 0, strict=True)
        and at_least("updateTimeThresholdSeconds", 0, strict=True)
        and at_least("resourceDiffThreshold", 0, strict=True)
        and document.get("metricMemoryCollectPolicy", "x") != ""
        and at_least("midCPUThresholdPercent", 0, 100)
        and at_least("midMemoryThresholdPercent", 0, 100)
        and at_least("midUnallocatedPercent", 0, 100)
        and at_least("batchCPUThresholdPercent", 0)
        and at_least("batchMemoryThresholdPercent", 0)
    )


@dataclass(frozen=True, slots=True)
class NodeColocation:
    """One `nodeConfigs` entry: its selector (None matches no node) and its merged strategy."""

    name: str
    selector: LabelSelector | None
    document: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ColocationConfig:
    """The loaded colocation-config: the cluster strategy and the node entries, in order."""

    cluster: ColocationStrategy
    node_configs: tuple[NodeColocation, ...] = field(default=())

    def strategy_for(self, labels: Mapping[str, str], annotations: Mapping[str, str]) -> ColocationStrategy:
        """The node's effective strategy: first matching entry, then the annotation, then the ratio labels."""
        document: dict[str, Any] = dict(self.cluster.document)
        for entry in self.node_configs:
            if entry.selector is not None and entry.selector.matches(labels):
                document = merge(document, entry.document)
                break
        overlay = _annotation_strategy(annotations.get(ANNOTATION_NODE_COLOCATION_STRATEGY))
        if overlay:
            document = merge(document, overlay)
        for label, name in RATIO_LABELS:
            percent = _ratio_percent(labels.get(label))
            if percent is not None:
                document[name] = percent
        return ColocationStrategy.of(document)

    def node_enabled(self, strategy: ColocationStrategy) -> bool:
        """Both the cluster and the node must say enable: a node can switch itself off, never on."""
        return self.cluster.enable and strategy.enable


DEFAULT_CONFIG: Final = ColocationConfig(ColocationStrategy.of(DEFAULT_STRATEGY))


def _annotation_strategy(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        raw = load_json(text)
        overlay = decode_strategy(raw) if isinstance(raw, dict) else None
    except (ValueError, ColocationDecodeError):
        return None
    if overlay is not None and not _percents_valid(overlay):
        return None  # a node may not reclaim more than all of itself
    return overlay


def _percents_valid(document: Mapping[str, Any]) -> bool:
    return all(0 <= document[name] <= 100 for name in RECLAIM_PERCENTS if document.get(name) is not None)


def _ratio_percent(text: str | None) -> int | None:
    """`getNodeReclaimPercent`: a float ratio in [0, 1] as int64(v × 100), truncated after the multiply
    (Koordinator takes any ratio ≥ 0; above 1 the node would reclaim more than it has)."""
    if text is None:
        return None
    try:
        value = float(text.strip()) if text.strip() == text else float("nan")
    except ValueError:
        return None
    if math.isnan(value) or math.isinf(value) or not 0 <= value <= 1:
        return None  # at most all of the capacity: above 1 the label is ignored, as a malformed one is
    return int(value * 100)


def _selector(raw: Any, path: str) -> LabelSelector | None:
    if raw is None:
        return None  # metav1.LabelSelectorAsSelector(nil) selects nothing
    try:
        selector = compile_selector(raw, path)
    except SelectorShapeError as exc:
        raise ColocationDecodeError(str(exc)) from exc
    return None if isinstance(selector, InvalidSelector) else selector


def decode_colocation(text: str) -> tuple[dict[str, Any], list[tuple[str, Any, dict[str, Any]]]]:
    """The cluster fields and the node entries `(name, raw selector, fields)` a document sets.

    Raises ColocationDecodeError for text that is not JSON or a value of the wrong type."""
    raw = load_object(text, ColocationDecodeError, "json: cannot unmarshal {type} into Go value of type ColocationCfg")
    cluster = decode_strategy(raw)
    entries = raw.get("nodeConfigs")
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise ColocationDecodeError(f"json: cannot unmarshal {json_type(entries)} into field nodeConfigs")
    nodes = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ColocationDecodeError(f"json: cannot unmarshal {json_type(entry)} into nodeConfigs[{index}]")
        name = entry.get("name") or ""
        if not isinstance(name, str):
            raise ColocationDecodeError(f"json: cannot unmarshal {json_type(name)} into nodeConfigs[{index}].name")
        selector = entry.get("nodeSelector")
        if selector is not None and not isinstance(selector, dict):
            raise ColocationDecodeError(
                f"json: cannot unmarshal {json_type(selector)} into nodeConfigs[{index}].nodeSelector"
            )
        nodes.append((name, selector, decode_strategy(entry, f"nodeConfigs[{index}]")))
    return cluster, nodes


def load_colocation(text: str | None) -> ColocationConfig:
    """The config a ConfigMap's `colocation-config` text yields (absent or empty: the defaults).

    Raises ColocationDecodeError when Koordinator would keep its previous config: the text does
    not decode, or the merged cluster strategy is invalid."""
    if not text:
        return DEFAULT_CONFIG
    cluster_fields, entries = decode_colocation(text)
    cluster = merge(DEFAULT_STRATEGY, cluster_fields)
    if not is_valid(cluster):
        raise ColocationDecodeError("the cluster strategy is invalid")
    nodes = []
    for index, (name, raw_selector, fields) in enumerate(entries):
        merged = merge(cluster, fields)
        if not is_valid(merged):
            merged = dict(cluster)  # an invalid node entry becomes a copy of the cluster strategy
        nodes.append(NodeColocation(name, _selector(raw_selector, f"nodeConfigs[{index}].nodeSelector"), merged))
    return ColocationConfig(ColocationStrategy.of(cluster), tuple(nodes))
