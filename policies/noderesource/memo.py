"""What a node's plan reads that changes far less often than its NodeMetric, kept between rounds.

Koordinator's slo-controller reconciles a node on every NodeMetric status change (every report
interval), yet the node's pods and its NodeSLO inputs rarely move between two reports. The memo
keeps each pod's `PodInput` by the pod object it was read from (a store or informer replaces an
object when it changes, never edits it in place) and the rendered NodeSLO spec by what it is
rendered from (the SLO config, the node's labels, its network-bandwidth annotation and the NodeSLO's
extensions), and the node's effective colocation strategy by what selects it (the colocation config,
the node's labels and its colocation-strategy annotation). The result of a plan is the same with or without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from policies.constants import ANNOTATION_NETWORK_BANDWIDTH, ANNOTATION_NODE_COLOCATION_STRATEGY
from policies.noderesource.collect_policy import nodemetric_spec
from policies.noderesource.inputs import PodInput, pod_input
from policies.noderesource.nodeslo import render_nodeslo_spec
from policies.slo_config.colocation import ColocationConfig, ColocationStrategy
from policies.slo_config.nodeslo import SLOConfig

_StrategyKey = tuple[ColocationConfig, Mapping[str, str], str | None]
_SLOKey = tuple[SLOConfig, Mapping[str, str], str | None, Mapping[str, Any] | None]


class PlanMemo:
    """Per node: its pods' inputs (bounded by the pods it has now), its colocation strategy and its
    rendered NodeSLO spec. The rendered spec is shared between plans: read it, never change it."""

    def __init__(self) -> None:
        self._pods: dict[str, dict[int, tuple[Mapping[str, Any], PodInput]]] = {}
        self._slos: dict[str, tuple[_SLOKey, dict[str, Any]]] = {}
        self._strategies: dict[str, tuple[_StrategyKey, ColocationStrategy]] = {}
        self._metric_specs: dict[str, tuple[ColocationStrategy, dict[str, Any]]] = {}

    def nodemetric(self, node: str, strategy: ColocationStrategy) -> dict[str, Any]:
        """The node's NodeMetric spec (a function of its strategy; shared: read it, never change it)."""
        cached = self._metric_specs.get(node)
        if cached is not None and cached[0] is strategy:
            return cached[1]
        spec = nodemetric_spec(strategy)
        self._metric_specs[node] = (strategy, spec)
        return spec

    def strategy(
        self, node: str, config: ColocationConfig, labels: Mapping[str, str], annotations: Mapping[str, str]
    ) -> ColocationStrategy:
        overlay = annotations.get(ANNOTATION_NODE_COLOCATION_STRATEGY)
        cached = self._strategies.get(node)
        if cached is not None:
            (c_config, c_labels, c_overlay), strategy = cached
            if c_config is config and c_labels == labels and c_overlay == overlay:
                return strategy
        strategy = config.strategy_for(labels, annotations)
        self._strategies[node] = ((config, labels, overlay), strategy)
        return strategy

    def pod_inputs(self, node: str, pods: Sequence[Mapping[str, Any]]) -> tuple[PodInput, ...]:
        known = self._pods.get(node) or {}
        kept: dict[int, tuple[Mapping[str, Any], PodInput]] = {}
        out = []
        for pod in pods:
            hit = known.get(id(pod))
            if hit is None or hit[0] is not pod:
                hit = (pod, pod_input(pod))
            kept[id(pod)] = hit
            out.append(hit[1])
        self._pods[node] = kept
        return tuple(out)

    def nodeslo(
        self,
        node: str,
        config: SLOConfig,
        labels: Mapping[str, str],
        annotations: Mapping[str, str],
        extensions: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        bandwidth = annotations.get(ANNOTATION_NETWORK_BANDWIDTH)
        cached = self._slos.get(node)
        if cached is not None:
            (c_config, c_labels, c_bandwidth, c_extensions), spec = cached
            if c_config is config and c_labels == labels and c_bandwidth == bandwidth and c_extensions == extensions:
                return spec
        spec = render_nodeslo_spec(config, labels, annotations, extensions)
        self._slos[node] = ((config, labels, bandwidth, extensions), spec)
        return spec

    def forget(self, node: str) -> None:
        self._pods.pop(node, None)
        self._slos.pop(node, None)
        self._strategies.pop(node, None)
        self._metric_specs.pop(node, None)
