"""What an API server runs for one object: every mutating webhook, then every validating one.

Each route of the object's kind is taken in the registry's order (mutating first), and each of its
registrations is called only when kube-apiserver would call it (`webhook.dispatch`: the operation,
the objectSelector on the object or old object, the namespaceSelector on the namespace's labels in
the snapshot). One difference by design: `apply` is given an object, not an API request, so every
route of the kind sees it as the resource it is registered for (a Node goes through the
`nodes/status` mutation and the `nodes` validation alike, spec section 15).

`colocate apply` uses this; the tests use it to check that the server and `apply` agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from policies.admission.plugin import AdmissionRequest, Effect, GroupVersionResource, default_rand_int
from policies.admission.snapshot import ClusterSnapshot
from policies.admission.warn_only import warning_lines
from policies.apis.kinds import KINDS
from webhook.admission import run_route
from webhook.registry import Registry


class UnknownKind(ValueError):
    """No registered webhook admits objects of this kind."""


@dataclass
class ChainResult:
    allowed: bool
    object: dict[str, Any] | None
    code: int = 200
    message: str = ""
    denied_by: str = ""  # path of the route that refused
    matched_profiles: list[str] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    called: list[str] = field(default_factory=list)  # webhook names, in call order
    not_called: list[tuple[str, str]] = field(default_factory=list)  # (webhook name, why not)
    warnings: list[str] = field(default_factory=list)  # what kubectl would print as "Warning: ..."


def request_for(
    obj: dict[str, Any],
    registry: Registry,
    operation: str = "CREATE",
    old_object: dict[str, Any] | None = None,
    uid: str = "colocate-apply",
) -> AdmissionRequest:
    """The AdmissionRequest an API server would send for `obj`."""
    kind = str(obj.get("kind") or (old_object or {}).get("kind") or "")
    routes = registry.for_kind(kind)
    if not routes:
        raise UnknownKind(f"no webhook admits kind {kind or '(none)'}; known kinds: {', '.join(registry.kinds())}")
    route = routes[0]
    metadata = (obj or old_object or {}).get("metadata") or {}
    namespaced = KINDS[kind].namespaced if kind in KINDS else True
    return AdmissionRequest(
        uid=uid,
        operation=operation,
        resource=GroupVersionResource(route.api_group, route.api_version, route.resource),
        sub_resource=route.sub_resource,
        kind=kind,
        namespace=str(metadata.get("namespace") or "") if namespaced else "",
        name=str(metadata.get("name") or ""),
        object=None if operation == "DELETE" else obj,
        old_object=old_object,
    )


def run_chain(
    request: AdmissionRequest,
    registry: Registry,
    cluster: ClusterSnapshot,
    *,
    rand_int: Callable[[int], int] = default_rand_int,
    explain: bool = False,
    audit: bool = False,
) -> ChainResult:
    """Mutate through each mutating webhook that would be called, then validate the result.

    `audit`: the object was admitted before and is evaluated again (`policies.admission.plugin.AdmissionContext`).
    """
    current = request
    result = ChainResult(True, dict(request.object) if request.object else None)
    for route in registry.for_kind(request.kind):
        # Each registration sees the resource it is registered for (nodes/status vs nodes).
        current = replace(
            current,
            resource=GroupVersionResource(route.api_group, route.api_version, route.resource),
            sub_resource=route.sub_resource,
        )
        for webhook in route.webhooks:
            # Matched on the object as the earlier mutating webhooks left it, as kube-apiserver does.
            why_not = webhook.why_not_called(current, cluster.namespace_labels)
            if why_not:
                result.not_called.append((webhook.name, why_not))
                continue
            result.called.append(webhook.name)
            outcome = run_route(route, current, cluster, rand_int=rand_int, explain=explain, audit=audit)
            result.matched_profiles.extend(outcome.matched_profiles)
            result.effects.extend(outcome.effects or [])
            result.warnings.extend(warning_lines(outcome.warnings))
            if not outcome.allowed:
                result.allowed, result.code, result.message = False, outcome.code, outcome.message
                result.denied_by = route.path
                return result
            if route.mutating and outcome.object is not None and current.object is not None:
                current = replace(current, object=outcome.object)
                result.object = outcome.object
    return result
