"""Where the deploy manifests are, and what their webhook configurations must say.

The configurations are written by `colocate manifests webhooks` (webhook.configurations) from the
handler registry; `manifests/deploy/webhooks.yaml` is exactly that output.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from certs import names
from webhook.configurations import Deployment, webhook_entries, without_ca_bundle
from webhook.registry import MUTATING_TIMEOUT_SECONDS, Registry

REPO: Final = Path(__file__).resolve().parents[2]
MANIFESTS: Final = REPO / "manifests"
WEBHOOKS_FILE: Final = MANIFESTS / "deploy" / "webhooks.yaml"
NAMESPACE: Final = names.NAMESPACE
SERVICE: Final = names.SERVICE
MUTATING_TIMEOUT: Final = MUTATING_TIMEOUT_SECONDS


def expected_webhooks(registry: Registry, mutating: bool) -> list[dict[str, Any]]:
    return webhook_entries(registry, mutating, Deployment())


def comparable(webhook: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest entry without what the certificate controller fills in (caBundle)."""
    return without_ca_bundle(webhook)
