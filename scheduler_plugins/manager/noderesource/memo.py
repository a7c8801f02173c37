"""What a node's plan reads that changes far less often than its NodeMetric, kept between rounds.

Koordinator's slo-controller reconciles a node on every NodeMetric status change (every report
interval), yet the node's pods and its NodeSLO inputs rarely move between two reports. The memo
keeps each pod's `PodInput` by the pod object it was read from (a store or informer replaces an
object when it changes, never edits it in place) and the rendered NodeSLO spec by what it is
rendered from (the SLO config, the node's labels, its network-bandwidth annotation and the NodeSLO's
extensions), and the node's effective colocation strategy by what selects it (the colocation config,
the node's labels and its colocation-strategy annotation). What a plan reads from the Node object
alone (`NodeRead`), its `NodeInput` and its CPU normalization and amplification ratios are kept
while the Node (and its pods, its NRT's annotations, the configs) are the very objects they were
read from: the manager rewrites a node's status only every few rounds. One entry per node, dropped
by `forget`. The result of a plan is the same with or without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import is_
from typing import Any

from policies.apis.constants import (
    ANNOTATION_CPU_NORMALIZATION_RATIO,
    ANNOTATION_NETWORK_BANDWIDTH,
    ANNOTATION_NODE_COLOCATION_STRATEGY,
)
from policies.apis.slo_config.colocation import ColocationConfig, ColocationStrategy
from policies.apis.slo_config.cpu_normalization import NormalizationConfig
from policies.apis.slo_config.manager_config import ManagerConfig
from policies.apis.slo_config.nodeslo_config import SLOConfig
from policies.apis.slo_config.resource_amplification import AmplificationConfig
from scheduler_plugins.manager.noderesource.amplification import amplification_ratio
from scheduler_plugins.manager.noderesource.collect_policy import nodemetric_spec
from scheduler_plugins.manager.noderesource.inputs import (
    NodeInput,
    NodeRead,
    PodInput,
    node_input,
    node_input_source,
    pod_input,
    read_node,
)
from scheduler_plugins.manager.noderesource.nodeslo_spec import render_nodeslo_spec
from scheduler_plugins.manager.noderesource.normalization import normalization_ratio

_StrategyKey = tuple[ColocationConfig, Mapping[str, str], str | None]
_SLOKey = tuple[SLOConfig, Mapping[str, str], str | None, Mapping[str, Any] | None]


@dataclass(frozen=True, slots=True)
class NodeFixed:
    """What a node's plan takes from its Node object, the config, its NodeResourceTopology and its
    NodeSLO's extensions, and from nothing else (not its pods, not its NodeMetric)."""

    read: NodeRead
    strategy: ColocationStrategy
    #: the NodeSLO and NodeMetric specs to hold (shared: read them, never change them)
    nodeslo: dict[str, Any]
    nodemetric: dict[str, Any]
    #: whether colocation is on for the node (`ColocationConfig.node_enabled`)
    enabled: bool
    #: the CPU normalization and amplification ratio annotations to write; None when the config is
    #: unavailable or colocation is off for the node (then they are not computed)
    ratios: tuple[str | None, str | None] | None


def _nrt_annotations(nrt: Mapping[str, Any] | None) -> Any:
    return (nrt or {}).get("metadata", {}).get("annotations")


def node_fixed(
    config: ManagerConfig, node: Mapping[str, Any], nrt: Mapping[str, Any] | None, extensions: Mapping[str, Any] | None
) -> NodeFixed:
    """The node's `NodeFixed`, computed (`PlanMemo.fixed` keeps it)."""
    read = read_node(node)
    labels, annotations = read.labels, read.annotations
    strategy = config.colocation.strategy_for(labels, annotations)
    nodeslo = render_nodeslo_spec(config.slo, labels, annotations, extensions)
    nodemetric = nodemetric_spec(strategy)
    enabled = config.colocation.node_enabled(strategy)
    ratios = None
    if config.available and enabled:
        nrt_annotations = _nrt_annotations(nrt)
        ratios = (
            normalization_ratio(config.normalization, labels, nrt_annotations),
            amplification_ratio(config.amplification, labels, annotations),
        )
    return NodeFixed(read, strategy, nodeslo, nodemetric, enabled, ratios)


