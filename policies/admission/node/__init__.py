"""`/mutate-node-status` and `/validate-node` (Koordinator's `pkg/webhook/node/`): one plugin each,
run by the shared loop."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.admission.configmap import node_conflict_in_config
from policies.admission.node.status_amplification import amplify_node, check_node_ratios
from policies.admission.plugin import CREATE, UPDATE, AdmissionContext, Denied, MutatingPlugin, Read, ValidatingPlugin
from policies.apis.constants import SLO_CONFIG_NAME, SLO_CONFIG_NAMESPACE
from policies.apis.objects import labels_of, name_of


class NodeResourceAmplificationPlugin:
    """Amplify allocatable cpu/memory by the node's ratios on status UPDATE (CREATE passes)."""

    name = "NodeResourceAmplificationPlugin"
    operations = frozenset({UPDATE})
    reads: frozenset[Read] = frozenset()
    explains_itself = False

    def mutate(self, obj: dict[str, Any], ctx: AdmissionContext) -> None:
        if ctx.request.operation in self.operations:
            amplify_node(obj, ctx.request.old_object)


class SLOManagerConfigConflictForNodePlugin:
    """A node whose new labels are selected by two node strategies of one key is refused (8.2).

    Only UPDATE can be refused: on CREATE Koordinator merely logs a conflict.
    """

    name = "SLOManagerConfigConflictForNode"
    operations = frozenset({UPDATE})
    reads = frozenset({Read("ConfigMap", SLO_CONFIG_NAMESPACE, SLO_CONFIG_NAME)})

    def validate(self, obj: Mapping[str, Any], ctx: AdmissionContext) -> None:
        old = ctx.request.old_object
        if ctx.request.operation not in self.operations or old is None or dict(labels_of(old)) == dict(labels_of(obj)):
            return
        configmap = ctx.cluster.get("ConfigMap", SLO_CONFIG_NAME, SLO_CONFIG_NAMESPACE)
        if configmap is None:
            return
        conflict = node_conflict_in_config(configmap, name_of(obj), labels_of(obj))
        if conflict:
            raise Denied(conflict)


class NodeAmplificationRatioPlugin:
    """A node whose amplification-ratio annotation would break `/mutate-node-status` is refused
    where the annotation is written: a ratio that does not parse, is not finite, or amplifies the
    node's allocatable past the largest quantity (Koordinator does not check; 1e308 crashed the
    status webhook and 1e19 published 40E of cpu)."""

    name = "NodeAmplificationRatio"
    operations = frozenset({CREATE, UPDATE})
    reads: frozenset[Read] = frozenset()

    def validate(self, obj: Mapping[str, Any], ctx: AdmissionContext) -> None:
        if ctx.request.operation in self.operations:
            check_node_ratios(obj)


def node_status_mutating_plugins() -> list[MutatingPlugin]:
    return [NodeResourceAmplificationPlugin()]


def node_validating_plugins() -> list[ValidatingPlugin]:
    return [SLOManagerConfigConflictForNodePlugin(), NodeAmplificationRatioPlugin()]
