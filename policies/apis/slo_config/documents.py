"""The strategy documents of the slo-controller-config ConfigMap, parsed and checked
(`pkg/webhook/cm/plugins/sloconfig/`, `pkg/webhook/node/plugins/sloconfig/slo_plugin.go`).

Each data key holds one JSON document: a cluster-wide strategy plus node-scoped entries, each with a
name and a nodeSelector. Errors are Koordinator's JSON-shaped texts (`___{"reason":..,"message":..}___`,
pkg/webhook/util/err), so tools that parse them keep working.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from policies.apis.constants import (
    COLOCATION_CONFIG_KEY,
    CPU_BURST_CONFIG_KEY,
    RESOURCE_QOS_CONFIG_KEY,
    RESOURCE_THRESHOLD_CONFIG_KEY,
    SYSTEM_CONFIG_KEY,
)
from policies.apis.selectors import InvalidSelector, LabelSelector, SelectorShapeError, compile_selector
from policies.apis.slo_config.colocation import ColocationDecodeError, decode_colocation
from policies.apis.slo_config.rules import (
    COLOCATION_STRATEGY,
    CPU_BURST_STRATEGY,
    RESOURCE_QOS_STRATEGY,
    RESOURCE_THRESHOLD_STRATEGY,
    SYSTEM_STRATEGY,
    Schema,
    TypeMismatch,
    check_fields,
    json_type,
    load_json,
)

REASON_PARSE_FAIL: Final = "ParseConfigFail"
REASON_PARAM_INVALID: Final = "ConfigParamInvalid"
REASON_OVERLAP: Final = "NodeStrategiesOverlap"
REASON_NODE_CONFLICT: Final = "ExistNodeConfict"  # sic: Koordinator's spelling is part of the message


def json_error(reason: str, message: Any) -> str:
    """Koordinator's JsonFormatError text; Go's encoder escapes <, > and & in strings."""
    body = json.dumps({"reason": reason, "message": message}, separators=(",", ":"), ensure_ascii=False)
    body = body.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f"___{body}___"


class ConfigProblem(ValueError):
    """A strategy document that Koordinator refuses; `str()` is the JSON-shaped message."""

    def __init__(self, reason: str, message: Any) -> None:
        self.reason = reason
        super().__init__(json_error(reason, message))


@dataclass(frozen=True)
class StrategyKind:
    """Where one data key keeps its cluster strategy and its node entries, and their field rules."""

    key: str
    title: str  # as in Koordinator's "Failed to parse <title> config" message
    node_list: str
    cluster_field: str | None  # None: the cluster strategy is the top-level object itself
    schema: Schema


STRATEGY_KINDS: Final = (
    StrategyKind(COLOCATION_CONFIG_KEY, "colocation", "nodeConfigs", None, COLOCATION_STRATEGY),
    StrategyKind(
        RESOURCE_THRESHOLD_CONFIG_KEY,
        "resourceThreshold",
        "nodeStrategies",
        "clusterStrategy",
        RESOURCE_THRESHOLD_STRATEGY,
    ),
    StrategyKind(RESOURCE_QOS_CONFIG_KEY, "resourceQOS", "nodeStrategies", "clusterStrategy", RESOURCE_QOS_STRATEGY),
    StrategyKind(SYSTEM_CONFIG_KEY, "system", "nodeStrategies", "clusterStrategy", SYSTEM_STRATEGY),
    StrategyKind(CPU_BURST_CONFIG_KEY, "cpuBurst", "nodeStrategies", "clusterStrategy", CPU_BURST_STRATEGY),
)


@dataclass(frozen=True)
class NodeEntry:
    name: str
    raw_selector: Mapping[str, Any]
    selector: LabelSelector


@dataclass(frozen=True)
class StrategyDocument:
    """A parsed data key: its node entries, and the field-rule failures found while decoding."""

    kind: StrategyKind
    entries: tuple[NodeEntry, ...]
    field_failures: Mapping[str, str]

    def check_fields(self) -> None:
        if self.field_failures:
            raise ConfigProblem(REASON_PARAM_INVALID, dict(self.field_failures))

    def check_overlap(self) -> None:
        """Refuse entries whose selectors can select the same node (Koordinator's synthetic nodes).

        Koordinator tries every synthetic node against every entry; here only the entries whose
        required labels the node has are tried (`_RequiredLabels`), with the same outcome: 4,000
        entries took 3.4 s of the event loop, quadratic in the entries."""
        required = _RequiredLabels(self.entries)
        for labels in _synthetic_nodes(self.entries):
            matched = [
                self.entries[i].name for i in required.candidates(labels) if self.entries[i].selector.matches(labels)
            ]
            if len(matched) > 1:
                raise ConfigProblem(REASON_OVERLAP, {"config": self.kind.key, "strategies": matched})

    def node_conflict(self, node_name: str, node_labels: Mapping[str, str]) -> str | None:
        """The ExistNodeConfict message when more than one entry selects this node, else None."""
        if len(self.entries) <= 1:
            return None
        matched = [e.name for e in self.entries if e.selector.matches(node_labels)]
        if len(matched) <= 1:
            return None
        return json_error(
            REASON_NODE_CONFLICT, {"config": self.kind.key, "strategies": matched, "exampleNodes": [node_name]}
        )


def _parse_failure(kind: StrategyKind, configmap: str, error: str) -> ConfigProblem:
    return ConfigProblem(
        REASON_PARSE_FAIL, f"Failed to parse {kind.title} config in configmap {configmap}, err: {error}"
    )


def parse_document(kind: StrategyKind, text: str, configmap: str) -> StrategyDocument:
    """Decode one data key; raises ConfigProblem for text that does not decode or an unusable selector."""
    try:
        document = load_json(text)
    except ValueError as exc:
        raise _parse_failure(kind, configmap, str(exc)) from exc
    try:
        if not isinstance(document, dict):
            raise TypeMismatch(f"cannot unmarshal {json_type(document)} into the {kind.key} document (an object)")
        failures: dict[str, str] = {}
        cluster = document if kind.cluster_field is None else document.get(kind.cluster_field)
        if cluster is not None:
            if not isinstance(cluster, dict):
                raise TypeMismatch(
                    f"cannot unmarshal {json_type(cluster)} into field {kind.cluster_field} of type object"
                )
            prefix = f"{kind.key}{'.' + kind.cluster_field if kind.cluster_field else ''}"
            check_fields(cluster, kind.schema, prefix, failures)
        raw_entries = document.get(kind.node_list) or []
        if not isinstance(raw_entries, list) or not all(isinstance(e, dict) for e in raw_entries):
            raise TypeMismatch(f"field {kind.node_list} must be an array of objects")
        for index, entry in enumerate(raw_entries):
            check_fields(entry, kind.schema, f"{kind.key}.{kind.node_list}[{index}]", failures)
            if not isinstance(entry.get("name", ""), str):
                raise TypeMismatch(
                    f"cannot unmarshal {json_type(entry['name'])} into field "
                    f"{kind.node_list}[{index}].name of type string"
                )
        entries = tuple(_node_entry(kind, entry) for entry in raw_entries)
        if kind.key == COLOCATION_CONFIG_KEY:
            decode_colocation(text)  # the manager's decoder: what it cannot read is refused here too
    except (TypeMismatch, ColocationDecodeError) as exc:
        raise _parse_failure(kind, configmap, str(exc)) from exc
    return StrategyDocument(kind, entries, failures)


def _node_entry(kind: StrategyKind, entry: Mapping[str, Any]) -> NodeEntry:
    name = str(entry.get("name") or "")
    raw = entry.get("nodeSelector")
    if not isinstance(raw, Mapping) or not (raw.get("matchLabels") or raw.get("matchExpressions")):
        raise ConfigProblem(
            REASON_PARAM_INVALID,
            f"nodeConfigs NodeSelector must not empty error! configType: {kind.key},nodeConfig name:{name}",
        )
    try:
        selector = compile_selector(raw, f"{kind.key}.{kind.node_list}[name={name}].nodeSelector")
    except SelectorShapeError as exc:
        raise TypeMismatch(str(exc)) from exc
    if isinstance(selector, InvalidSelector):
        raw_json = json.dumps(raw, separators=(",", ":"))
        raise ConfigProblem(
            REASON_PARAM_INVALID,
            f"failed to parse node selector {raw_json},configType: {kind.key},"
            f"nodeConfig name:{name}, err: {selector.error}",
        )
    return NodeEntry(name, raw, selector)


class _RequiredLabels:
    """Which entries a node's labels may match: an entry's selector requires each of its matchLabels,
    and for each `In` expression one of its values; an entry is a candidate for a node only when
    the node has every one of them (entries that require none are candidates for every node)."""

    def __init__(self, entries: Sequence[NodeEntry]) -> None:
        self.by_label: dict[tuple[str, str], list[tuple[int, int]]] = {}
        self.requirements: list[int] = []
        self.unindexed: list[int] = []
        for index, entry in enumerate(entries):
            requirements = _requirements(entry.selector)
            self.requirements.append(len(requirements))
            if not requirements:
                self.unindexed.append(index)
            for number, (key, values) in enumerate(requirements):
                for value in values:
                    self.by_label.setdefault((key, value), []).append((index, number))

    def candidates(self, labels: Mapping[str, str]) -> list[int]:
        """The entries that may match `labels`, in entry order."""
        met: dict[int, set[int]] = {}
        for pair in labels.items():
            for index, number in self.by_label.get(pair, ()):
                met.setdefault(index, set()).add(number)
        found = [index for index, numbers in met.items() if len(numbers) == self.requirements[index]]
        return sorted(found + self.unindexed)


def _requirements(selector: LabelSelector) -> list[tuple[str, frozenset[str]]]:
    """What a selector requires of a node's labels: (key, the values one of which it must have)."""
    required = [(key, frozenset({value})) for key, value in selector.match_labels]
    required += [(r.key, r.values) for r in selector.requirements if r.operator == "In"]
    return required


def _synthetic_nodes(entries: Iterable[NodeEntry]) -> list[dict[str, str]]:
    """Label sets that stand for the nodes each selector aims at (`generateNodesByNodeSelector`)."""
    nodes: list[dict[str, str]] = []
    for entry in entries:
        expressions = [e for e in entry.raw_selector.get("matchExpressions") or [] if e.get("values")]
        count = 1
        for expression in expressions:
            count *= len(expression["values"])
        generated: list[dict[str, str]] = [dict(entry.raw_selector.get("matchLabels") or {}) for _ in range(count)]
        for expression in expressions:
            values = expression["values"]
            for index, labels in enumerate(generated):
                labels[expression["key"]] = values[index % len(values)]
        nodes.extend(generated)
    return nodes


def parse_all(data: Mapping[str, Any], configmap: str) -> list[StrategyDocument]:
    """Every strategy document of the ConfigMap that parses; the others are skipped
    (`slo_plugin.go`)."""
    documents = []
    for kind in STRATEGY_KINDS:
        text = data.get(kind.key)
        if not isinstance(text, str):
            continue
        try:
            documents.append(parse_document(kind, text, configmap))
        except ConfigProblem:
            continue
    return documents
