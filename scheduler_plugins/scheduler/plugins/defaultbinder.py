"""DefaultBinder: binds the pod through the API client (a Binding subresource POST upstream; the
in-memory client of the simulator records the binding in the cluster state)."""

from __future__ import annotations

from typing import Any

from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.handle import ClientError, Handle
from scheduler_plugins.scheduler.framework.status import SUCCESS, Status, error
from scheduler_plugins.scheduler.podinfo import PodInfo

NAME = "DefaultBinder"


class DefaultBinder:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        try:
            self.handle.client.bind(pod.namespace, pod.name, pod.metadata.get("uid", ""), node_name)
        except ClientError as exc:
            return error(f"binding rejected: {exc}")
        return SUCCESS


def new(args: Any, handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)
