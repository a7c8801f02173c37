"""`/validate-configmap`: the slo-controller-config strategies
(`pkg/webhook/cm/plugins/sloconfig/`).

Only `koordinator-system/slo-controller-config` is examined; every other ConfigMap, and every DELETE,
is admitted. On CREATE every non-empty strategy key is checked, on UPDATE only the keys whose text
changed, each in Koordinator's order: decode, node selectors, field rules, selector overlap. When a
changed key has several node entries, every Node of the cluster is checked for a double match.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policies.admission.plugin import CREATE, UPDATE, AdmissionContext, Denied, Read, ValidatingPlugin
from policies.apis.constants import SLO_CONFIG_NAME, SLO_CONFIG_NAMESPACE
from policies.apis.objects import labels_of, name_of, namespace_of
from policies.apis.slo_config.documents import (
    STRATEGY_KINDS,
    ConfigProblem,
    StrategyDocument,
    parse_all,
    parse_document,
)

__all__ = ["SLOConfigPlugin", "configmap_validating_plugins", "node_conflict_in_config"]


def _data(configmap: Mapping[str, Any] | None) -> Mapping[str, Any]:
    data = configmap.get("data") if isinstance(configmap, Mapping) else None
    return data if isinstance(data, Mapping) else {}


def is_slo_config(configmap: Mapping[str, Any], request_namespace: str) -> bool:
    namespace = namespace_of(configmap) or request_namespace
    return namespace == SLO_CONFIG_NAMESPACE and name_of(configmap) == SLO_CONFIG_NAME


def changed_documents(new: Mapping[str, Any], old: Mapping[str, Any] | None, configmap: str) -> list[StrategyDocument]:
    """The non-empty keys that are new or changed, each checked; the first problem is raised."""
    new_data, old_data = _data(new), _data(old) if old is not None else None
    documents = []
    for kind in STRATEGY_KINDS:
        text = new_data.get(kind.key)
        if text is None or text == "":
            continue
        if old_data is not None and old_data.get(kind.key) == text:
            continue
        if not isinstance(text, str):
            raise Denied(f"data.{kind.key}: Invalid value: ConfigMap data values must be strings")
        try:
            document = parse_document(kind, text, configmap)
            document.check_fields()
            document.check_overlap()
        except ConfigProblem as problem:
            raise Denied(str(problem)) from problem
        documents.append(document)
    return documents


class SLOConfigPlugin:
    name = "SLOConfig"
    operations = frozenset({CREATE, UPDATE})  # a DELETE is always admitted
    reads = frozenset({Read("Node")})  # a changed strategy with several node entries is checked on every Node

    def validate(self, obj: Mapping[str, Any], ctx: AdmissionContext) -> None:
        request = ctx.request
        if request.operation not in self.operations or not is_slo_config(obj, request.namespace):
            return
        configmap = f"{SLO_CONFIG_NAMESPACE}/{SLO_CONFIG_NAME}"
        old = request.old_object if request.operation == UPDATE else None
        documents = changed_documents(obj, old, configmap)
        if not any(len(d.entries) > 1 for d in documents):
            return
        for node in sorted(ctx.cluster.list("Node"), key=name_of):
            for document in documents:
                conflict = document.node_conflict(name_of(node), labels_of(node))
                if conflict:
                    raise Denied(conflict)


def node_conflict_in_config(configmap: Mapping[str, Any], node_name: str, node_labels: Mapping[str, str]) -> str | None:
    """The first ExistNodeConfict of a node against the stored config; undecodable keys are skipped."""
    for document in parse_all(_data(configmap), f"{SLO_CONFIG_NAMESPACE}/{SLO_CONFIG_NAME}"):
        conflict = document.node_conflict(node_name, node_labels)
        if conflict:
            return conflict
    return None


def configmap_validating_plugins() -> list[ValidatingPlugin]:
    return [SLOConfigPlugin()]
