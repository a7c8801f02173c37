"""The memoising planner: `plan.plan_node` over readers that keep, between rounds, what a node's
plan reads that changes far less often than its NodeMetric. The one place the manager's speed-ups
to the plan live; `plan.plan_node` is the same plan with nothing kept, and tests hold them equal.

Koordinator's slo-controller reconciles a node on every NodeMetric status change (every report
interval), yet the node's pods and its NodeSLO inputs rarely move between two reports. The planner
keeps each pod's `PodInput` by the pod object it was read from (a store or informer replaces an
object when it changes, never edits it in place), the rendered NodeSLO spec by what it is rendered
from (the SLO config, the node's labels, its network-bandwidth annotation and the NodeSLO's
extensions), and the node's effective colocation strategy by what selects it (the colocation config,
the node's labels and its colocation-strategy annotation). What a plan reads from the Node object
alone (`NodeRead`) and its `NodeInput` are kept while the Node (and its pods, the configs) are the
very objects they were read from: the manager rewrites a node's status only every few rounds. Each
plugin's result is kept while every read it declares (`framework.Read`) reads the same: a plugin
that reads the NodeMetric is calculated each round, the CPU normalization ratio only when its
config, the node's labels or the NRT's annotations change. One entry per node, dropped by `forget`.
The result of a plan is the same with or without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import is_
from typing import Any

from policies.apis.constants import ANNOTATION_NETWORK_BANDWIDTH, ANNOTATION_NODE_COLOCATION_STRATEGY
from policies.apis.slo_config.colocation import ColocationConfig, ColocationStrategy
from policies.apis.slo_config.manager_config import ManagerConfig
from policies.apis.slo_config.nodeslo_config import SLOConfig
from scheduler_plugins.manager.noderesource.collect_policy import nodemetric_spec
from scheduler_plugins.manager.noderesource.framework import (
    CalculatePlugin,
    PluginTable,
    Read,
    Reading,
    Sources,
    calculate,
    readings,
)
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
from scheduler_plugins.manager.noderesource.plan import NodeFixed, NodeObjects, NodePlan, Object, Readers, plan_node
from scheduler_plugins.manager.noderesource.plugins_profile import DEFAULT_TABLE

_StrategyKey = tuple[ColocationConfig, Mapping[str, str], str | None]
_SLOKey = tuple[SLOConfig, Mapping[str, str], str | None, Mapping[str, Any] | None]


def _reads_same(reads: Sequence[Read[Any]], last: Sequence[object], values: Sequence[object]) -> bool:
    """Whether every read reads what it read when the kept result was calculated (the very object
    settles it without a call: most reads are of objects kept from round to round)."""
    for read, old, new in zip(reads, last, values, strict=True):
        if old is not new and not read.same(old, new):
            return False
    return True


class MemoPlanner:
    """Plans nodes as `plan.plan_node` does, keeping per node what its next plan is likely to read
    again. Shared values (the rendered specs, the results) are handed out as they are: read them,
    never change them."""

    def __init__(self, table: PluginTable = DEFAULT_TABLE) -> None:
        self.table = table
        self.readers = Readers(self.fixed, self.node_input, self.calculate)
        self._pods: dict[str, tuple[tuple[Mapping[str, Any], ...], tuple[PodInput, ...]]] = {}
        self._reads: dict[str, tuple[Mapping[str, Any], NodeRead]] = {}
        self._inputs: dict[str, tuple[Mapping[str, Any], tuple[object, ...], tuple[PodInput, ...], NodeInput]] = {}
        #: (node, plugin) -> (the values of the plugin's reads, its result)
        self._results: dict[tuple[str, str], tuple[tuple[object, ...], object]] = {}
        self._slos: dict[str, tuple[_SLOKey, dict[str, Any]]] = {}
        self._strategies: dict[str, tuple[_StrategyKey, ColocationStrategy]] = {}
        self._metric_specs: dict[str, tuple[ColocationStrategy, dict[str, Any]]] = {}
        self._fixed: dict[str, tuple[object, object, object, object, NodeFixed]] = {}

    def plan(self, config: ManagerConfig, objects: NodeObjects, now: float) -> NodePlan:
        """`plan.plan_node` over this planner's table, with what is kept."""
        return plan_node(config, objects, now, self.table, self.readers)

    def calculate(self, node: str, plugin: CalculatePlugin, sources: Sources) -> object:
        """The plugin's result: the last one for the node while each of its reads reads the same.
        A plugin that reads the NodeMetric is calculated afresh: its reading is new every round, so
        a kept result would never serve and would only hold the last round's reading alive."""
        if plugin.name in self.table.metric_readers:
            return calculate(plugin, sources)
        values = readings(plugin, sources)
        key = (node, plugin.name)
        cached = self._results.get(key)
        if cached is not None and _reads_same(plugin.reads, cached[0], values):
            return cached[1]
        result = plugin.calculate(Reading(dict(zip(plugin.reads, values, strict=True))))
        self._results[key] = (values, result)
        return result

    def fixed(
        self, table: PluginTable, config: ManagerConfig, node: Object, extensions: Mapping[str, Any] | None
    ) -> NodeFixed:
        """The node's `NodeFixed`, the very value of the last call while the Node, the config, the
        table and the extensions are the objects it was made from (else made again from the parts
        below, which keep what did not change)."""
        name = str((node.get("metadata") or {}).get("name") or "")
        cached = self._fixed.get(name)
        if (
            cached is not None
            and cached[0] is node
            and cached[1] is config
            and cached[2] is table
            and cached[3] is extensions
        ):
            return cached[4]
        read = self.read_node(node)
        labels, annotations = read.labels, read.annotations
        strategy = self.strategy(name, config.colocation, labels, annotations)
        nodeslo = self.nodeslo(name, config.slo, labels, annotations, extensions)
        nodemetric = self.nodemetric(name, strategy)
        fixed = NodeFixed(read, strategy, nodeslo, nodemetric, config.colocation.node_enabled(strategy))
        self._fixed[name] = (node, config, table, extensions, fixed)
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
        if last is None:  # the node's first plan (every node's, after a start)
            result = tuple(map(pod_input, pods))
        else:
            objects, inputs = last
            if objects is pods or (len(objects) == len(pods) and all(map(is_, objects, pods))):
                return inputs
            known = {id(pod): (pod, made) for pod, made in zip(objects, inputs, strict=True)}
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
        read = read_node(node, self.table.resources)
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

    def forget(self, node: str) -> None:
        self._fixed.pop(node, None)
        self._pods.pop(node, None)
        self._reads.pop(node, None)
        self._inputs.pop(node, None)
        for plugin in self.table.calculators:
            self._results.pop((node, plugin.name), None)
        self._slos.pop(node, None)
        self._strategies.pop(node, None)
        self._metric_specs.pop(node, None)
