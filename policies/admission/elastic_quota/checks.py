"""The quota checks of Koordinator's `pkg/webhook/elasticquota/quota_topology_check.go`: the quota
on its own (`validateQuotaSelfItem`) and in its tree (`validateQuotaTopology`).

Messages are Koordinator's (quota_topology_check.go), typos and spacing included. Where Go iterates a
map (random order) we go by sorted name so that the same input always gives the same message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from policies.admission.elastic_quota.tree import QuotaInfo, QuotaTree, ResourceList, resource_list
from policies.admission.plugin import Denied
from policies.apis.constants import (
    ANNOTATION_QUOTA_MAX_STRICT_CHECK_KEYS,
    ANNOTATION_QUOTA_SHARED_WEIGHT,
    ROOT_QUOTA_NAME,
)
from policies.apis.objects import annotations_of
from policies.apis.quantity import Quantity


def _negative(resources: ResourceList) -> str:
    """Go's `%v` of the negative resource names: `[cpu memory]`, or "" when none."""
    names = sorted(name for name, quantity in resources.items() if quantity.nanos < 0)
    return f"[{' '.join(names)}]" if names else ""


def check_quota_itself(quota: Mapping[str, Any], info: QuotaInfo) -> None:
    """Non-negative min/max/shared weight, min within max, max above used for strictly checked keys."""
    name = info.name
    if negative := _negative(info.max):
        raise Denied(f"{name} quota.Spec.Max's value < 0, in dimensions :{negative}")
    if negative := _negative(info.min):
        raise Denied(f"{name} quota.Spec.Min's value < 0, in dimensions :{negative}")
    shared_weight = annotations_of(quota).get(ANNOTATION_QUOTA_SHARED_WEIGHT)
    if shared_weight:
        weights = parse_shared_weight(shared_weight, name)
        if negative := _negative(weights):
            raise Denied(
                f"{name} quota.Annotation[{ANNOTATION_QUOTA_SHARED_WEIGHT}]'s value < 0, in dimension :{negative}"
            )
    for key in sorted(info.min):
        if key not in info.max:
            raise Denied(f"resourceKey {key} of quota {name} is included in min, which is not included in max")
        if info.max[key] < info.min[key]:
            raise Denied(f"resourceKey {key} of quota {name} min {info.min[key]} > max {info.max[key]}")
    used = resource_list((quota.get("status") or {}).get("used"), f"ElasticQuota {name}: status.used")
    for key in _strict_check_keys(quota, name):
        if key not in used:
            continue
        if key not in info.max:
            raise Denied(
                f"resourceKey {key} of quota {name} is included in used, which is not included in max "
                "but should check max >= used"
            )
        if info.max[key] < used[key]:
            raise Denied(f"resourceKey {key} of quota {name} max {info.max[key]} < used {used[key]}")


def parse_shared_weight(text: str, name: str) -> dict[str, Quantity]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise Denied(f"{name} quota.Annotation[{ANNOTATION_QUOTA_SHARED_WEIGHT}]'s value is invalid: {exc}") from exc
    return resource_list(value, f"ElasticQuota {name}: annotation {ANNOTATION_QUOTA_SHARED_WEIGHT}")


def _strict_check_keys(quota: Mapping[str, Any], name: str) -> list[str]:
    text = annotations_of(quota).get(ANNOTATION_QUOTA_MAX_STRICT_CHECK_KEYS)
    if not text:
        return []
    try:
        keys = json.loads(text)
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ValueError("expected a JSON array of resource names")
    except ValueError as exc:
        raise Denied(
            f"{name} quota.Annotation[{ANNOTATION_QUOTA_MAX_STRICT_CHECK_KEYS}]'s value is invalid: {exc}"
        ) from exc
    return keys


def _less_or_equal(a: ResourceList, b: ResourceList) -> bool:
    zero = Quantity(0)
    return all(a.get(k, zero) <= b.get(k, zero) for k in set(a) | set(b))


def _sum(lists: Iterable[ResourceList]) -> dict[str, Quantity]:
    total: dict[str, Quantity] = {}
    for resources in lists:
        for key, quantity in resources.items():
            total[key] = total[key] + quantity if key in total else quantity
    return total


