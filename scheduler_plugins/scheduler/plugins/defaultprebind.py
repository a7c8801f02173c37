"""DefaultPreBind (Koordinator's `pkg/scheduler/plugins/defaultprebind/plugin.go`): PreBind is a
no-op; `apply_patch` turns every PreBind modification of the pod (or Reservation) into one JSON
patch and applies it through the API client, retrying on conflict (409), throttling (429) and a
closed connection (code 0). A patched object that carries a deletionTimestamp yields Error "pod is
being deleted". Success ends the PreBindExtensions chain. An empty diff is Success without an API
call. A Reservation's reserve pod is no Pod of the API: what PreBind plugins wrote in its
annotations (the CPUs of `resource-status`, the GPUs of `device-allocated`) goes onto the
Reservation object (Koordinator's ApplyPatch for a reserve pod), where they are read back.
"""

from __future__ import annotations

from typing import Any

import jsonpatch

from policies.apis.constants import ANNOTATION_RESERVATION_NAME, RESERVATION_KIND
from policies.apis.objects import metadata_of
from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import ClientError, Handle
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status, error
from scheduler_plugins.scheduler.podinfo import PodInfo
from scheduler_plugins.scheduler.reservations import is_reserve_pod

NAME = "DefaultPreBind"
MAX_ATTEMPTS = 5
RETRIABLE_CODES = frozenset({0, 409, 429})


class DefaultPreBind:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return SUCCESS

    def apply_patch(self, state: CycleState, original: dict[str, Any], modified: dict[str, Any]) -> Status:
        if original == modified:
            return SUCCESS
        meta = metadata_of(original)
        kind = original.get("kind") or "Pod"
        if is_reserve_pod(PodInfo(original)):
            return self._patch_reservation(original, modified)
        patch = jsonpatch.make_patch(original, modified).patch
        if not patch:
            return SUCCESS
        return self._patch(kind, meta.get("namespace") or "default", meta.get("name", ""), patch)

    def _patch_reservation(self, original: dict[str, Any], modified: dict[str, Any]) -> Status:
        """The annotations PreBind added or changed on a reserve pod, onto its Reservation."""
        before = metadata_of(original).get("annotations") or {}
        after = metadata_of(modified).get("annotations") or {}
        changed = {k: v for k, v in after.items() if before.get(k) != v}
        if not changed:
            return SUCCESS
        name = str(before.get(ANNOTATION_RESERVATION_NAME) or "")
        info = self.handle.cluster.reservations.infos.get(name)
        current = dict((info.metadata.get("annotations") or {}) if info is not None else {})
        patch = [{"op": "add", "path": "/metadata/annotations", "value": {**current, **changed}}]
        return self._patch(RESERVATION_KIND, "", name, patch)

    def _patch(self, kind: str, namespace: str, name: str, patch: list[dict[str, Any]]) -> Status:
        last: ClientError | None = None
        for _ in range(MAX_ATTEMPTS):
            try:
                patched = self.handle.client.patch(kind, namespace, name, patch)
            except ClientError as exc:
                last = exc
                if exc.code in RETRIABLE_CODES:
                    continue
                return error(f"failed to patch {kind.lower()}: {exc}")
            if metadata_of(patched).get("deletionTimestamp"):
                return error("pod is being deleted")
            return SUCCESS
        return error(f"failed to patch {kind.lower()} after {MAX_ATTEMPTS} attempts: {last}")


def new(args: Any, handle: Handle) -> DefaultPreBind:
    return DefaultPreBind(handle)
