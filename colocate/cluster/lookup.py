"""One object read from the API server by name, for a request the cached state cannot answer yet.

The webhook judges against its watched snapshot; a quota tree applied in one go sends a child ~20 ms
after its parent, before the watch has shown the parent. Rather than refuse it, the quota webhook
reads the parent it names once (`webhook.live_reads`). Each read is bounded: one per request, a
short timeout, a counter by result and a log line; it never blocks the event loop (run it in a
thread).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

from kubernetes.client import ApiClient

from colocate.cluster.rest import ApiError, call
from policies.apis.kinds import kind_named

log = logging.getLogger("colocate.lookup")

#: connect, read: an admission waits for this read, and the API server gives the webhook 10 s in all
LOOKUP_TIMEOUT: Final = (1.0, 2.0)


class ObjectLookup:
    """Finds an object of a kind by name, in any namespace (ElasticQuota names are unique across
    namespaces in Koordinator's quota tree)."""

    def __init__(self, api: ApiClient, timeout: tuple[float, float] = LOOKUP_TIMEOUT) -> None:
        self.api, self.timeout = api, timeout

    def find(self, kind: str, name: str) -> Mapping[str, Any] | None:
        """The object named `name`, None when there is none; an `ApiError` when the server does not
        answer in time or refuses."""
        table = kind_named(kind)
        path = f"{table.collection_path('')}?fieldSelector=metadata.name%3D{quote(name, safe='')}&limit=2"
        items = call(self.api, "GET", path, timeout=self.timeout).get("items") or []
        if not items:
            return None
        found: dict[str, Any] = dict(items[0])
        found.setdefault("apiVersion", table.api_version)
        found.setdefault("kind", kind)
        return found


__all__ = ["ApiError", "LOOKUP_TIMEOUT", "ObjectLookup"]
