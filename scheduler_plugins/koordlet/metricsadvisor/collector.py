"""One collection round from the machine: node CPU and memory from `/proc`, each pod's and each
host application's from its cgroup (v1 `cpuacct.usage`, `memory.usage_in_bytes` − inactive file;
v2 `cpu.stat` usage_usec, `memory.current` − inactive file), and BE's CPU figures.

CPU counters are cumulative: a sample is the rate between two reads, so the first round of a
series yields none. The usage written to the cache is millicores and bytes (working set).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from policies.apis.constants import KubernetesQoSClass, QoSClass
from policies.apis.cpuset import parse_cpuset
from policies.apis.objects import metadata_of
from scheduler_plugins.koordlet.cgroups import resources as r
from scheduler_plugins.koordlet.cgroups.layout import CgroupLayout
from scheduler_plugins.koordlet.metricsadvisor.cache import MetricCache
from scheduler_plugins.koordlet.nodeslo import HostApplication
from scheduler_plugins.koordlet.pods import OnRefused, PodView, active_pod_views
from scheduler_plugins.koordlet.states import NodeState
from scheduler_plugins.koordlet.usage import BECPU, ResourceUsage, Usage

NODE_CPU, NODE_MEMORY = "node/cpu", "node/memory"
BE_USAGE, BE_REQUEST, BE_LIMIT = "be/cpu_usage", "be/cpu_request", "be/cpu_limit"
_POD_DIR: Final = re.compile(r"(?:kubepods-(?:besteffort-|burstable-)?)?pod(.+?)(?:\.slice)?")
_HOST_BASES: Final = {
    "KubepodsBesteffort": KubernetesQoSClass.BEST_EFFORT,
    "KubepodsBurstable": KubernetesQoSClass.BURSTABLE,
    "Kubepods": KubernetesQoSClass.GUARANTEED,
}


def pod_series(uid: str, resource: str) -> str:
    return f"pod/{uid}/{resource}"


def read_proc_stat(proc: Path) -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs."""
    try:
        with open(proc / "stat") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return total - idle, total


