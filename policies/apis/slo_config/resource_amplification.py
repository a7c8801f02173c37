"""`resource-amplification-config` (`apis/configuration` ResourceAmplificationCfg), as the manager
loads it (`noderesource/plugins/resourceamplification/configmap_event_handler.go`): cluster =
defaults ⊕ document, each node entry = cluster ⊕ its fields; text that is not JSON keeps the
previous config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from policies.apis.selectors import InvalidSelector, LabelSelector, SelectorShapeError, compile_selector
from policies.apis.slo_config.colocation import merge
from policies.apis.slo_config.rules import load_object


class AmplificationDecodeError(ValueError):
    """The document is not a ResourceAmplificationCfg."""


@dataclass(frozen=True, slots=True)
class AmplificationStrategy:
    enable: bool = False
    ratios: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AmplificationConfig:
    cluster: AmplificationStrategy = AmplificationStrategy()
    nodes: tuple[tuple[LabelSelector, AmplificationStrategy], ...] = ()

    def strategy_for(self, labels: Mapping[str, str]) -> AmplificationStrategy:
        for selector, strategy in self.nodes:
            if selector.matches(labels):
                return strategy
        return self.cluster


def _strategy(document: Mapping[str, object]) -> AmplificationStrategy:
    raw = document.get("resourceAmplificationRatio") or {}
    if not isinstance(raw, Mapping):
        raise AmplificationDecodeError("resourceAmplificationRatio must be an object")
    ratios = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise AmplificationDecodeError(f"resourceAmplificationRatio.{name} must be a number")
        ratios[str(name)] = float(value)
    return AmplificationStrategy(document.get("enable") is True, ratios)


def load_amplification(text: str | None) -> AmplificationConfig:
    """The config of the key's text (absent: the defaults); raises AmplificationDecodeError."""
    if text is None:
        return AmplificationConfig()
    raw = load_object(text, AmplificationDecodeError)
    cluster = merge({"enable": False}, {k: v for k, v in raw.items() if k != "nodeConfigs" and v is not None})
    nodes = []
    for entry in raw.get("nodeConfigs") or []:
        if not isinstance(entry, dict):
            raise AmplificationDecodeError("nodeConfigs entries must be objects")
        if entry.get("nodeSelector") is None:
            continue
        try:
            selector = compile_selector(entry["nodeSelector"], "nodeSelector")
        except SelectorShapeError as exc:
            raise AmplificationDecodeError(str(exc)) from exc
        if isinstance(selector, InvalidSelector):
            continue
        fields = {k: v for k, v in entry.items() if k not in ("name", "nodeSelector") and v is not None}
        nodes.append((selector, _strategy(merge(cluster, fields))))
    return AmplificationConfig(_strategy(cluster), tuple(nodes))
