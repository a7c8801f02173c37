"""The Mutating/ValidatingWebhookConfiguration objects, written from the handler registry.

`colocate manifests webhooks` prints them; `manifests/deploy/webhooks.yaml` is exactly its output
(a test compares the two), so the configurations never drift from the routes the server serves.

Everything per webhook comes from its `Registration` (name, operations, failure policy, selectors,
AdmissionReview versions, side effects, timeout, reinvocation) and its `Route` (path, group,
version, resource). The deployment adds two things the registry does not know: the Service the API
server calls, and namespaces no webhook may admit: `kube-system`, the webhook's own namespace and
namespaces labelled `control-plane`, because a webhook that must admit its own pods (or the
system's) before it runs deadlocks a cold cluster. `colocate apply` honours the registry's
selectors only (webhook.chain); this exclusion is the deployment's.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TextIO

import yaml

from certs import names
from colocate.cli.output import add_output
from colocate.cli.parser import Subparsers, add_command_group
from webhook.dispatch import NAMESPACE_NAME_LABEL
from webhook.registry import Registration, Registry, Route, default_routes

API_VERSION: Final = "admissionregistration.k8s.io/v1"
MUTATING_KIND: Final = "MutatingWebhookConfiguration"
VALIDATING_KIND: Final = "ValidatingWebhookConfiguration"
HEADER: Final = (
    "# Generated from webhook.registry.default_routes() by `colocate manifests webhooks`; do not edit.\n"
    "# tests/webhook/test_configurations.py checks that this file is exactly that command's output.\n"
)


@dataclass(frozen=True)
class Deployment:
    """Where the webhook runs: the Service the API server calls, and the configurations' names."""

    namespace: str = names.NAMESPACE
    service: str = names.SERVICE
    port: int = 443
    mutating_name: str = names.MUTATING
    validating_name: str = names.VALIDATING

    def excluded_namespaces(self, registration: Registration) -> list[dict[str, Any]]:
        """matchExpressions a webhook's namespaceSelector ends with: kube-system, the control plane
        and the webhook's own namespace, except for a registration whose objects live there."""
        if registration.in_own_namespace:
            return [{"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": ["kube-system"]}]
        return [
            {"key": "control-plane", "operator": "DoesNotExist"},
            {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": ["kube-system", self.namespace]},
        ]


def namespace_selector(registration: Registration, deployment: Deployment) -> dict[str, Any]:
    """The registration's namespaceSelector with the deployment's exclusions appended (once each)."""
    selector = copy.deepcopy(dict(registration.namespace_selector or {}))
    exclusions = deployment.excluded_namespaces(registration)
    expressions = [e for e in selector.get("matchExpressions", []) if e not in exclusions]
    selector["matchExpressions"] = expressions + exclusions
    return selector


def webhook_entry(route: Route, registration: Registration, deployment: Deployment) -> dict[str, Any]:
    """One element of `webhooks`: what the API server needs to call `route` for `registration`."""
    entry: dict[str, Any] = {
        "name": registration.name,
        "admissionReviewVersions": list(registration.admission_review_versions),
        "sideEffects": registration.side_effects,
        "failurePolicy": registration.failure_policy,
        "timeoutSeconds": route.timeout_seconds(registration),
        "clientConfig": {
            "service": {
                "name": deployment.service,
                "namespace": deployment.namespace,
                "path": route.path,
                "port": deployment.port,
            }
        },
        "rules": [
            {
                "apiGroups": [route.api_group],
                "apiVersions": [route.api_version],
                "resources": [route.rule_resource],
                "operations": list(registration.operations),
            }
        ],
        "namespaceSelector": namespace_selector(registration, deployment),
    }
    if registration.object_selector:
        entry["objectSelector"] = copy.deepcopy(dict(registration.object_selector))
    if route.mutating:
        entry["reinvocationPolicy"] = registration.reinvocation_policy
    return entry


def webhook_entries(registry: Registry, mutating: bool, deployment: Deployment) -> list[dict[str, Any]]:
    """In registry order: kube-apiserver calls the webhooks of one configuration in this order."""
    return [
        webhook_entry(route, registration, deployment)
        for route in registry.routes
        if route.mutating == mutating
        for registration in route.registrations
    ]


def configuration(registry: Registry, mutating: bool, deployment: Deployment) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": MUTATING_KIND if mutating else VALIDATING_KIND,
        "metadata": {
            "name": deployment.mutating_name if mutating else deployment.validating_name,
            "labels": {"app.kubernetes.io/name": "colocate"},
        },
        "webhooks": webhook_entries(registry, mutating, deployment),
    }


def configurations(registry: Registry, deployment: Deployment | None = None) -> list[dict[str, Any]]:
    """The MutatingWebhookConfiguration, then the ValidatingWebhookConfiguration."""
    deployment = deployment or Deployment()
    return [configuration(registry, True, deployment), configuration(registry, False, deployment)]


def render(objects: list[dict[str, Any]], output: str = "yaml") -> str:
    """YAML documents under a generated-file header, or one JSON `List` (both `kubectl apply -f`-able)."""
    if output == "json":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2) + "\n"
    return HEADER + yaml.safe_dump_all(objects, sort_keys=False)


def without_ca_bundle(webhook: Mapping[str, Any]) -> dict[str, Any]:
    """A webhook entry as written here, from one as found in a cluster (the caBundle is injected later)."""
    entry = copy.deepcopy(dict(webhook))
    entry.get("clientConfig", {}).pop("caBundle", None)
    return entry


def _webhooks(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    deployment = Deployment(namespace=args.cert_namespace, service=args.cert_service)
    (stdout or sys.stdout).write(render(configurations(default_routes(), deployment), args.output))
    return 0


def register_commands(subparsers: Subparsers) -> None:
    kinds = add_command_group(
        subparsers,
        "manifests",
        help="print manifests derived from the code",
        description="Print Kubernetes manifests that colocate derives from its own "
        "tables, ready for kubectl apply -f -.",
    )
    webhooks = kinds.add_parser(
        "webhooks",
        help="the webhook configurations, from the handler registry",
        description="Print the MutatingWebhookConfiguration and "
        "ValidatingWebhookConfiguration for every registered route "
        "(caBundle is left to the certificate controller).",
    )
    # The same spelling as `serve` and `certs` use for where the webhook runs.
    webhooks.add_argument(
        "--cert-namespace",
        default=names.NAMESPACE,
        metavar="NS",
        help=f"namespace of the webhook's Service, never admitted itself (default {names.NAMESPACE})",
    )
    webhooks.add_argument(
        "--cert-service", default=names.SERVICE, metavar="NAME", help=f"the webhook's Service (default {names.SERVICE})"
    )
    add_output(webhooks, ("yaml", "json"), "yaml")
    webhooks.set_defaults(func=_webhooks)