def check_topology(tree: QuotaTree, old: QuotaInfo | None, new: QuotaInfo, old_namespaces: list[str]) -> None:
    """The quota against its parent and children (`validateQuotaTopology`); `old` is the stored info."""
    if new.name == ROOT_QUOTA_NAME:
        return
    if old is not None and old.is_parent != new.is_parent:
        if tree.children_of(old.name) and not new.is_parent:
            raise Denied(f"quota has children, isParent is forbidden to modify as false, quotaName:{old.name}")
        if new.is_parent and tree.has_bound_pods(old.name, old_namespaces):
            raise Denied(f"quota has bound pods, isParent is forbidden to modify as true, quotaName: {old.name}")
    _check_tree_id(tree, old, new)
    if new.parent == ROOT_QUOTA_NAME and not new.is_parent:
        return
    parent = tree.infos.get(new.parent) if new.parent != ROOT_QUOTA_NAME else None
    if new.parent != ROOT_QUOTA_NAME:
        if parent is None:
            raise Denied(f"{new.name} has parentName {new.parent} but not find parentInfo in quotaInfoMap")
        if not parent.is_parent:
            raise Denied(f"{new.name} has parentName {new.parent} but the parentQuotaInfo's IsParent is false")
    _check_resource_keys(tree, new, parent)
    _check_min_sums(tree, new, parent)


def _check_tree_id(tree: QuotaTree, old: QuotaInfo | None, new: QuotaInfo) -> None:
    if old is not None and old.tree_id != new.tree_id:
        raise Denied(f"{new.name} tree id changed [{old.tree_id}] vs [{new.tree_id}]")
    parent = tree.infos.get(new.parent) if new.parent != ROOT_QUOTA_NAME else None
    if parent is not None and new.tree_id != parent.tree_id:
        raise Denied(
            f"{new.name} tree id is different from parent {parent.name}, [{new.tree_id}] vs [{parent.tree_id}]"
        )
    for child_name in tree.children_of(new.name):
        child = tree.infos.get(child_name)
        if child is not None and child.tree_id != new.tree_id:
            raise Denied(
                f"{new.name} tree id is different from child {child.name}, [{new.tree_id}] vs [{child.tree_id}]"
            )


def _key_error(detail: str) -> Denied:
    return Denied(
        f"failed to check sub and parent group quotaKey, err: checkSubAndParentGroupQuotaKey failed: {detail}"
    )


def _check_resource_keys(tree: QuotaTree, new: QuotaInfo, parent: QuotaInfo | None) -> None:
    """Max keys equal to the parent's and children's, min keys included
    (gate ElasticQuotaEnableUpdateResourceKey off)."""
    if parent is not None:
        if set(parent.max) != set(new.max):
            raise _key_error(f"{parent.name}'s max keys are not the same with {new.name}'s")
        if not set(new.min) <= set(parent.min):
            raise _key_error(f"{new.name}'s min keys are not all included in {parent.name}'s")
    for child_name in tree.children_of(new.name):
        child = tree.infos.get(child_name)
        if child is None:
            continue
        if set(child.max) != set(new.max):
            raise _key_error(f"{child.name}'s max keys are not the same with {new.name}'s")
        if not set(child.min) <= set(new.min):
            raise _key_error(f"{child.name}'s min keys are not all included in {new.name}'s")


def _check_min_sums(tree: QuotaTree, new: QuotaInfo, parent: QuotaInfo | None) -> None:
    if new.allow_force_update or new.is_tree_root:
        return
    if parent is not None:
        siblings = (tree.infos[c].min for c in tree.children_of(parent.name) if c != new.name and c in tree.infos)
        if not _less_or_equal(_sum([*siblings, new.min]), parent.min):
            raise Denied(f"checkMinQuotaSum all brothers' MinQuota > parent MinQuota, parent: {parent.name}")
    children = [tree.infos[c].min for c in tree.children_of(new.name) if c in tree.infos]
    if children and not _less_or_equal(_sum(children), new.min):
        raise Denied(f"checkMinQuotaSum all children's MinQuota > current MinQuota, current: {new.name}")
