"""What a what-if run starts from, read once at the edge: the cluster snapshot directory, the
profile sets, the scheduler's and descheduler's configurations (found in the snapshot, else the
shipped defaults), the workload and the start time. Bad input is a `ConfigError` naming the file and
field; each run gets a fresh store, so the two runs of a comparison start from the same state.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from colocate.cluster.files import DirectorySource
from colocate.cluster.store import ClusterStore, Object
from policies.apis.field_errors import ConfigError
from policies.apis.kinds import NODE_METRIC_KIND
from policies.apis.manifests import ManifestError
from policies.apis.nodemetric import read_node_metric
from policies.apis.quantity import QuantityError
from policies.apis.timestamps import parse_time
from scheduler_plugins.descheduler.runner import API_VERSION as DESCHEDULER_API_VERSION
from scheduler_plugins.descheduler.runner import KIND as DESCHEDULER_KIND
from scheduler_plugins.descheduler.runner import DeschedulerConfig
from scheduler_plugins.descheduler.runner import installed_registry as descheduler_registry
from scheduler_plugins.descheduler.runner import parse_config as parse_descheduler_config
from scheduler_plugins.koordlet.node_round import RefusedPath, checked_pod_uid
from scheduler_plugins.scheduler.runner import KIND as SCHEDULER_KIND
from scheduler_plugins.scheduler.runner import SchedulerConfig
from scheduler_plugins.scheduler.runner import installed_registry as scheduler_registry
from scheduler_plugins.scheduler.runner import parse_config as parse_scheduler_config

from .workload import Workload, load_workload

PROFILE_KIND: Final = "ClusterColocationProfile"
DEFAULT_START: Final = "2026-01-01T00:00:00Z"
#: kinds that configure the run rather than being part of the cluster
CONFIG_KINDS: Final = (SCHEDULER_KIND, DESCHEDULER_KIND)


def _scan(directory: Path, flag: str) -> ClusterStore:
    if not directory.is_dir():
        raise ConfigError(flag, f"{directory}: not a directory")
    store = ClusterStore()
    try:
        DirectorySource(directory, store, log_problems=False).scan()  # a problem is our error, said once
    except ManifestError as exc:
        raise ConfigError(flag, str(exc)) from None
    if store.problems:
        raise ConfigError(flag, f"{store.problems[0].source}: {store.problems[0].message}")
    return store


def load_profiles(directory: Path, flag: str) -> list[Object]:
    """The ClusterColocationProfiles of a directory (none: colocation off)."""
    store = _scan(directory, flag)
    others = sorted(k for k in store.kinds() if k != PROFILE_KIND and store.objects(k))
    if others:
        raise ConfigError(flag, f"{directory}: holds {others[0]} objects; only {PROFILE_KIND}s belong here")
    return sorted(store.objects(PROFILE_KIND), key=lambda p: str(p["metadata"]["name"]))


@dataclass(frozen=True)
class Inputs:
    objects: Mapping[str, tuple[Object, ...]]  # kind -> objects of the snapshot, profiles left out
    profiles: tuple[Object, ...]  # the snapshot's own
    scheduler_config: SchedulerConfig
    descheduler_config: DeschedulerConfig
    workload: Workload
    #: per node, what its NodeMetric shows beyond its pods (millicores, bytes): the system's usage
    system_usage: Mapping[str, tuple[int, int]]
    newest_metric: float | None

    def fresh_store(self, profiles: list[Object]) -> ClusterStore:
        """A store holding the snapshot with `profiles` (deep copies: a run never changes the inputs)."""
        store = ClusterStore()
        for kind in sorted(self.objects):
            objects = [copy.deepcopy(dict(o)) for o in self.objects[kind]]
            if kind == "Pod":
                for pod in objects:
                    with_uid(pod)
            store.replace(kind, objects)
        store.replace(PROFILE_KIND, [copy.deepcopy(dict(p)) for p in profiles])
        return store


def with_uid(pod: dict[str, Any]) -> None:
    """A hand-written snapshot pod gets the UUID an API server would have given it (the koordlet
    refuses a cgroup path from anything else), derived from its namespace and name: deterministic."""
    meta = pod.setdefault("metadata", {})
    try:
        checked_pod_uid(meta.get("uid"))
    except RefusedPath:
        name = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        meta["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"colocate-whatif:{name}"))


def _system_usage(metrics: list[Object]) -> tuple[dict[str, tuple[int, int]], float | None]:
    usage: dict[str, tuple[int, int]] = {}
    newest: float | None = None
    for metric in metrics:
        name = str(metric["metadata"]["name"])
        try:
            reading = read_node_metric(metric)
        except (QuantityError, ValueError) as exc:
            raise ConfigError("--cluster", f"NodeMetric {name}: {exc}") from None
        when = parse_time(reading.update_time) if reading.update_time else None
        if when is not None and (newest is None or when > newest):
            newest = when
        node = reading.node_usage or {}
        pods = [p.usage or {} for p in reading.pods]
        cpu = node.get("cpu", 0) - sum(p.get("cpu", 0) for p in pods)
        memory = node.get("memory", 0) - sum(p.get("memory", 0) for p in pods)
        usage[name] = (max(cpu, 0), max(memory, 0))
    return usage, newest


def load_inputs(cluster: Path, workload: Path) -> Inputs:
    store = _scan(cluster, "--cluster")
    objects = {k: tuple(store.objects(k)) for k in store.kinds() if k not in (PROFILE_KIND, *CONFIG_KINDS)}
    scheduler_docs = store.objects(SCHEDULER_KIND)
    descheduler_docs = store.objects(DESCHEDULER_KIND)
    if len(scheduler_docs) > 1 or len(descheduler_docs) > 1:
        raise ConfigError("--cluster", f"{cluster}: at most one {SCHEDULER_KIND} and one {DESCHEDULER_KIND}")
    try:
        scheduler_config = parse_scheduler_config(
            scheduler_docs[0] if scheduler_docs else {}, scheduler_registry(), SCHEDULER_KIND
        )
        descheduler_config = parse_descheduler_config(
            descheduler_docs[0]
            if descheduler_docs
            else {"apiVersion": DESCHEDULER_API_VERSION, "kind": DESCHEDULER_KIND},
            descheduler_registry(),
        )
    except ConfigError as exc:
        raise ConfigError("--cluster", f"{cluster}: {exc}") from None
    system, newest = _system_usage(list(store.objects(NODE_METRIC_KIND)))
    return Inputs(
        objects=objects,
        profiles=tuple(sorted(store.objects(PROFILE_KIND), key=lambda p: str(p["metadata"]["name"]))),
        scheduler_config=scheduler_config,
        descheduler_config=descheduler_config,
        workload=load_workload(workload),
        system_usage=system,
        newest_metric=newest,
    )


def start_time(inputs: Inputs, now: str | None) -> float:
    """`--now`, else the newest NodeMetric's updateTime, else the start of 2026."""
    if now is not None:
        at = parse_time(now)
        if at is None:
            raise ConfigError("--now", f"not an RFC 3339 time: {now!r}")
        return at
    if inputs.newest_metric is not None:
        return inputs.newest_metric
    start = parse_time(DEFAULT_START)
    assert start is not None
    return start
