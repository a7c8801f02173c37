"""A NodeSLO's spec checked with the slo-controller-config field rules (`rules.py`), so the node
agent refuses what the webhook refuses in the ConfigMap: a NodeSLO is that config rendered for one
node, and anyone who may write NodeSLOs could skip the ConfigMap and its validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from policies.apis.slo_config.rules import (
    CPU_BURST_STRATEGY,
    RESOURCE_QOS_STRATEGY,
    RESOURCE_THRESHOLD_STRATEGY,
    SYSTEM_STRATEGY,
    Schema,
    TypeMismatch,
    check_fields,
)

#: NodeSLO spec field -> the rules of the ConfigMap strategy it is rendered from
NODE_SLO_STRATEGIES: Final[tuple[tuple[str, Schema], ...]] = (
    ("resourceUsedThresholdWithBE", RESOURCE_THRESHOLD_STRATEGY),
    ("resourceQOSStrategy", RESOURCE_QOS_STRATEGY),
    ("cpuBurstStrategy", CPU_BURST_STRATEGY),
    ("systemStrategy", SYSTEM_STRATEGY),
)


def node_slo_failures(spec: Mapping[str, Any]) -> dict[str, str]:
    """`spec.<field path> -> reason` for every value the ConfigMap's rules refuse (empty: valid).
    A value of the wrong type is one failure at its strategy."""
    failures: dict[str, str] = {}
    for field, schema in NODE_SLO_STRATEGIES:
        strategy = spec.get(field)
        if strategy is None:
            continue
        where = f"spec.{field}"
        if not isinstance(strategy, Mapping):
            failures[where] = "must be an object"
            continue
        try:
            check_fields(strategy, schema, where, failures, partner_required=False)
        except TypeMismatch as exc:
            failures[where] = str(exc)
    return failures
