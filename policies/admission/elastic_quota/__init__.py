"""`/mutate-...-elasticquota` and `/validate-...-elasticquota` (Koordinator's
`pkg/webhook/elasticquota/`).

The quota tree comes from the cluster snapshot (`tree.quota_tree_of(snapshot)`, built once per
snapshot); a request is judged against it and never changes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from policies.admission.elastic_quota.checks import check_quota_itself, check_topology
from policies.admission.elastic_quota.defaulting import fill_quota_defaults
from policies.admission.elastic_quota.tree import QuotaInfo, QuotaTree, quota_tree_of
from policies.admission.plugin import (
    CREATE,
    DELETE,
    UPDATE,
    AdmissionContext,
    Denied,
    MutatingPlugin,
    Read,
    ValidatingPlugin,
)
from policies.admission.quota_index import claimed_namespaces
from policies.admission.snapshot import ClusterSnapshot
from policies.apis.constants import (
    ANNOTATION_QUOTA_NAMESPACES,
    DEFAULT_QUOTA_NAME,
    ELASTIC_QUOTA_KIND,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_PARENT,
    LABEL_QUOTA_TREE_ID,
    ROOT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
)
from policies.apis.objects import annotations_of, labels_of, name_of, spec_of


def validate_create(tree: QuotaTree, quota: Mapping[str, Any]) -> None:
    name = name_of(quota)
    if name in tree.infos:
        raise Denied(f"AddQuota quota already exist:{name}")
    for namespace in claimed_namespaces(quota):
        if (owner := tree.namespace_owner.get(namespace)) is not None:
            raise Denied(f"AddQuota quota {name}'s annotation namespace {namespace} is already bound to quota {owner}")
    info = QuotaInfo.of(quota)
    check_quota_itself(quota, info)
    check_topology(tree, None, info, [])


def _tracked_fields(quota: Mapping[str, Any]) -> tuple[Any, ...]:
    """What an UPDATE must touch to be validated at all (Koordinator's `quotaFieldsCopy`: an UPDATE
    that changes none of the parent, is-parent and tree-id labels, the namespaces annotation or the
    spec is not validated)."""
    labels = labels_of(quota)
    return (
        labels.get(LABEL_QUOTA_PARENT, ""),
        labels.get(LABEL_QUOTA_IS_PARENT, ""),
        labels.get(LABEL_QUOTA_TREE_ID, ""),
        annotations_of(quota).get(ANNOTATION_QUOTA_NAMESPACES, ""),
        dict(spec_of(quota)),
    )


def validate_update(tree: QuotaTree, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    if _tracked_fields(old) == _tracked_fields(new):
        return
    name = name_of(new)
    if name in (SYSTEM_QUOTA_NAME, ROOT_QUOTA_NAME):
        raise Denied(f"invalid quota {name}")
    for namespace in claimed_namespaces(new):
        owner = tree.namespace_owner.get(namespace)
        if owner is not None and owner != name:
            raise Denied(
                f"UpdadteQuota, quota {name} update namespaces, but namespace {namespace} "
                f"is already bound to quota {owner}"
            )
    stored = tree.infos.get(name)
    if stored is None:
        raise Denied(f"UpdateQuota quota not exist in quotaInfoMap:{name}")
    info = QuotaInfo.of(new)
    check_quota_itself(new, info)
    check_topology(tree, stored, info, claimed_namespaces(old))


def validate_delete(tree: QuotaTree, quota: Mapping[str, Any]) -> None:
    name = name_of(quota)
    if name in (SYSTEM_QUOTA_NAME, ROOT_QUOTA_NAME, DEFAULT_QUOTA_NAME):
        raise Denied(f"can not delete quotaGroup :{name}")
    if name not in tree.infos:
        raise Denied(f"not found quota:{name}")
    if children := tree.children_of(name):
        raise Denied(f"delete quota failed, quota {name} has {len(children)} child quotas")
    if pods := tree.labelled_pods.get(name):
        shown = list(pods) if len(pods) <= 2 else [pods[0], pods[1], "..."]
        raise Denied(f"delete quota failed, quota {name} has {len(pods)} child pods: {', '.join(shown)}")


def missing_parent(quota: Mapping[str, Any], cluster: ClusterSnapshot) -> str | None:
    """The parent a quota names that the cluster's tree lacks, else None. A tree applied in one go
    sends a child ~20 ms after its parent, before the watch shows the parent: the webhook reads
    that one parent from the API server before judging (`webhook.live_reads`)."""
    parent = labels_of(quota).get(LABEL_QUOTA_PARENT) or ""
    if not parent or parent == ROOT_QUOTA_NAME:
        return None
    return None if parent in quota_tree_of(cluster).infos else str(parent)


#: What `quota_tree_of(snapshot)` is built from: the quotas, and the pods charged to them (of a pod
#: only its namespace, name and quota label: `QuotaTree.build`).
QUOTA_TREE_READS: Final = frozenset({Read(ELASTIC_QUOTA_KIND), Read("Pod", metadata_only=True)})


class QuotaDefaultsPlugin:
    name = "QuotaDefaults"
    operations = frozenset({CREATE})
    reads = QUOTA_TREE_READS
    explains_itself = False

    def mutate(self, obj: dict[str, Any], ctx: AdmissionContext) -> None:
        if ctx.request.operation in self.operations:
            fill_quota_defaults(obj, quota_tree_of(ctx.cluster))


class QuotaMetaCheckerPlugin:
    name = "QuotaMetaChecker"
    operations = frozenset({CREATE, UPDATE, DELETE})
    reads = QUOTA_TREE_READS

    def validate(self, obj: Mapping[str, Any], ctx: AdmissionContext) -> None:
        operation, tree = ctx.request.operation, quota_tree_of(ctx.cluster)
        if operation == CREATE:
            validate_create(tree, obj)
        elif operation == UPDATE and ctx.request.old_object is not None:
            validate_update(tree, ctx.request.old_object, obj)
        elif operation == DELETE:
            validate_delete(tree, obj)


def quota_mutating_plugins() -> list[MutatingPlugin]:
    return [QuotaDefaultsPlugin()]


def quota_validating_plugins() -> list[ValidatingPlugin]:
    return [QuotaMetaCheckerPlugin()]
