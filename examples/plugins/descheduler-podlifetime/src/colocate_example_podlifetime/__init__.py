"""PodLifeTime: evict the pods that have run longer than `maxPodLifeTimeSeconds`.

The descheduler's PodLifeTime plugin, as a package. A Deschedule plugin: each round it looks at the
pods on the candidate nodes, and asks the Evictor (which applies the profile's filters, the limits
and dry run) to evict the old ones. Age is counted from `status.startTime`, else the creation time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from colocate.api.descheduler import (
    SUCCESS,
    ConfigError,
    EvictOptions,
    Fields,
    Handle,
    Object,
    PluginSpec,
    Status,
)

NAME = "PodLifeTime"
DEFAULT_MAX_POD_LIFE_TIME_SECONDS = 86400


@dataclass(frozen=True)
class PodLifeTimeArgs:
    max_pod_life_time_seconds: int = DEFAULT_MAX_POD_LIFE_TIME_SECONDS


def parse_args(fields: Fields) -> PodLifeTimeArgs:
    args = PodLifeTimeArgs(fields.int("maxPodLifeTimeSeconds", DEFAULT_MAX_POD_LIFE_TIME_SECONDS))
    if args.max_pod_life_time_seconds <= 0:
        raise ConfigError(fields.at("maxPodLifeTimeSeconds"), f"must be > 0, got {args.max_pod_life_time_seconds}")
    return args


def _started(pod: Object) -> float | None:
    stamp = (pod.get("status") or {}).get("startTime") or (pod.get("metadata") or {}).get("creationTimestamp")
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class PodLifeTime:
    name = NAME

    def __init__(self, args: PodLifeTimeArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle

    def deschedule(self, nodes: Sequence[Object]) -> Status:
        now = self.handle.clock()
        for node in nodes:
            for pod in self.handle.snapshot.pods_on(str((node.get("metadata") or {}).get("name"))):
                started = _started(pod)
                if started is None or now - started <= self.args.max_pod_life_time_seconds:
                    continue
                if self.handle.evictor.filter(pod) and self.handle.evictor.pre_eviction_filter(pod):
                    age = int(now - started)
                    self.handle.evictor.evict(pod, EvictOptions(NAME, f"pod is {age}s old"))
        return SUCCESS


#: what the `colocate.descheduler.plugins` entry point names
SPEC = PluginSpec(NAME, PodLifeTime, parse_args, has_args=True)
