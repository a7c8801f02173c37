"""Logical cgroup resources and their files in cgroup v1 and v2 (Koordinator's
`pkg/koordlet/util/system/cgroup_resource.go`), with the validators.

A strategy names a logical resource (`CPU_SHARES`) and a value in v1 terms (shares, a quota in µs);
`Resource.render` gives the file and the text of the chosen version (`cpu.weight` and a weight on v2).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

MAX_INT64: Final = 2**63 - 1
DEFAULT_CFS_PERIOD: Final = 100_000
MIN_SHARES, MAX_SHARES = 2, 262_144
MIN_WEIGHT, MAX_WEIGHT = 1, 10_000


class CgroupVersion(enum.StrEnum):
    V1 = "v1"
    V2 = "v2"


def shares_to_weight(shares: int) -> int:
    shares = min(max(shares, MIN_SHARES), MAX_SHARES)
    return 1 + (shares - 2) * 9999 // 262142


def weight_to_shares(weight: int) -> int:
    weight = min(max(weight, MIN_WEIGHT), MAX_WEIGHT)
    return (weight - 1) * 262142 // 9999 + 2


class InvalidValue(ValueError):
    """A value outside the resource's validator range: never written."""


@dataclass(frozen=True)
class Resource:
    """One logical resource: its v1 subsystem and file, its v2 file, the valid range of the value."""

    name: str
    subsystem: str
    v1_file: str
    v2_file: str
    low: int | None = None
    high: int | None = None
    #: a parent must be at least as large as a child (written leveled, as `pkg/koordlet/resourceexecutor/` does)
    hierarchical: bool = False

    def file(self, version: CgroupVersion) -> str:
        return self.v1_file if version is CgroupVersion.V1 else self.v2_file

    def render(self, version: CgroupVersion, value: int | str) -> str:
        """The text written for `value` (v1 terms) into this resource's file of `version`."""
        if isinstance(value, int):
            if self.low is not None and value < self.low or self.high is not None and value > self.high:
                raise InvalidValue(f"{self.name}: {value} not in [{self.low}, {self.high}]")
            if version is CgroupVersion.V2:
                if self is CPU_SHARES:
                    return str(shares_to_weight(value))
                if self is CPU_CFS_QUOTA:
                    return f"{'max' if value < 0 else value} {DEFAULT_CFS_PERIOD}"
                if self in _V2_MAX_MEANS_UNLIMITED and value >= MAX_INT64:
                    return "max"
            return str(value)
        return value

    def parse(self, version: CgroupVersion, text: str) -> int | str:
        """The value (v1 terms) of a file's content."""
        text = text.strip()
        if self is CPUSET_CPUS or self is CPU_STAT or self is CPU_TASKS or self.subsystem == "blkio":
            return text
        if version is CgroupVersion.V2:
            if self is CPU_SHARES:
                return weight_to_shares(int(text))
            if self is CPU_CFS_QUOTA:
                first = text.split()[0] if text else "max"
                return -1 if first == "max" else int(first)
            if text == "max":
                return MAX_INT64
        return int(text)


