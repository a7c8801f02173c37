"""`colocate scheduler simulate`: schedule every pending pod of a snapshot in queue order and
report each placement (or why it failed) and every node's requested share before and after."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from policies.constants import BATCH_CPU, BATCH_MEMORY, RESOURCE_CPU, RESOURCE_MEMORY
from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.framework.nodeinfo import NodeInfo
from scheduler_plugins.scheduler.framework.scheduling import Placement, Scheduler
from scheduler_plugins.scheduler.simulator.progress import Progress

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

    def as_dict(self) -> dict[str, Any]:
        scheduled = sum(1 for p in self.placements if p.scheduled)
        total = len(self.placements) + len(self.unqueued)
        return {
            "placements": [p.as_dict() for p in self.unqueued + self.placements],
            "summary": {"pods": total, "scheduled": scheduled, "unschedulable": total - scheduled,
                        "seconds": round(self.seconds, 3),
                        "podsPerSecond": round(len(self.placements) / self.seconds, 1) if self.seconds else None},
            "nodes": [{"name": name, "podsBefore": self.pods_before[name], "podsAfter": self.pods_after[name],
                       "before": self.before[name], "after": self.after[name]} for name in sorted(self.before)],
        }


def simulate(scheduler: Scheduler, cluster: ClusterState, progress: bool = False) -> SimulationReport:
    fwk = scheduler.framework
    before = {n.name: utilisation(n) for n in cluster.node_list()}
    pods_before = {n.name: len(n.pods) for n in cluster.node_list()}
    queued, unqueued = [], []
    for pod in cluster.pending.values():
        status = fwk.run_pre_enqueue(pod)
        if status.is_success:
            queued.append(pod)
        else:
            unqueued.append(Placement(pod.key, status=status, message=f"pre-enqueue: {status.message}"))
    queue = fwk.sort_pods(queued)
    bar = Progress(len(queue), progress)
    placements = []
    started = time.perf_counter()
    for pod in queue:
        placements.append(scheduler.schedule_one(pod))
        bar.advance()
    seconds = time.perf_counter() - started
    bar.close()
    after = {n.name: utilisation(n) for n in cluster.node_list()}
    pods_after = {n.name: len(n.pods) for n in cluster.node_list()}
    return SimulationReport(placements, before, after, pods_before, pods_after, seconds, unqueued)
