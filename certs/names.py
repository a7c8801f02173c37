"""Koordinator's names for the webhook's Service, Secret and configurations (`pkg/webhook/util/`),
in one place.

Kept free of heavy imports so that building the CLI parser does not load the Kubernetes client.
"""

from typing import Final

MUTATING: Final = "koordinator-mutating-webhook-configuration"
VALIDATING: Final = "koordinator-validating-webhook-configuration"
NAMESPACE: Final = "koordinator-system"
SERVICE: Final = "koordinator-webhook-service"
SECRET: Final = "koordinator-webhook-certs"
TLS_TYPE: Final = "kubernetes.io/tls"