CPU_SHARES: Final = Resource("cpu.shares", "cpu", "cpu.shares", "cpu.weight", MIN_SHARES, MAX_SHARES)
CPU_CFS_QUOTA: Final = Resource("cpu.cfs_quota_us", "cpu", "cpu.cfs_quota_us", "cpu.max", -1, None, True)
CPU_CFS_PERIOD: Final = Resource("cpu.cfs_period_us", "cpu", "cpu.cfs_period_us", "cpu.max")
CPU_BURST: Final = Resource("cpu.cfs_burst_us", "cpu", "cpu.cfs_burst_us", "cpu.max.burst", 0, 100 * 10 * 100_000)
CPU_BVT_WARP_NS: Final = Resource("cpu.bvt_warp_ns", "cpu", "cpu.bvt_warp_ns", "cpu.bvt_warp_ns", -1, 2)
CPU_IDLE: Final = Resource("cpu.idle", "cpu", "cpu.idle", "cpu.idle", 0, 1)
CPUSET_CPUS: Final = Resource("cpuset.cpus", "cpuset", "cpuset.cpus", "cpuset.cpus", hierarchical=True)
MEMORY_LIMIT: Final = Resource(
    "memory.limit_in_bytes", "memory", "memory.limit_in_bytes", "memory.max", hierarchical=True
)
MEMORY_MIN: Final = Resource("memory.min", "memory", "memory.min", "memory.min", 0)
MEMORY_LOW: Final = Resource("memory.low", "memory", "memory.low", "memory.low", 0)
MEMORY_HIGH: Final = Resource("memory.high", "memory", "memory.high", "memory.high", 0)
MEMORY_WMARK_RATIO: Final = Resource("memory.wmark_ratio", "memory", "memory.wmark_ratio", "memory.wmark_ratio", 0, 100)
MEMORY_WMARK_SCALE_FACTOR: Final = Resource(
    "memory.wmark_scale_factor", "memory", "memory.wmark_scale_factor", "memory.wmark_scale_factor", 1, 1000
)
MEMORY_WMARK_MIN_ADJ: Final = Resource(
    "memory.wmark_min_adj", "memory", "memory.wmark_min_adj", "memory.wmark_min_adj", -25, 50
)
MEMORY_PRIORITY: Final = Resource("memory.priority", "memory", "memory.priority", "memory.priority", 0, 12)
MEMORY_USE_PRIORITY_OOM: Final = Resource(
    "memory.use_priority_oom", "memory", "memory.use_priority_oom", "memory.use_priority_oom", 0, 1
)
MEMORY_OOM_GROUP: Final = Resource("memory.oom.group", "memory", "memory.oom.group", "memory.oom.group", 0, 1)
PAGECACHE_ENABLE: Final = Resource(
    "memory.pagecache_limit.enable", "memory", "memory.pagecache_limit.enable", "memory.pagecache_limit.enable", 0, 1
)
PAGECACHE_SIZE: Final = Resource(
    "memory.pagecache_limit.size", "memory", "memory.pagecache_limit.size", "memory.pagecache_limit.size", 0
)
# read-only statistics
CPUACCT_USAGE: Final = Resource("cpuacct.usage", "cpuacct", "cpuacct.usage", "cpu.stat")
MEMORY_USAGE: Final = Resource("memory.usage_in_bytes", "memory", "memory.usage_in_bytes", "memory.current")
MEMORY_STAT: Final = Resource("memory.stat", "memory", "memory.stat", "memory.stat")
# blkio (v1) and io (v2): values are the kernel's text, "MAJ:MIN value" lines (v2: io.max keys)
BLKIO_READ_IOPS: Final = Resource("blkio.read_iops", "blkio", "blkio.throttle.read_iops_device", "io.max")
BLKIO_READ_BPS: Final = Resource("blkio.read_bps", "blkio", "blkio.throttle.read_bps_device", "io.max")
BLKIO_WRITE_IOPS: Final = Resource("blkio.write_iops", "blkio", "blkio.throttle.write_iops_device", "io.max")
BLKIO_WRITE_BPS: Final = Resource("blkio.write_bps", "blkio", "blkio.throttle.write_bps_device", "io.max")
BLKIO_WEIGHT: Final = Resource("blkio.weight", "blkio", "blkio.cost.weight", "io.weight")
IO_MAX: Final = Resource("io.max", "blkio", "io.max", "io.max")
#: nr_periods / nr_throttled (read as text): CPUBurst's throttling signal
CPU_STAT: Final = Resource("cpu.stat", "cpu", "cpu.stat", "cpu.stat")
#: the thread ids of a cgroup, one a line (read as text; Koordinator's CPUTasks: v1 `cpu/tasks`,
#: v2 `cgroup.threads`): ResctrlReconcile moves them into the class's resctrl group
CPU_TASKS: Final = Resource("tasks", "cpu", "tasks", "cgroup.threads")

_V2_MAX_MEANS_UNLIMITED: Final = (MEMORY_LIMIT, MEMORY_HIGH)
