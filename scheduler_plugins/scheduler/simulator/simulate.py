"""`colocate scheduler simulate`: schedule every pending pod of a snapshot in queue order and
report each placement (or why it failed) and every node's requested share before and after."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from colocate.cli.progress import Progress
from policies.apis.constants import BATCH_CPU, BATCH_MEMORY, RESOURCE_CPU, RESOURCE_MEMORY
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.queue import SchedulingQueue
from scheduler_plugins.scheduler.framework.scheduling import Placement, Scheduler
from scheduler_plugins.scheduler.reservations import RESERVE_POD_KEY_PREFIX

#: Resources the utilisation report shows, when the node has them.
REPORTED_RESOURCES = (RESOURCE_CPU, RESOURCE_MEMORY, BATCH_CPU, BATCH_MEMORY)


def utilisation(node: NodeInfo) -> dict[str, float]:
    """Requested / allocatable in percent (one decimal), per band the pods consume."""
    out = {}
    for name in REPORTED_RESOURCES:
        capacity = node.allocatable.get(name, 0)
        if capacity > 0:
            out[name] = round(100.0 * node.qos_requested.get(name, 0) / capacity, 1)
    return out


@dataclass
class SimulationReport:
    placements: list[Placement]
    before: dict[str, dict[str, float]]
    after: dict[str, dict[str, float]]
    pods_before: dict[str, int]
    pods_after: dict[str, int]
    seconds: float
    unqueued: list[Placement]
    reservations: list[dict[str, Any]]
    #: CPU time of the process over the same span as `seconds` (steadier on a shared machine)
    cpu_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        scheduled = sum(1 for p in self.placements if p.scheduled)
        total = len(self.placements) + len(self.unqueued)
        return {
            "placements": [p.as_dict() for p in self.unqueued + self.placements],
            "summary": {
                "pods": total,
                "scheduled": scheduled,
                "unschedulable": total - scheduled,
                "seconds": round(self.seconds, 3),
                "podsPerSecond": round(len(self.placements) / self.seconds, 1) if self.seconds else None,
            },
            "nodes": [
                {
                    "name": name,
                    "podsBefore": self.pods_before[name],
                    "podsAfter": self.pods_after[name],
                    "before": self.before[name],
                    "after": self.after[name],
                }
                for name in sorted(self.before)
            ],
            "reservations": self.reservations,
        }


def schedule_pending(
    scheduler: Scheduler,
    cluster: ClusterState,
    bar: Progress | None = None,
    queue: SchedulingQueue | None = None,
    now: float = 0.0,
) -> tuple[list[Placement], list[Placement]]:
    """One pass over the pending pods in queue order: (their placements, the pods PreEnqueue kept
    out of the queue). `simulate` runs it once over every pod; `colocate whatif` once per step
    with its `queue`, over the pods the queue has ready at `now` (kube-scheduler's activeQ)."""
    fwk = scheduler.framework
    queued, unqueued = [], []
    for pod in cluster.pending.values():
        if queue is not None and not queue.ready(pod.key, now):
            continue
        status = fwk.run_pre_enqueue(pod)
        if status.is_success:
            queued.append(pod)
        else:
            unqueued.append(Placement(pod.key, status=status, message=f"pre-enqueue: {status.message}"))
    active = fwk.sort_pods(queued)
    scheduler.nominate_pending(active)
    if bar is not None:
        bar.total = max(len(active), 1)
    placements = []
    remaining = {pod.key: pod for pod in active}
    order = iter(active)
    while remaining:
        pod = fwk.run_next_pod(remaining) or next(p for p in order if p.key in remaining)
        del remaining[pod.key]
        if queue is not None:
            queue.begin_cycle()
        placement = scheduler.schedule_one(pod)
        if queue is not None and not placement.scheduled:
            queue.attempted(pod.key, placement.status, placement.failed_nodes, placement, now)
        placements.append(placement)
        if bar is not None:
            bar.advance()
    return placements, unqueued


def simulate(scheduler: Scheduler, cluster: ClusterState, progress: bool = False) -> SimulationReport:
    before = {n.name: utilisation(n) for n in cluster.node_list()}
    pods_before = {n.name: _pod_count(n) for n in cluster.node_list()}
    bar = Progress(len(cluster.pending), progress)
    started, cpu_started = time.perf_counter(), time.process_time()
    placements, unqueued = schedule_pending(scheduler, cluster, bar)
    scheduler.expire_waiting(float("inf"))  # the run is over: whoever still waits on Permit times out
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    bar.close()
    after = {n.name: utilisation(n) for n in cluster.node_list()}
    pods_after = {n.name: _pod_count(n) for n in cluster.node_list()}
    return SimulationReport(
        placements, before, after, pods_before, pods_after, seconds, unqueued, reservation_rows(cluster), cpu_seconds
    )


def _pod_count(node: NodeInfo) -> int:
    """Pods on the node, not counting what reservations hold there."""
    return sum(1 for key in node.pods if not key.startswith(RESERVE_POD_KEY_PREFIX))


def reservation_rows(cluster: ClusterState) -> list[dict[str, Any]]:
    """Every Reservation after the run: where it is, whether it still holds capacity, who used it."""
    index = cluster.reservations
    rows = []
    for name in sorted(index.infos):
        info = index.infos[name]
        phase = info.phase or "Pending"
        if name in index.released:  # what the reservation controller would write
            phase = "Succeeded" if name in index.owner_bound and info.allocate_once else "Failed"
        rows.append(
            {
                "name": name,
                "node": info.node_name or None,
                "phase": phase,
                "holding": index.holding(info),
                "owners": sorted(index.allocations.get(name, {})),
            }
        )
    return rows
