"""`cpu-normalization-config` (`apis/configuration` CPUNormalizationCfg), as the manager loads it
(`noderesource/plugins/cpunormalization/configmap_event_handler.go`): cluster = defaults ⊕ document,
each node entry = cluster ⊕ its fields; text that is not JSON keeps the previous config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policies.apis.selectors import InvalidSelector, LabelSelector, SelectorShapeError, compile_selector
from policies.apis.slo_config.colocation import merge
from policies.apis.slo_config.rules import load_object


class NormalizationDecodeError(ValueError):
    """The document is not a CPUNormalizationCfg."""


@dataclass(frozen=True, slots=True)
class NormalizationStrategy:
    enable: bool = False
    default_ratio: float | None = None
    #: CPU model -> {baseRatio, hyperThreadEnabledRatio, turboEnabledRatio, hyperThreadTurboEnabledRatio}
    ratio_model: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> NormalizationStrategy:
        ratio = document.get("defaultRatio")
        model = document.get("ratioModel") or {}
        return cls(
            enable=document.get("enable") is True,
            default_ratio=float(ratio) if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) else None,
            ratio_model={str(k): dict(v) for k, v in model.items() if isinstance(v, dict)},
        )


@dataclass(frozen=True, slots=True)
class NormalizationConfig:
    cluster: NormalizationStrategy = NormalizationStrategy()
    nodes: tuple[tuple[LabelSelector, NormalizationStrategy], ...] = ()

    def strategy_for(self, labels: Mapping[str, str]) -> NormalizationStrategy:
        for selector, strategy in self.nodes:
            if selector.matches(labels):
                return strategy
        return self.cluster


def load_normalization(text: str | None) -> NormalizationConfig:
    """The config of the key's text (absent: the defaults); raises NormalizationDecodeError."""
    if text is None:
        return NormalizationConfig()
    raw = load_object(text, NormalizationDecodeError)
    cluster = {k: v for k, v in raw.items() if k != "nodeConfigs" and v is not None}
    cluster_doc = merge({"enable": False, "ratioModel": {}}, cluster)
    nodes = []
    for entry in raw.get("nodeConfigs") or []:
        if not isinstance(entry, dict):
            raise NormalizationDecodeError("nodeConfigs entries must be objects")
        try:
            selector = (
                compile_selector(entry.get("nodeSelector"), "nodeSelector")
                if entry.get("nodeSelector") is not None
                else None
            )
        except SelectorShapeError as exc:
            raise NormalizationDecodeError(str(exc)) from exc
        if selector is None or isinstance(selector, InvalidSelector):
            continue
        fields = {k: v for k, v in entry.items() if k not in ("name", "nodeSelector") and v is not None}
        nodes.append((selector, NormalizationStrategy.of(merge(cluster_doc, fields))))
    return NormalizationConfig(NormalizationStrategy.of(cluster_doc), tuple(nodes))
