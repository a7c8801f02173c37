"""`InMemoryClient`: the API client of the simulator and the snapshot-backed extender.

Patches and bindings land in the in-memory `ClusterState` instead of an API server, with the same
failure surface (`ClientError` with an HTTP code) so DefaultPreBind's retries are exercised.
"""

from __future__ import annotations

from typing import Any

import jsonpatch

from policies.apis.constants import RESERVATION_KIND
from scheduler_plugins.clock import Clock, format_time, system_clock
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.handle import ClientError
from scheduler_plugins.scheduler.podinfo import PodInfo, clone


def bound_copy(pod: PodInfo, node_name: str, clock: Clock) -> PodInfo:
    """The pod as the API server stores it after a Binding: `spec.nodeName` set and a
    `PodScheduled=True` condition (what LoadAwareScheduling's assign cache reads its time from)."""
    obj = clone(pod.obj)
    obj.setdefault("spec", {})["nodeName"] = node_name
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": format_time(clock())})
    return pod.with_status_changes(obj)


class InMemoryClient:
    def __init__(self, cluster: ClusterState, clock: Clock = system_clock) -> None:
        self.cluster = cluster
        self.clock = clock
        self.patches: list[tuple[str, str, list[dict[str, Any]]]] = []
        self.bindings: list[tuple[str, str]] = []
        self.deletions: list[str] = []

    def patch(self, kind: str, namespace: str, name: str, patch: list[dict[str, Any]]) -> dict[str, Any]:
        if kind == RESERVATION_KIND:
            return self._patch_reservation(name, patch)
        if kind != "Pod":
            raise ClientError(404, f"{kind} {namespace}/{name} not found")
        pod, node_name = self.cluster.find_pod(namespace, name)
        if pod is None:
            raise ClientError(404, f"pods {namespace}/{name} not found")
        patched: dict[str, Any] = jsonpatch.apply_patch(pod.obj, patch)
        self.patches.append((namespace, name, patch))
        self._replace(pod, PodInfo(patched), node_name)
        return patched

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        pod, bound_to = self.cluster.find_pod(namespace, name)
        if pod is None:
            raise ClientError(404, f"pods {namespace}/{name} not found")
        if uid and (pod.metadata.get("uid") or uid) != uid:
            raise ClientError(409, f"pods {namespace}/{name}: uid mismatch")
        if bound_to and bound_to != node_name:
            raise ClientError(409, f"pod {namespace}/{name} is already assigned to node {bound_to}")
        self.bindings.append((f"{namespace}/{name}", node_name))
        self.cluster.bind(bound_copy(pod, node_name, self.clock), node_name)

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        pod, node_name = self.cluster.find_pod(namespace, name)
        if pod is None:
            raise ClientError(404, f"pods {namespace}/{name} not found")
        if uid and (pod.metadata.get("uid") or uid) != uid:
            raise ClientError(409, f"pods {namespace}/{name}: uid mismatch")
        self.deletions.append(f"{namespace}/{name}")
        self.cluster.delete_pod(pod.key, node_name or None)

    def evict_pod(self, namespace: str, name: str) -> None:
        """Offline there is no budget to honour: the pod goes."""
        pod, _ = self.cluster.find_pod(namespace, name)
        self.delete_pod(namespace, name, str(pod.metadata.get("uid") or "") if pod is not None else "")

    def _patch_reservation(self, name: str, patch: list[dict[str, Any]]) -> dict[str, Any]:
        info = self.cluster.reservations.infos.get(name)
        if info is None:
            raise ClientError(404, f"reservations {name} not found")
        old = dict(info.obj)
        patched: dict[str, Any] = jsonpatch.apply_patch(old, patch)
        self.patches.append(("", name, patch))
        self.cluster.object_put(RESERVATION_KIND, ("", name), patched, old, "client")
        return patched

    def _replace(self, old: PodInfo, new: PodInfo, node_name: str) -> None:
        if node_name:
            self.cluster.nodes[node_name].add_pod(new)
            self.cluster.reservations.pod_deleted(old)  # a pod pre-allocated to a reservation, or
            self.cluster.reservations.pod_bound(new)  # no longer (Unreserve): counted as it is now
        else:
            self.cluster.pending[old.key] = new
