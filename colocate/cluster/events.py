"""Kubernetes Events about the objects a component acts on (an eviction, a suppression).

Best effort, as client-go's recorder is: an Event that cannot be written is logged and dropped,
never an error of the action it describes.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from kubernetes.client import ApiClient

from colocate.cluster.rest import request
from policies.apis.objects import metadata_of

log = logging.getLogger("colocate.events")
TIMEOUT = (5.0, 10.0)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_for(
    involved: Mapping[str, Any],
    type_: str,
    reason: str,
    message: str,
    component: str,
    host: str = "",
    now: Callable[[], str] = _now,
) -> dict[str, Any]:
    """A core/v1 Event about `involved` (a Pod, a Node)."""
    metadata = metadata_of(involved)
    namespace = str(metadata.get("namespace") or "default")
    name = str(metadata.get("name") or "")
    at = now()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": str(involved.get("apiVersion") or "v1"),
            "kind": str(involved.get("kind")),
            "name": name,
            "namespace": str(metadata.get("namespace") or ""),
            "uid": str(metadata.get("uid") or ""),
        },
        "type": type_,
        "reason": reason,
        "message": message[:1024],
        "source": {"component": component, **({"host": host} if host else {})},
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    }


class EventRecorder:
    def __init__(self, api: ApiClient, component: str, host: str = "") -> None:
        self.api, self.component, self.host = api, component, host

    def record(self, involved: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        event = event_for(involved, type_, reason, message, self.component, self.host)
        namespace = event["metadata"]["namespace"]
        try:
            status, _ = request(
                self.api, "POST", f"/api/v1/namespaces/{quote(namespace, safe='')}/events", event, timeout=TIMEOUT
            )
            if not 200 <= status < 300:
                log.warning("event %s about %s not recorded: HTTP %s", reason, event["involvedObject"]["name"], status)
        except Exception as exc:  # best effort: the action it describes has happened
            log.warning("event %s about %s not recorded: %s", reason, event["involvedObject"]["name"], exc)
