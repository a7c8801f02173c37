"""The one way every component gets an API client: a kubeconfig file, or the pod's service account."""
from __future__ import annotations

from pathlib import Path

from kubernetes import client, config


def api_client(kubeconfig: Path | None, context: str | None = None) -> client.ApiClient:
    """A client from a kubeconfig file, or from the pod's service account when none is given."""
    if kubeconfig is not None:
        loaded: client.ApiClient = config.new_client_from_config(str(kubeconfig), context=context,
                                                                 persist_config=False)
        return loaded
    configuration = client.Configuration()
    config.load_incluster_config(client_configuration=configuration)
    return client.ApiClient(configuration)
