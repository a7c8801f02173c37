"""What the webhook configuration manifests must say, derived from the handler registry.

`manifests/deploy/webhooks.yaml` is checked against `expected_webhooks()`; when a route is added
to `webhook.registry.default_routes()`, `python -m tests.support.webhook_manifests` prints the
entries to paste. Every webhook also skips kube-system, colocate's own namespace and
`control-plane` namespaces: a webhook that admits its own pods deadlocks a cold cluster.
"""
from __future__ import annotations

import copy
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from webhook.registry import Registration, Registry, Route, default_routes

REPO: Final = Path(__file__).resolve().parents[2]
MANIFESTS: Final = REPO / "manifests"
WEBHOOKS_FILE: Final = MANIFESTS / "deploy" / "webhooks.yaml"
NAMESPACE: Final = "koordinator-system"
SERVICE: Final = "koordinator-webhook-service"
MUTATING_NAME: Final = "koordinator-mutating-webhook-configuration"
VALIDATING_NAME: Final = "koordinator-validating-webhook-configuration"
MUTATING_TIMEOUT: Final = 3
VALIDATING_TIMEOUT: Final = 5
EXCLUDED_NAMESPACES: Final = [
    {"key": "control-plane", "operator": "DoesNotExist"},
    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", NAMESPACE]},
]


def _namespace_selector(registration: Registration) -> dict[str, Any]:
    selector = copy.deepcopy(dict(registration.namespace_selector or {}))
    expressions = [e for e in selector.get("matchExpressions", []) if e not in EXCLUDED_NAMESPACES]
    selector["matchExpressions"] = expressions + copy.deepcopy(EXCLUDED_NAMESPACES)
    return selector


def webhook_entry(route: Route, registration: Registration) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": registration.name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": registration.failure_policy,
        "timeoutSeconds": MUTATING_TIMEOUT if route.mutating else VALIDATING_TIMEOUT,
        "clientConfig": {"service": {"name": SERVICE, "namespace": NAMESPACE, "path": route.path, "port": 443}},
        "rules": [{"apiGroups": [route.api_group], "apiVersions": [route.api_version],
                   "resources": [route.rule_resource], "operations": list(registration.operations)}],
        "namespaceSelector": _namespace_selector(registration),
    }
    if registration.object_selector:
        entry["objectSelector"] = copy.deepcopy(dict(registration.object_selector))
    if route.mutating:
        entry["reinvocationPolicy"] = "Never"
    return entry


def expected_webhooks(registry: Registry, mutating: bool) -> list[dict[str, Any]]:
    return [webhook_entry(route, reg) for route in registry.routes if route.mutating == mutating
            for reg in route.registrations]


def configuration(registry: Registry, mutating: bool) -> dict[str, Any]:
    kind = "MutatingWebhookConfiguration" if mutating else "ValidatingWebhookConfiguration"
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": MUTATING_NAME if mutating else VALIDATING_NAME,
                         "labels": {"app.kubernetes.io/name": "colocate"}},
            "webhooks": expected_webhooks(registry, mutating)}


def comparable(webhook: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest entry without what the certificate controller fills in (caBundle)."""
    entry = copy.deepcopy(dict(webhook))
    entry.get("clientConfig", {}).pop("caBundle", None)
    return entry


if __name__ == "__main__":
    registry = default_routes()
    header = "# Generated from webhook.registry.default_routes() by `python -m tests.support.webhook_manifests`;\n" \
             "# tests/cluster/test_manifests.py keeps it in step with the registry.\n"
    sys.stdout.write(header + yaml.safe_dump_all([configuration(registry, True), configuration(registry, False)],
                                                 sort_keys=False))
