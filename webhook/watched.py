"""Which kinds the webhook's routes read, so live mode lists and watches exactly those.

A route's `object_type` picks its rows here; the RBAC manifest is checked against it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cluster.kinds import WatchedKind
from policies.constants import PROFILE_KIND, SLO_CONFIG_NAME, SLO_CONFIG_NAMESPACE
from webhook.registry import Registry


@dataclass(frozen=True)
class RouteRead:
    watch: WatchedKind
    read_by: frozenset[str]  # Route.object_type values whose handlers read this kind


ROUTE_READS: Final = (
    RouteRead(WatchedKind.of(PROFILE_KIND), frozenset({"pod", "reservation"})),
    RouteRead(WatchedKind.of("Namespace"), frozenset({"pod"})),
    RouteRead(WatchedKind.of("PriorityClass"), frozenset({"pod", "reservation"})),
    RouteRead(WatchedKind.of("ElasticQuota"), frozenset({"pod", "elasticquota"})),
    RouteRead(WatchedKind.of("ConfigMap", namespace=SLO_CONFIG_NAMESPACE,
                             field_selector=f"metadata.name={SLO_CONFIG_NAME}"), frozenset({"node", "configmap"})),
    RouteRead(WatchedKind.of("Node"), frozenset({"configmap"})),
    RouteRead(WatchedKind.of("Pod"), frozenset({"elasticquota"})),
)
WATCHED_KINDS: Final = tuple(r.watch for r in ROUTE_READS)


def watched_kinds(registry: Registry) -> tuple[WatchedKind, ...]:
    """The kinds the routes of `registry` read, in table order."""
    object_types = {route.object_type for route in registry.routes}
    return tuple(r.watch for r in ROUTE_READS if r.read_by & object_types)
