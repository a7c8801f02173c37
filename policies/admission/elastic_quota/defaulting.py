"""ElasticQuota defaulting on CREATE (Koordinator's `fillQuotaDefaultInformation`,
`pkg/webhook/elasticquota/quota_topology.go`)."""

from __future__ import annotations

import json
from typing import Any

from policies.admission.elastic_quota.tree import QuotaTree, resource_list
from policies.admission.plugin import Denied
from policies.apis.constants import (
    ANNOTATION_QUOTA_SHARED_WEIGHT,
    LABEL_QUOTA_PARENT,
    LABEL_QUOTA_TREE_ID,
    ROOT_QUOTA_NAME,
)
from policies.apis.objects import ensure_map, name_of, spec_of
from policies.apis.quantity import Quantity


def _resource_list_json(resources: dict[str, Quantity]) -> str:
    """Go's encoding of a ResourceList: keys sorted, canonical quantities, compact."""
    return json.dumps({k: resources[k].canonical() for k in sorted(resources)}, separators=(",", ":"))


def fill_quota_defaults(quota: dict[str, Any], tree: QuotaTree) -> None:
    """Parent (root by default), the parent's tree id, and a shared weight with exactly max's keys."""
    name = name_of(quota)
    if name == ROOT_QUOTA_NAME:
        return
    metadata = ensure_map(quota, "metadata")
    labels, annotations = ensure_map(metadata, "labels"), ensure_map(metadata, "annotations")
    if not labels.get(LABEL_QUOTA_PARENT):
        labels[LABEL_QUOTA_PARENT] = ROOT_QUOTA_NAME
    parent_name = labels[LABEL_QUOTA_PARENT]
    if not labels.get(LABEL_QUOTA_TREE_ID) and parent_name != ROOT_QUOTA_NAME:
        parent = tree.infos.get(parent_name)
        if parent is None:
            raise Denied(f"fill quota {name} failed, parent not exist")
        if parent.tree_id:
            labels[LABEL_QUOTA_TREE_ID] = parent.tree_id
    raw_max = spec_of(quota).get("max")
    max_quota = resource_list(raw_max, f"ElasticQuota {name}: spec.max")
    current = annotations.get(ANNOTATION_QUOTA_SHARED_WEIGHT)
    if not current:
        # A quota without spec.max gets the literal `null`, as Go marshals a nil map (docs/koordinator.md: kept).
        annotations[ANNOTATION_QUOTA_SHARED_WEIGHT] = "null" if raw_max is None else _resource_list_json(max_quota)
        return
    try:
        weights = resource_list(
            json.loads(current), f"ElasticQuota {name}: annotation {ANNOTATION_QUOTA_SHARED_WEIGHT}"
        )
    except ValueError as exc:  # Denied is not a ValueError, so only the JSON error lands here
        raise Denied(f"fillDefaultQuotaInfo unmarshal sharedWeight failed:{exc}") from exc
    fixed = {k: v for k, v in weights.items() if k in max_quota}
    fixed.update({k: v for k, v in max_quota.items() if k not in weights})
    if fixed.keys() != weights.keys():
        annotations[ANNOTATION_QUOTA_SHARED_WEIGHT] = _resource_list_json(fixed)
