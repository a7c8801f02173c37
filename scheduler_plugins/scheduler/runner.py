"""The scheduler's round in memory: one profile's framework and its `Scheduler` over a
`ClusterState`, the one way `scheduler simulate` and `colocate whatif` schedule.

A pass reads the cluster state's pending pods (with a scheduling queue: only those it has ready at
`now`, kube-scheduler's activeQ) and schedules them in queue order through the framework; it returns
each attempted pod's `Placement` (bound, nominated or why not) and those PreEnqueue kept out of the
queue. Bindings, patches and deletions go through the framework's client: the cluster state's own
in-memory client unless the caller gives one (whatif's writes to its store).

`simulate` is one pass over every pending pod, with every node's requested share before and after
(`SimulationReport`); `step` is one of whatif's passes, after which the pods past their Permit wait
time out. The public types a caller needs are re-exported here (`__all__`).
"""

from __future__ import annotations

from typing import NamedTuple

from policies.apis.feature_gates import FeatureGates
from scheduler_plugins.clock import Clock, system_clock
from scheduler_plugins.scheduler.cluster.client import bound_copy
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.config import KIND, SchedulerConfig, parse_config
from scheduler_plugins.scheduler.framework.features import scheduler_gates
from scheduler_plugins.scheduler.framework.handle import ClientError, ClusterClient
from scheduler_plugins.scheduler.framework.queue import SchedulingQueue
from scheduler_plugins.scheduler.framework.registry import Registry
from scheduler_plugins.scheduler.framework.scheduling import Placement, Scheduler
from scheduler_plugins.scheduler.registry import installed_registry
from scheduler_plugins.scheduler.simulator.simulate import SimulationReport, schedule_pending, simulate
from scheduler_plugins.scheduler.wiring import build_framework

__all__ = [
    "KIND",
    "ClientError",
    "ClusterState",
    "Pass",
    "Placement",
    "SchedulerConfig",
    "SchedulerRunner",
    "SchedulingQueue",
    "SimulationReport",
    "bound_copy",
    "installed_registry",
    "parse_config",
    "scheduler_gates",
]


class Pass(NamedTuple):
    """One of `step`'s passes: the placements of the pods attempted, the pods PreEnqueue kept out,
    and the last placements of the pods still waiting in the queue unattempted."""

    placements: list[Placement]
    unqueued: list[Placement]
    waiting: list[Placement]


class SchedulerRunner:
    """kube-scheduler over `cluster` with the first profile of `config` (the installed plugins
    unless `registry` is given); `queue`: the scheduling queue a `step` honours."""

    def __init__(
        self,
        config: SchedulerConfig,
        cluster: ClusterState,
        clock: Clock = system_clock,
        *,
        registry: Registry | None = None,
        client: ClusterClient | None = None,
        features: FeatureGates | None = None,
        queue: SchedulingQueue | None = None,
    ) -> None:
        self.cluster, self.clock, self.queue = cluster, clock, queue
        framework = build_framework(
            config, registry or installed_registry(), cluster, clock, client=client, features=features
        )
        self.scheduler = Scheduler(framework, cluster, config.percentage_of_nodes_to_score)

    def simulate(self, progress: bool = False) -> SimulationReport:
        """Every pending pod once, in queue order (`scheduler simulate`)."""
        return simulate(self.scheduler, self.cluster, progress)

    def step(self) -> Pass:
        """One pass over the pods the queue has ready now; then whoever waits on Permit past its
        timeout is rejected."""
        placements, unqueued = schedule_pending(self.scheduler, self.cluster, queue=self.queue, now=self.clock())
        self.scheduler.expire_waiting()
        waiting: list[Placement] = []
        if self.queue is not None:
            attempted = {p.pod for p in placements} | {p.pod for p in unqueued}
            waiting = [p for p in self.queue.waiting(self.cluster.pending) if p.pod not in attempted]
        return Pass(placements, unqueued, waiting)
