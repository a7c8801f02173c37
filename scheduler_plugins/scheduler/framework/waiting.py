"""Pods parked by Permit (kube-scheduler's `waitingPodsMap`,
`pkg/scheduler/framework/runtime/waiting_pods_map.go`).

A Permit plugin that answers Wait parks the pod, reserved and assumed on its node, until every
waiting plugin allows it (then the binding cycle runs) or one rejects it (then it is unreserved and
forgotten), or its deadline passes (a rejection too). Another pod's cycle allows or rejects it
through the handle (`Handle.waiting`): that is how a gang is released all at once.

Nothing here runs on its own: whoever schedules (the simulator's loop, the extender's bind) reacts
to settled pods — `on_settle` callbacks tell it at once, `expire(now)` applies the deadlines of
its clock. The map holds only pods in a Permit wait, each removed once settled and handled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from scheduler_plugins.scheduler.framework.cycle_state import CycleState
from scheduler_plugins.scheduler.framework.status import SUCCESS, Code, Status
from scheduler_plugins.scheduler.podinfo import PodInfo

REASON_TIMEOUT = "rejected due to timeout after waiting {seconds:g}s at plugin {plugins}"


@dataclass
class WaitingPod:
    pod: PodInfo
    node_name: str
    state: CycleState
    deadline: float
    timeout: float
    pending: set[str]
    outcome: Status | None = None
    on_settle: list[Callable[[WaitingPod], None]] = field(default_factory=list)

    def allow(self, plugin: str) -> None:
        self.pending.discard(plugin)
        if not self.pending:
            self._settle(SUCCESS)

    def reject(self, plugin: str, message: str) -> None:
        self._settle(Status(Code.Unschedulable, (message,), plugin))

    def _settle(self, outcome: Status) -> None:
        if self.outcome is not None:
            return
        self.outcome = outcome
        for callback in list(self.on_settle):
            callback(self)


class WaitingPods:
    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, waiting: WaitingPod) -> None:
        self._pods[waiting.pod.key] = waiting

    def get(self, key: str) -> WaitingPod | None:
        return self._pods.get(key)

    def remove(self, key: str) -> None:
        self._pods.pop(key, None)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)

    def expire(self, now: float) -> None:
        """Reject every pod whose deadline has passed (kube-scheduler's per-pod timer)."""
        for waiting in self:
            if waiting.outcome is None and now >= waiting.deadline:
                plugins = ",".join(sorted(waiting.pending))
                waiting.reject(plugins, REASON_TIMEOUT.format(seconds=waiting.timeout, plugins=plugins))
