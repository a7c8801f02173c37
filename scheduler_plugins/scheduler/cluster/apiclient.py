"""`ApiServerClient`: the framework's API client when the extender follows a real API server.

PreBind's pod patch is a JSON patch on the pod, and Bind POSTs a v1 `Binding` to the pod's
`binding` subresource, as kube-scheduler's DefaultBinder does. After a successful bind the pod is
assumed in the `ClusterState` at once (kube-scheduler's AssumePod), so the very next filter counts
it; the watch's event for the bound pod replaces the assumed copy when it arrives. Calls block the
caller for at most the timeouts below: the framework is synchronous and the extender runs it on
its event loop, the only thread allowed to touch the cluster state.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from kubernetes.client import ApiClient

from colocate.cluster.eviction import EvictionClient, Outcome
from colocate.cluster.rest import ApiError, call
from policies.apis.constants import RESERVATION_KIND
from policies.apis.kinds import kind_named
from scheduler_plugins.clock import Clock, system_clock
from scheduler_plugins.scheduler.cluster.client import bound_copy
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.handle import ClientError

TIMEOUT = (5.0, 30.0)  # connect, read: kube-scheduler's binding calls are short; don't hang the loop


def _pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"


class ApiServerClient:
    def __init__(
        self, api: ApiClient, cluster: ClusterState, clock: Clock = system_clock, timeout: tuple[float, float] = TIMEOUT
    ) -> None:
        self.api, self.cluster, self.clock, self.timeout = api, cluster, clock, timeout
        self.evictions = EvictionClient(api, timeout)  # the Eviction version is discovered once

    def _call(self, method: str, path: str, body: Any, content_type: str = "application/json") -> dict[str, Any]:
        """One API request; any failure is a `ClientError` with the HTTP code (0: no response)."""
        try:
            return call(self.api, method, path, body, content_type, self.timeout)
        except ApiError as exc:
            raise ClientError(exc.code, str(exc)) from exc

    def patch(self, kind: str, namespace: str, name: str, patch: list[dict[str, Any]]) -> dict[str, Any]:
        """A JSON patch of a pod, or of a Reservation's status subresource (every op under /status)."""
        if kind == "Pod":
            return self._call("PATCH", _pod_path(namespace, name), patch, "application/json-patch+json")
        if kind == RESERVATION_KIND and all(str(op.get("path", "")).startswith("/status") for op in patch):
            path = f"{kind_named(kind).collection_path()}/{quote(name, safe='')}/status"
            return self._call("PATCH", path, patch, "application/json-patch+json")
        raise ClientError(404, f"{kind} {namespace}/{name}: the extender patches only pods and reservation status")

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if uid:
            metadata["uid"] = uid
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        self._call("POST", f"{_pod_path(namespace, name)}/binding", binding)
        pod, _ = self.cluster.find_pod(namespace, name)
        if pod is not None:
            self.cluster.bind(bound_copy(pod, node_name, self.clock), node_name)

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        """DELETE the pod with a UID precondition (a recreated pod of the same name is spared), as
        kube-scheduler deletes a preemption victim; the watch removes it from the state."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        self._call("DELETE", _pod_path(namespace, name), body)

    def evict_pod(self, namespace: str, name: str) -> None:
        """POST an Eviction of the version the server serves; the watch removes the pod from the state."""
        result = self.evictions.evict(namespace, name)
        if result.outcome is not Outcome.EVICTED:
            raise ClientError(result.code, result.message or result.outcome.value)
