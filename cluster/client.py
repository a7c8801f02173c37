"""The one way every component gets an API client: a kubeconfig file, or the pod's service account."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException


def api_client(kubeconfig: Path | None, context: str | None = None) -> client.ApiClient:
    """A client from a kubeconfig file, or from the pod's service account when none is given."""
    if kubeconfig is not None:
        loaded: client.ApiClient = config.new_client_from_config(str(kubeconfig), context=context,
                                                                 persist_config=False)
        return loaded
    configuration = client.Configuration()
    config.load_incluster_config(client_configuration=configuration)
    return client.ApiClient(configuration)


def read_object(call: Callable[..., Any], *args: Any) -> dict[str, Any] | None:
    """The object a typed-client read returns, as a dict; None when it does not exist."""
    try:
        found: dict[str, Any] = json.loads(call(*args, _preload_content=False).data)
        return found
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
