"""The API-server side of the certificates: the Secret and the two webhook configurations' caBundle.

Synchronous calls with the official client (the CLI is synchronous; `serve` runs them in a thread).
Objects stay JSON dicts. Every write is skipped when it would change nothing, so a rotation that
runs every minute costs reads only, and a repeated `certs rotate` is a no-op.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from certs.material import Material, secret_data
from certs.names import MUTATING, NAMESPACE, SECRET, TLS_TYPE, VALIDATING
from colocate.cluster.client import read_object


def ca_bundle_patch(configuration: Mapping[str, Any], bundle: str) -> list[dict[str, Any]]:
    """JSON patch setting every webhook's caBundle to `bundle` (base64); empty when all already are."""
    return [
        {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle}
        for i, webhook in enumerate(configuration.get("webhooks") or ())
        if (webhook.get("clientConfig") or {}).get("caBundle") != bundle
    ]


@dataclass
class Cluster:
    api: client.ApiClient
    namespace: str = NAMESPACE
    secret: str = SECRET

    def __post_init__(self) -> None:
        self.core = client.CoreV1Api(self.api)
        self.admission = client.AdmissionregistrationV1Api(self.api)

    def read_secret(self) -> dict[str, Any] | None:
        return read_object(self.core.read_namespaced_secret, self.secret, self.namespace)

    def webhook_configurations(self) -> list[dict[str, Any]]:
        """Both colocate configurations that exist (a missing one is simply not patched)."""
        found = [
            read_object(self.admission.read_mutating_webhook_configuration, MUTATING),
            read_object(self.admission.read_validating_webhook_configuration, VALIDATING),
        ]
        return [c for c in found if c is not None]

    def patch_ca_bundles(self, bundle_pem: bytes) -> list[str]:
        """Make every webhook trust exactly `bundle_pem`; the names of the configurations written."""
        bundle = base64.b64encode(bundle_pem).decode()
        patched = []
        for configuration in self.webhook_configurations():
            patch = ca_bundle_patch(configuration, bundle)
            if not patch:
                continue
            # Guard against a concurrent edit of the list the indices refer to: a 409/422 fails the run.
            patch.insert(
                0,
                {
                    "op": "test",
                    "path": "/metadata/resourceVersion",
                    "value": configuration["metadata"]["resourceVersion"],
                },
            )
            name = configuration["metadata"]["name"]
            if configuration.get("kind") == "ValidatingWebhookConfiguration" or name == VALIDATING:
                self.admission.patch_validating_webhook_configuration(name, patch, _preload_content=False)
            else:
                self.admission.patch_mutating_webhook_configuration(name, patch, _preload_content=False)
            patched.append(name)
        return patched

    def write_secret(self, material: Material, existing: dict[str, Any] | None) -> str:
        """Store `material` as a kubernetes.io/tls Secret: "unchanged", "created", "updated" or "replaced".

        A Secret's type cannot change, so one of another type (koord-manager writes Opaque ones) is
        deleted and created again rather than left in a shape the Deployment cannot mount.
        """
        data = secret_data(material)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": TLS_TYPE,
            "metadata": {
                "name": self.secret,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/name": "colocate"},
            },
            "data": data,
        }
        if existing is None:
            self.core.create_namespaced_secret(self.namespace, body, _preload_content=False)
            return "created"
        if existing.get("type", "Opaque") != TLS_TYPE:
            preconditions = client.V1Preconditions(
                uid=existing["metadata"].get("uid"), resource_version=existing["metadata"].get("resourceVersion")
            )
            self.core.delete_namespaced_secret(
                self.secret,
                self.namespace,
                body=client.V1DeleteOptions(preconditions=preconditions),
                _preload_content=False,
            )
            self.core.create_namespaced_secret(self.namespace, body, _preload_content=False)
            return "replaced"
        if existing.get("data") == data:
            return "unchanged"
        metadata = existing["metadata"]
        body["metadata"] = {
            **{k: metadata[k] for k in ("labels", "annotations", "resourceVersion") if k in metadata},
            "name": self.secret,
            "namespace": self.namespace,
        }
        self.core.replace_namespaced_secret(self.secret, self.namespace, body, _preload_content=False)
        return "updated"
