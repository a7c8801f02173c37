"""What the clock does to a snapshot, said before the results it changes.

`simulate` and `explain` judge a snapshot at `--now`, else at the system's time. Replayed later,
a snapshot's NodeMetrics are older than `nodeMetricExpirationSeconds`, so LoadAwareScheduling
treats their nodes as having no usage data, and its Reservations are past their TTL, so they fail.
Both change the placements silently; these warnings say so, as the descheduler's report notes a
node whose NodeMetric expired (`scheduler_plugins/descheduler/plugins/lownodeload/plugin.py`),
and name the `--now` that replays the snapshot as it was.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from policies.apis.nodemetric import read_node_metric
from policies.apis.timestamps import parse_time
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import SchedulerConfig
from scheduler_plugins.scheduler.plugins.loadaware.args import DEFAULT_NODE_METRIC_EXPIRATION_SECONDS
from scheduler_plugins.scheduler.plugins.loadaware.plugin import NAME as LOAD_AWARE


def rfc3339(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def expiration_seconds(config: SchedulerConfig) -> int:
    """The profile's LoadAwareScheduling `nodeMetricExpirationSeconds` (its default when unset)."""
    args = config.profile().args.get(LOAD_AWARE)
    return int(getattr(args, "node_metric_expiration_seconds", DEFAULT_NODE_METRIC_EXPIRATION_SECONDS))


@dataclass(frozen=True)
class ClockCheck:
    now: float
    now_given: bool  # --now was passed: the user chose the clock, no hint about it
    expiration: int

    def warnings(self, cluster: ClusterState) -> list[str]:
        stamps: list[float] = []
        stale = 0
        for metric in cluster.node_metrics.values():
            try:
                updated = parse_time(read_node_metric(metric).update_time)
            except (ValueError, TypeError, AttributeError):
                continue  # LoadAware counts it as none and warns, naming it (`loadaware/cache.py`)
            if updated is not None:
                stamps.append(updated)
            if updated is None or self.now - updated > self.expiration:
                stale += 1
        expired = sorted(
            (info.name, at)
            for info in cluster.reservations.infos.values()
            if (at := info.expires_at) is not None and at <= self.now
        )
        found = []
        if stale:
            found.append(
                f"{stale} of {len(cluster.node_metrics)} NodeMetrics are older than nodeMetricExpirationSeconds "
                f"({self.expiration}s) at {rfc3339(self.now)}: their nodes are scheduled as if they had no usage data"
            )
        if expired:
            names = ", ".join(f"{name} (at {rfc3339(at)})" for name, at in expired[:3])
            more = f" and {len(expired) - 3} more" if len(expired) > 3 else ""
            found.append(f"{len(expired)} Reservation(s) expired before {rfc3339(self.now)}: {names}{more}; they fail")
        if found and not self.now_given and stamps:
            found.append(f"replaying a snapshot? pass --now {rfc3339(max(stamps))} (its newest NodeMetric)")
        elif found and not self.now_given:
            found.append("replaying a snapshot? pass --now with the time it was taken")
        return found