def read_meminfo_used(proc: Path) -> int | None:
    """MemTotal − MemAvailable, bytes."""
    values: dict[str, int] = {}
    try:
        with open(proc / "meminfo") as handle:
            for line in handle:
                key, _, rest = line.partition(":")
                if key in ("MemTotal", "MemAvailable"):
                    values[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    if len(values) != 2:
        return None
    return values["MemTotal"] - values["MemAvailable"]


def _read(path: Path) -> str | None:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def _stat_field(text: str, *names: str) -> int:
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key in names:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


@dataclass
class Collector:
    """Reads the machine into `cache`; `proc` and the cgroup layout are injected (a fake tree in tests)."""

    layout: CgroupLayout
    cache: MetricCache
    proc: Path = Path("/proc")
    cpu_count: Callable[[], int] = field(default=lambda: os.cpu_count() or 1)
    _last: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: cgroup files read in the last round (the cost a benchmark reports)
    reads: int = 0
    #: told of a pod whose UID or container ID is refused as a path
    on_refused: OnRefused | None = None

    def _rate(self, series: str, at: float, counter: float, per_second: float) -> float | None:
        """Counter units per second × `per_second` since the last read of `series`."""
        last = self._last.get(series)
        self._last[series] = (at, counter)
        if last is None or at <= last[0] or counter < last[1]:
            return None
        return (counter - last[1]) / (at - last[0]) * per_second

    def cgroup_cpu_ns(self, cgroup: str) -> int | None:
        """Cumulative CPU time of a cgroup in nanoseconds."""
        self.reads += 1
        text = _read(self.layout.path(cgroup, r.CPUACCT_USAGE))
        if text is None:
            return None
        try:
            if self.layout.version is r.CgroupVersion.V1:
                return int(text.strip())
            return _stat_field(text, "usage_usec") * 1000
        except ValueError:
            return None

    def cgroup_memory(self, cgroup: str) -> int | None:
        """Working set: usage − inactive file, bytes."""
        self.reads += 2
        usage_text = _read(self.layout.path(cgroup, r.MEMORY_USAGE))
        if usage_text is None:
            return None
        try:
            usage = int(usage_text.strip())
        except ValueError:
            return None
        stat = _read(self.layout.path(cgroup, r.MEMORY_STAT)) or ""
        inactive = _stat_field(
            stat,
            "total_inactive_file" if self.layout.version is r.CgroupVersion.V1 else "inactive_file",
            "inactive_file",
        )
        return max(0, usage - inactive)

    def _cgroup(self, key: str, cgroup: str, at: float) -> None:
        ns = self.cgroup_cpu_ns(cgroup)
        if ns is not None:
            rate = self._rate(f"{key}/cpu", at, ns, 1e-6)  # ns per second / 1e6 = millicores
            if rate is not None:
                self.cache.add(f"{key}/cpu", at, rate)
        memory = self.cgroup_memory(cgroup)
        if memory is not None:
            self.cache.add(f"{key}/memory", at, memory)

    def _orphans(self, known: set[str]) -> Iterable[tuple[str, str]]:
        """(uid, dir) of pod cgroups with no pod object (counted as non-BE)."""
        for kube_qos in (KubernetesQoSClass.GUARANTEED, KubernetesQoSClass.BURSTABLE, KubernetesQoSClass.BEST_EFFORT):
            qos_dir = self.layout.qos_dir(kube_qos)
            try:
                entries = list(
                    os.scandir(self.layout.dir(qos_dir, "cpuacct" if self.layout.version is r.CgroupVersion.V1 else ""))
                )
            except OSError:
                continue
            for entry in entries:
                match = _POD_DIR.fullmatch(entry.name)
                if entry.is_dir() and match:
                    uid = match.group(1).replace("_", "-")
                    if uid not in known:
                        yield uid, f"{qos_dir}/{entry.name}"

    def host_app_dir(self, app: HostApplication) -> str:
        base = self.layout.qos_dir(_HOST_BASES[app.cgroup_base]) if app.cgroup_base in _HOST_BASES else ""
        parts = [p.strip("/") for p in (base, app.parent_dir, app.relative_path) if p and p.strip("/")]
        return "/".join(parts)

    def collect(self, state: NodeState, at: float) -> None:
        """One round: every series sampled at `at` (monotonic or wall seconds, consistently)."""
        self.reads = 0
        stat = read_proc_stat(self.proc)
        if stat is not None:
            busy, total = stat
            last = self._last.get(NODE_CPU + "#total")
            self._last[NODE_CPU + "#total"] = (at, total)
            previous = self._last.get(NODE_CPU)
            self._last[NODE_CPU] = (at, busy)
            if last is not None and previous is not None and total > last[1]:
                share = (busy - previous[1]) / (total - last[1])
                self.cache.add(NODE_CPU, at, share * self.cpu_count() * 1000)
        used = read_meminfo_used(self.proc)
        if used is not None:
            self.cache.add(NODE_MEMORY, at, used)
        views = list(active_pod_views(state.pods, self.layout, self.on_refused))
        known = {v.uid for v in views}
        for view in views:
            self._cgroup(f"pod/{view.uid}", view.dir, at)
        for uid, cgroup in self._orphans(known):
            self._cgroup(f"pod/{uid}", cgroup, at)
        for app in state.node_slo.host_applications if state.node_slo else ():
            self._cgroup(f"hostapp/{app.name}", self.host_app_dir(app), at)
        self._be(views, at)
        self._forget_gone(at)

    def _forget_gone(self, at: float) -> None:
        """Drop the counter readings of cgroups not read this round (a deleted pod, a removed host
        application): they only serve the next rate, and pod churn would grow them without end.
        The cache's own series of such a pod age out with its retention."""
        for series in [s for s, (when, _) in self._last.items() if when != at]:
            del self._last[series]
        self.cache.expire(at)

    def _be(self, views: list[PodView], at: float) -> None:
        be = [v for v in views if v.raw_qos is QoSClass.BE]
        usage = 0.0
        for v in be:
            value = self.cache.latest(pod_series(v.uid, "cpu"), at, 0)
            usage += value or 0.0
        self.cache.add(BE_USAGE, at, usage)
        self.cache.add(BE_REQUEST, at, sum(v.batch_cpu_request() for v in be))
        limit = self.be_limit_milli()
        if limit is not None:
            self.cache.add(BE_LIMIT, at, limit)

    def be_limit_milli(self) -> int | None:
        """What the BE QoS cgroup may use now: its CFS quota, else its cpuset, in millicores."""
        be_dir = self.layout.qos_dir(KubernetesQoSClass.BEST_EFFORT)
        text = _read(self.layout.path(be_dir, r.CPU_CFS_QUOTA))
        if text is not None:
            try:
                quota = r.CPU_CFS_QUOTA.parse(self.layout.version, text)
            except ValueError:
                quota = -1
            if isinstance(quota, int) and quota > 0:
                return quota * 1000 // r.DEFAULT_CFS_PERIOD
        cpus = _read(self.layout.path(be_dir, r.CPUSET_CPUS))
        if cpus is not None and cpus.strip():
            try:
                return 1000 * len(parse_cpuset(cpus))
            except ValueError:
                return None
        return None


def usage_from_cache(cache: MetricCache, state: NodeState, now: float, max_age: float, be_window: float) -> Usage:
    """The latest usage (samples at most `max_age` old) and BE's averages over `be_window`."""

    def pair(key: str) -> ResourceUsage | None:
        cpu = cache.latest(f"{key}/cpu", now, max_age)
        memory = cache.latest(f"{key}/memory", now, max_age)
        if cpu is None and memory is None:
            return None
        return ResourceUsage(int(cpu or 0), int(memory or 0))

    node_cpu, node_memory = cache.latest(NODE_CPU, now, max_age), cache.latest(NODE_MEMORY, now, max_age)
    node = (
        None if node_cpu is None and node_memory is None else ResourceUsage(int(node_cpu or 0), int(node_memory or 0))
    )
    keys: dict[str, str] = {}
    for pod in state.pods:
        metadata: Mapping[str, object] = metadata_of(pod)
        keys[str(metadata.get("uid") or "")] = f"{metadata.get('namespace') or 'default'}/{metadata.get('name')}"
    pods: dict[str, ResourceUsage] = {}
    for uid in sorted({name.split("/")[1] for name in cache.names("pod/")}):
        found = pair(f"pod/{uid}")
        if found is not None:
            pods[keys.get(uid, f"uid:{uid}")] = found
    apps: dict[str, ResourceUsage] = {}
    for app in state.node_slo.host_applications if state.node_slo else ():
        found = pair(f"hostapp/{app.name}")
        if found is not None:
            apps[app.name] = found
    be_usage = cache.average(BE_USAGE, now, be_window)
    be_request = cache.average(BE_REQUEST, now, be_window)
    be_limit = cache.average(BE_LIMIT, now, be_window)
    be_cpu = (
        None
        if be_usage is None or be_request is None
        else BECPU(int(be_usage), int(be_request), int(be_limit) if be_limit is not None else None)
    )
    return Usage(node, pods, apps, be_cpu)
