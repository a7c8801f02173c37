"""What the agent refused to touch, said three ways: a log line, `koordlet_cgroup_path_refusals_total
{reason}` and a Warning Event on the pod.

A refused pod is seen again every round; each distinct refusal (the pod, the reason, the value) is
told once, and the set remembered is bounded so a stream of hostile pods cannot grow it. Events are
API calls: they are queued in an `EventQueue` (bounded) and sent by its `flush`, which the agent
calls from its worker threads, never from the event loop.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from collections.abc import Mapping
from typing import Any, Final, Protocol

from policies.apis.objects import metadata_of
from scheduler_plugins.koordlet.cgroups.ids import Refusal, RefusedPath

log = logging.getLogger("colocate.koordlet.refusals")
REMEMBERED: Final = 4096
QUEUED_EVENTS: Final = 256
EVENT_REASON: Final = "CgroupPathRefused"


class Recorder(Protocol):
    def record(self, involved: Mapping[str, Any], type_: str, reason: str, message: str) -> None: ...


class CounterFamily(Protocol):
    def labels(self, *values: str) -> Any: ...


class EventQueue:
    """Warning Events queued on the loop and sent from a worker thread (`flush`); bounded."""

    def __init__(self, recorder: Recorder | None = None) -> None:
        self.recorder = recorder
        self._events: deque[tuple[Mapping[str, Any], str, str]] = deque(maxlen=QUEUED_EVENTS)

    def warn(self, involved: Mapping[str, Any], reason: str, message: str) -> None:
        self._events.append((involved, reason, message))

    def flush(self) -> None:
        """Send the queued Events (blocking: a worker thread calls it)."""
        while self._events:
            involved, reason, message = self._events.popleft()
            if self.recorder is not None:
                self.recorder.record(involved, "Warning", reason, message)


class Refusals:
    def __init__(self, counter: CounterFamily, events: EventQueue) -> None:
        self.counter, self.events = counter, events
        self._seen: OrderedDict[tuple[str, str, str], None] = OrderedDict()

    def _first_time(self, key: tuple[str, str, str]) -> bool:
        if key in self._seen:
            self._seen.move_to_end(key)
            return False
        self._seen[key] = None
        if len(self._seen) > REMEMBERED:
            self._seen.popitem(last=False)
        return True

    def pod(self, pod: Mapping[str, Any], refused: RefusedPath) -> None:
        """A pod field refused as a path (its UID, a container ID)."""
        metadata = metadata_of(pod)
        who = f"{metadata.get('namespace') or 'default'}/{metadata.get('name') or ''}"
        if not self._first_time((who, refused.reason, str(refused))):
            return
        self.counter.labels(refused.reason).inc()
        message = f"koordlet refused a cgroup path of pod {who}: {refused}"
        log.warning("%s", message)
        self.events.warn(pod, EVENT_REASON, message)

    def outside(self, path: str, pod: Mapping[str, Any] | None = None) -> None:
        """A resolved path outside the cgroup root (a symlink in the hierarchy, a bad NodeSLO path)."""
        if not self._first_time(("", Refusal.OUTSIDE_ROOT, path)):
            return
        self.counter.labels(Refusal.OUTSIDE_ROOT).inc()
        message = f"koordlet refused {path[:200]}: it resolves outside the cgroup root"
        log.error("%s", message)
        if pod is not None:
            self.events.warn(pod, EVENT_REASON, message)
