"""Evicting a pod through the Eviction API (`policy/v1`), as every colocate component does.

The descheduler and the koordlet both evict; neither deletes a pod directly, so PodDisruptionBudgets
are honoured by the API server. The outcome is a value: a 429 (a disruption budget allows no more
now) is `BLOCKED` — a skip with the server's reason, retried on a later round — not an error.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from kubernetes.client import ApiClient

from colocate.cluster.rest import TIMEOUT, ApiError, message_of, request


class Outcome(enum.Enum):
    EVICTED = "evicted"
    BLOCKED = "blocked"  # 429: a PodDisruptionBudget allows no disruption now
    GONE = "gone"  # 404: nothing left to evict
    FAILED = "failed"


@dataclass(frozen=True)
class EvictionResult:
    outcome: Outcome
    message: str = ""
    code: int = 0  # the HTTP status (0: no answer)


def eviction_body(namespace: str, name: str, grace_period_seconds: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }
    if grace_period_seconds is not None:
        body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
    return body


class EvictionClient:
    """POSTs Evictions; blocks for at most `timeout` (call it off the event loop)."""

    def __init__(self, api: ApiClient, timeout: tuple[float, float] = TIMEOUT) -> None:
        self.api, self.timeout = api, timeout

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/eviction"
        try:
            status, data = request(
                self.api, "POST", path, eviction_body(namespace, name, grace_period_seconds), timeout=self.timeout
            )
        except ApiError as exc:
            return EvictionResult(Outcome.FAILED, str(exc), exc.code)
        if 200 <= status < 300:
            return EvictionResult(Outcome.EVICTED, "", status)
        message = message_of(data) or f"HTTP {status}"
        if status == 429:
            return EvictionResult(Outcome.BLOCKED, message, status)
        if status == 404:
            return EvictionResult(Outcome.GONE, message, status)
        return EvictionResult(Outcome.FAILED, message, status)
