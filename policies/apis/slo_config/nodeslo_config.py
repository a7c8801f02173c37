"""The NodeSLO documents of slo-controller-config, loaded as the manager's nodeslo controller does.

`pkg/slo-controller/nodeslo/nodeslo_cm_event_handler.go` and `pkg/util/sloconfig/nodeslo_config.go`:
each key (`resource-threshold-config`, `resource-qos-config`, `cpu-burst-config`, `system-config`)
holds `{"clusterStrategy": {...}, "nodeStrategies": [{name, nodeSelector, <fields>}]}`; cluster =
base ⊕ clusterStrategy, each node strategy = cluster ⊕ its fields. A key that is absent resets to
its base; a key that is not JSON keeps its previous value (`SLOCfgUnmarshalFailed`). Values are not
validated here: the webhook does that (`policies/admission/configmap.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.apis.constants import (
    CPU_BURST_CONFIG_KEY,
    HOST_APPLICATION_CONFIG_KEY,
    RESOURCE_QOS_CONFIG_KEY,
    RESOURCE_THRESHOLD_CONFIG_KEY,
    SYSTEM_CONFIG_KEY,
)
from policies.apis.selectors import InvalidSelector, LabelSelector, SelectorShapeError, compile_selector
from policies.apis.slo_config.colocation import merge
from policies.apis.slo_config.rules import load_object

#: NodeSLO spec field, and the base each document is merged onto (`sloconfig.Default*`)
SLO_DOCUMENTS: Final[Mapping[str, tuple[str, Mapping[str, Any]]]] = {
    RESOURCE_THRESHOLD_CONFIG_KEY: (
        "resourceUsedThresholdWithBE",
        {
            "enable": False,
            "cpuSuppressThresholdPercent": 65,
            "cpuSuppressPolicy": "cpuset",
            "memoryEvictThresholdPercent": 70,
            "cpuEvictPolicy": "evictByRealLimit",
        },
    ),
    RESOURCE_QOS_CONFIG_KEY: ("resourceQOSStrategy", {}),
    CPU_BURST_CONFIG_KEY: (
        "cpuBurstStrategy",
        {
            "policy": "none",
            "cpuBurstPercent": 1000,
            "cfsQuotaBurstPercent": 300,
            "cfsQuotaBurstPeriodSeconds": -1,
            "sharePoolThresholdPercent": 50,
        },
    ),
    SYSTEM_CONFIG_KEY: ("systemStrategy", {"totalNetworkBandwidth": "0"}),
}
_NODE_ENTRY_KEYS: Final = ("name", "nodeSelector")


class SLOConfigDecodeError(ValueError):
    """A NodeSLO document that does not decode (the previous value stays)."""


@dataclass(frozen=True, slots=True)
class NodeStrategy:
    """One node entry: a selector (None: matches no node) and its merged strategy."""

    selector: LabelSelector | None
    strategy: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class StrategyConfig:
    cluster: Mapping[str, Any]
    nodes: tuple[NodeStrategy, ...] = ()

    def for_node(self, labels: Mapping[str, str]) -> Mapping[str, Any]:
        for entry in self.nodes:
            if entry.selector is not None and entry.selector.matches(labels):
                return entry.strategy
        return self.cluster


@dataclass(frozen=True, slots=True)
class HostApplicationConfig:
    applications: tuple[Any, ...] = ()
    nodes: tuple[tuple[LabelSelector | None, tuple[Any, ...]], ...] = ()

    def for_node(self, labels: Mapping[str, str]) -> list[Any]:
        for selector, applications in self.nodes:
            if selector is not None and selector.matches(labels):
                return list(applications)
        return list(self.applications)


@dataclass(frozen=True, slots=True)
class SLOConfig:
    """Every NodeSLO document, loaded; `strategies` is keyed by ConfigMap key."""

    strategies: Mapping[str, StrategyConfig]
    host_applications: HostApplicationConfig


def _selector(raw: Any) -> LabelSelector | None:
    if raw is None:
        return None
    try:
        selector = compile_selector(raw, "nodeSelector")
    except SelectorShapeError:
        return None
    return None if isinstance(selector, InvalidSelector) else selector


def _object(text: str, key: str) -> dict[str, Any]:
    return load_object(text, lambda message: SLOConfigDecodeError(f"{key}: {message}"))


def decode_strategy_config(key: str, text: str) -> StrategyConfig:
    base = SLO_DOCUMENTS[key][1]
    raw = _object(text, key)
    cluster_raw = raw.get("clusterStrategy") or {}
    entries = raw.get("nodeStrategies") or []
    if not isinstance(cluster_raw, dict) or not isinstance(entries, list):
        raise SLOConfigDecodeError(f"{key}: clusterStrategy must be an object and nodeStrategies a list")
    cluster = merge(base, _without_nulls(cluster_raw))
    nodes = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise SLOConfigDecodeError(f"{key}: nodeStrategies entries must be objects")
        fields = {k: v for k, v in _without_nulls(entry).items() if k not in _NODE_ENTRY_KEYS}
        strategy = merge(cluster, fields)
        if key == SYSTEM_CONFIG_KEY and "totalNetworkBandwidth" not in fields:
            strategy["totalNetworkBandwidth"] = "0"  # not a pointer in Go: always decoded, "0" when omitted
        nodes.append(NodeStrategy(_selector(entry.get("nodeSelector")), strategy))
    return StrategyConfig(cluster, tuple(nodes))


def _without_nulls(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (_without_nulls(v) if isinstance(v, dict) else v) for k, v in raw.items() if v is not None}


def decode_host_applications(text: str) -> HostApplicationConfig:
    raw = _object(text, HOST_APPLICATION_CONFIG_KEY)
    applications = raw.get("applications") or []
    entries = raw.get("nodeConfigs") or []
    if not isinstance(applications, list) or not isinstance(entries, list):
        raise SLOConfigDecodeError(f"{HOST_APPLICATION_CONFIG_KEY}: applications and nodeConfigs must be lists")
    nodes = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("applications") or [], list):
            raise SLOConfigDecodeError(f"{HOST_APPLICATION_CONFIG_KEY}: nodeConfigs entries must be objects")
        nodes.append((_selector(entry.get("nodeSelector")), tuple(entry.get("applications") or [])))
    return HostApplicationConfig(tuple(applications), tuple(nodes))


def default_slo_config() -> SLOConfig:
    return SLOConfig(
        {key: StrategyConfig(dict(base)) for key, (_, base) in SLO_DOCUMENTS.items()}, HostApplicationConfig()
    )


def load_slo_config(data: Mapping[str, Any] | None, previous: SLOConfig | None = None) -> tuple[SLOConfig, list[str]]:
    """The documents of a ConfigMap's data (None: no ConfigMap), and the keys that failed to decode.

    A failed key keeps its value in `previous` (or its default)."""
    previous = previous or default_slo_config()
    data = data or {}
    errors: list[str] = []
    strategies: dict[str, StrategyConfig] = {}
    for key, (_, base) in SLO_DOCUMENTS.items():
        text = data.get(key)
        if not isinstance(text, str) or not text:
            strategies[key] = StrategyConfig(dict(base))
            continue
        try:
            strategies[key] = decode_strategy_config(key, text)
        except SLOConfigDecodeError as exc:
            errors.append(str(exc))
            strategies[key] = previous.strategies[key]
    text = data.get(HOST_APPLICATION_CONFIG_KEY)
    hosts = HostApplicationConfig()
    if isinstance(text, str) and text:
        try:
            hosts = decode_host_applications(text)
        except SLOConfigDecodeError as exc:
            errors.append(str(exc))
            hosts = previous.host_applications
    return SLOConfig(strategies, hosts), errors
