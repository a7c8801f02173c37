"""DefaultPreBind (Koordinator's `pkg/scheduler/plugins/defaultprebind/plugin.go`): PreBind is a
no-op; `apply_patch` turns every PreBind modification of the pod (or Reservation) into one JSON
patch and applies it through the API client, retrying on conflict (409), throttling (429) and a
closed connection (code 0). A patched object that carries a deletionTimestamp yields Error "pod is
being deleted". Success ends the PreBindExtensions chain. An empty diff is Success without an API
call.
"""

from __future__ import annotations

from typing import Any

import jsonpatch

from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import ClientError, Handle
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status, error
from scheduler_plugins.scheduler.podinfo import PodInfo

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
        patch = jsonpatch.make_patch(original, modified).patch
        if not patch:
            return SUCCESS
        meta = original.get("metadata") or {}
        kind = original.get("kind") or "Pod"
        last: ClientError | None = None
        for _ in range(MAX_ATTEMPTS):
            try:
                patched = self.handle.client.patch(
                    kind, meta.get("namespace") or "default", meta.get("name", ""), patch
                )
            except ClientError as exc:
                last = exc
                if exc.code in RETRIABLE_CODES:
                    continue
                return error(f"failed to patch {kind.lower()}: {exc}")
            if (patched.get("metadata") or {}).get("deletionTimestamp"):
                return error("pod is being deleted")
            return SUCCESS
        return error(f"failed to patch {kind.lower()} after {MAX_ATTEMPTS} attempts: {last}")


def new(args: Any, handle: Handle) -> DefaultPreBind:
    return DefaultPreBind(handle)