class PlanMemo:
    """Per node: its pods' inputs (bounded by the pods it has now), its colocation strategy and its
    rendered NodeSLO spec. The rendered spec is shared between plans: read it, never change it."""

    def __init__(self) -> None:
        self._pods: dict[str, tuple[tuple[Mapping[str, Any], ...], tuple[PodInput, ...]]] = {}
        self._reads: dict[str, tuple[Mapping[str, Any], NodeRead]] = {}
        self._inputs: dict[str, tuple[Mapping[str, Any], tuple[object, ...], tuple[PodInput, ...], NodeInput]] = {}
        self._ratios: dict[
            str, tuple[tuple[object, object, Mapping[str, Any], object, object], tuple[str | None, str | None]]
        ] = {}
        self._slos: dict[str, tuple[_SLOKey, dict[str, Any]]] = {}
        self._strategies: dict[str, tuple[_StrategyKey, ColocationStrategy]] = {}
        self._metric_specs: dict[str, tuple[ColocationStrategy, dict[str, Any]]] = {}
        self._fixed: dict[str, tuple[object, object, object, object, NodeFixed]] = {}

    def fixed(
        self,
        config: ManagerConfig,
        node: Mapping[str, Any],
        nrt: Mapping[str, Any] | None,
        extensions: Mapping[str, Any] | None,
    ) -> NodeFixed:
        """The node's `NodeFixed`, the very value of the last call while the Node, the config, the NRT
        and the extensions are the objects it was made from (else made again from the parts below,
        which keep what did not change)."""
        name = str((node.get("metadata") or {}).get("name") or "")
        cached = self._fixed.get(name)
        if (
            cached is not None
            and cached[0] is node
            and cached[1] is config
            and cached[2] is nrt
            and cached[3] is extensions
        ):
            return cached[4]
        read = self.read_node(node)
        labels, annotations = read.labels, read.annotations
        strategy = self.strategy(name, config.colocation, labels, annotations)
        nodeslo = self.nodeslo(name, config.slo, labels, annotations, extensions)
        nodemetric = self.nodemetric(name, strategy)
        enabled = config.colocation.node_enabled(strategy)
        ratios = None
        if config.available and enabled:
            ratios = self.ratios(config.normalization, config.amplification, read, _nrt_annotations(nrt))
        fixed = NodeFixed(read, strategy, nodeslo, nodemetric, enabled, ratios)
        self._fixed[name] = (node, config, nrt, extensions, fixed)
        return fixed

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
            if c_config is config and (c_labels is labels or c_labels == labels) and c_overlay == overlay:
                return strategy
        strategy = config.strategy_for(labels, annotations)
        self._strategies[node] = ((config, labels, overlay), strategy)
        return strategy

    def pod_inputs(self, node: str, pods: Sequence[Mapping[str, Any]]) -> tuple[PodInput, ...]:
        """The pods' inputs; the very tuple of the last call while the pods are the same objects."""
        last = self._pods.get(node)
        if last is not None:
            objects, inputs = last
            if objects is pods or (len(objects) == len(pods) and all(map(is_, objects, pods))):
                return inputs
            known = {id(pod): (pod, made) for pod, made in zip(objects, inputs, strict=True)}
        else:
            known = {}
        out = []
        for pod in pods:
            hit = known.get(id(pod))
            out.append(hit[1] if hit is not None and hit[0] is pod else pod_input(pod))
        result = tuple(out)
        self._pods[node] = (pods if isinstance(pods, tuple) else tuple(pods), result)
        return result

    def read_node(self, node: Mapping[str, Any]) -> NodeRead:
        """The Node object's reading, while it is the object last read for its name."""
        name = str((node.get("metadata") or {}).get("name") or "")
        cached = self._reads.get(name)
        if cached is not None and cached[0] is node:
            return cached[1]
        read = read_node(node)
        self._reads[name] = (node, read)
        return read

    def node_input(self, name: str, node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> NodeInput:
        """The node's `NodeInput`, while its pods are the objects it was read from and the Node is
        the object read, or one with the same `node_input_source` (a status write of the batch and
        mid resources replaces the Node, not what its input reads)."""
        inputs = self.pod_inputs(name, pods)
        cached = self._inputs.get(name)
        if cached is not None and cached[2] is inputs:
            if cached[0] is node:
                return cached[3]
            source = node_input_source(node)
            if source == cached[1]:
                self._inputs[name] = (node, source, inputs, cached[3])
                return cached[3]
        else:
            source = node_input_source(node)
        made = node_input(node, pods, inputs)
        self._inputs[name] = (node, source, inputs, made)
        return made

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
            if (
                c_config is config
                and (c_labels is labels or c_labels == labels)
                and c_bandwidth == bandwidth
                and (c_extensions is extensions or c_extensions == extensions)
            ):
                return spec
        spec = render_nodeslo_spec(config, labels, annotations, extensions)
        self._slos[node] = ((config, labels, bandwidth, extensions), spec)
        return spec

    def ratios(
        self,
        normalization: NormalizationConfig,
        amplification: AmplificationConfig,
        read: NodeRead,
        nrt_annotations: Mapping[str, str] | None,
    ) -> tuple[str | None, str | None]:
        """The node's CPU normalization and amplification ratio annotations to write, while what
        they are computed from holds: the configs and the NRT's annotations (the objects), the
        node's labels (equal) and its normalization ratio annotation, the one annotation the
        amplification ratio reads (a status write replaces the Node, rarely these)."""
        labels = read.labels
        written = read.annotations.get(ANNOTATION_CPU_NORMALIZATION_RATIO)
        cached = self._ratios.get(read.name)
        if cached is not None:
            (c_normalization, c_amplification, c_labels, c_written, c_nrt), ratios = cached
            if (
                c_normalization is normalization
                and c_amplification is amplification
                and (c_labels is labels or c_labels == labels)
                and c_written == written
                and c_nrt is nrt_annotations
            ):
                return ratios
        ratios = (
            normalization_ratio(normalization, labels, nrt_annotations),
            amplification_ratio(amplification, labels, read.annotations),
        )
        self._ratios[read.name] = ((normalization, amplification, labels, written, nrt_annotations), ratios)
        return ratios

    def forget(self, node: str) -> None:
        self._fixed.pop(node, None)
        self._pods.pop(node, None)
        self._reads.pop(node, None)
        self._inputs.pop(node, None)
        self._ratios.pop(node, None)
        self._slos.pop(node, None)
        self._strategies.pop(node, None)
        self._metric_specs.pop(node, None)
