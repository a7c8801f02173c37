"""PrioritySort: the queue order the QoS classes need.

A pod goes first when its priority is higher (`spec.priority`, or the default value of its
`koordinator.sh/priority-class` band when no number is set), then when its Koordinator
sub-priority (`koordinator.sh/priority`) is higher, then when it was created earlier. Remaining
ties keep arrival order (the sort is stable).
"""

from __future__ import annotations

from typing import Any

from policies.apis.timestamps import parse_time
from scheduler_plugins.scheduler.framework.handle import Handle
from scheduler_plugins.scheduler.podinfo import PodInfo

NAME = "PrioritySort"


def sort_key(pod: PodInfo) -> tuple[int, int, float]:
    created = parse_time(pod.metadata.get("creationTimestamp"))
    return (-pod.priority, -pod.sub_priority, created if created is not None else float("inf"))


class PrioritySort:
    name = NAME

    def less(self, a: PodInfo, b: PodInfo) -> bool:
        return sort_key(a) < sort_key(b)


def new(args: Any, handle: Handle) -> PrioritySort:
    return PrioritySort()
