"""Evicting a pod through the Eviction API, as every colocate component does.

The descheduler and the koordlet both evict; neither deletes a pod directly, so PodDisruptionBudgets
are honoured by the API server. The outcome is a value: a 429 (a disruption budget allows no more
now) is `BLOCKED` — a skip with the server's reason, retried on a later round — not an error.

The Eviction's version is the one the server serves for `pods/eviction`, found by discovery once per
client, as Koordinator's evictor does (`pkg/util/pod_evict.go` `SupportEviction`): `policy/v1` on
Kubernetes 1.22 and later, `policy/v1beta1` before (1.20 answers a `policy/v1` Eviction with 400).
"""

from __future__ import annotations

import enum
import logging
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from kubernetes.client import ApiClient

from colocate.cluster.rest import TIMEOUT, ApiError, message_of, request

log = logging.getLogger("colocate.eviction")

POLICY_V1 = "policy/v1"
EVICTION_SUBRESOURCE = "pods/eviction"


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

    @property
    def permanent(self) -> bool:
        """The server refused the request itself (400 a version it does not serve, 403, 422): asking
        again cannot succeed. A 429, a timeout, a conflict or a 5xx may pass later."""
        return self.outcome is Outcome.FAILED and 400 <= self.code < 500 and self.code not in (408, 409, 429)


def eviction_body(
    namespace: str, name: str, grace_period_seconds: int | None = None, group_version: str = POLICY_V1
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": group_version,
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }
    if grace_period_seconds is not None:
        body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
    return body


class EvictionClient:
    """POSTs Evictions; blocks for at most `timeout` (call it off the event loop)."""

    def __init__(
        self, api: ApiClient, timeout: tuple[float, float] = TIMEOUT, group_version: str | None = None
    ) -> None:
        """`group_version`: the Eviction's version, pinned (None: discovered on first use)."""
        self.api, self.timeout = api, timeout
        self._group_version = group_version
        self._lock = threading.Lock()

    def group_version(self) -> str:
        """The Eviction version the server serves, discovered on first use and kept; a discovery
        that fails is asked again next time (meanwhile `policy/v1`, what current servers serve)."""
        with self._lock:
            if self._group_version is None:
                try:
                    self._group_version = discover_eviction_version(self.api, self.timeout)
                    log.info("evicting with %s Evictions (discovered)", self._group_version)
                except ApiError as exc:
                    log.warning("cannot discover the Eviction version (%s); trying %s", exc, POLICY_V1)
                    return POLICY_V1
            return self._group_version

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/eviction"
        body = eviction_body(namespace, name, grace_period_seconds, self.group_version())
        try:
            status, data = request(self.api, "POST", path, body, timeout=self.timeout)
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


def discover_eviction_version(api: ApiClient, timeout: tuple[float, float] = TIMEOUT) -> str:
    """`SupportEviction`: the group/version of the `pods/eviction` subresource in the core API's
    discovery, else the `policy` group's preferred version, else `policy/v1`."""
    resources = _discovered(api, "/api/v1", timeout)
    for resource in resources.get("resources") or ():
        if resource.get("name") == EVICTION_SUBRESOURCE and resource.get("kind") == "Eviction":
            group, version = resource.get("group"), resource.get("version")
            if group and version:
                return f"{group}/{version}"
    preferred = (_discovered(api, "/apis/policy", timeout).get("preferredVersion") or {}).get("groupVersion")
    return str(preferred or POLICY_V1)


def _discovered(api: ApiClient, path: str, timeout: tuple[float, float]) -> dict[str, Any]:
    status, data = request(api, "GET", path, timeout=timeout)
    if status == 404:
        return {}
    if not 200 <= status < 300 or not isinstance(data, dict):
        raise ApiError(status, f"GET {path}: {message_of(data) or f'HTTP {status}'}")
    return data
