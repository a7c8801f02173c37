"""`colocate serve --workers auto`: one server process per CPU the replica may use.

A worker is one busy Python thread, so more workers than CPUs only queue behind each other, and
fewer leave a paid-for core idle. The CPUs a process may use are the smaller of

- its affinity mask, `len(os.sched_getaffinity(0))`: the cpuset a container runtime, the kubelet's
  static CPU manager or `taskset` pins it to (`os.cpu_count()` where the call does not exist);
- its cgroup CPU limit, `quota / period` from `cpu.max` (cgroup v2) or `cpu.cfs_quota_us` and
  `cpu.cfs_period_us` (v1): what `resources.limits.cpu` becomes. It is rounded *down*, at least 1,
  as uber-go/automaxprocs does: two busy workers under a 1.5-CPU limit use up the quota 75 ms into
  every 100 ms CFS period and are both stopped for the rest, which is latency every admission
  pays; one worker under it is never throttled and leaves the half CPU to the reflector threads
  and the parent. (Go 1.25's runtime rounds up, with a minimum of 2, for its garbage collector's
  sake; that reason does not apply here.)

Like Go's runtime (`src/runtime/cgroup_linux.go`), only the cgroup that holds the process is read,
not its ancestors: container runtimes give a container its own cgroup namespace, in which that
cgroup is the root. The cgroup is found through `/proc/self/cgroup` and `/proc/self/mountinfo`;
on a hybrid host (v1 controllers beside an empty v2 hierarchy) the v1 `cpu` controller wins, as it
is the one that limits. Anything unreadable or malformed means "no limit known": the affinity
count alone.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

AUTO: Literal["auto"] = "auto"
Workers: TypeAlias = "int | Literal['auto']"
"""The value of `--workers`: a count, or `auto` (resolved at start-up by `resolve_workers`)."""


def parse_workers(text: str) -> Workers:
    """The `--workers` argument type: `auto` or a whole number of at least 1."""
    if text.strip().lower() == AUTO:
        return AUTO
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes or 'auto', got {text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (or 'auto'), got {count}")
    return count


@dataclass(frozen=True)
class Cpus:
    """What the process may run on: `usable` CPUs in its affinity mask, and its cgroup CPU limit
    in CPUs (`None`: unlimited, or not known)."""

    usable: int
    limit: float | None = None

    @property
    def workers(self) -> int:
        """One worker per usable CPU, no more than the limit rounded down, at least 1."""
        count = max(1, self.usable)
        if self.limit is not None:
            count = min(count, max(1, math.floor(self.limit)))
        return count

    def describe(self) -> str:
        limit = "no cgroup CPU limit" if self.limit is None else f"cgroup CPU limit {self.limit:g}"
        return f"{self.usable} usable CPU(s), {limit}"


def resolve_workers(value: Workers, cpus: Cpus | None = None) -> int:
    """The number of server processes for `--workers value`; `cpus` defaults to this process's."""
    if value != AUTO:
        return value
    return (cpus or detect_cpus()).workers


def detect_cpus(root: Path = Path("/")) -> Cpus:
    """This process's affinity count and cgroup CPU limit (`root`: where `/proc` and the cgroup
    mounts are found; tests pass a directory laid out like them)."""
    return Cpus(usable_cpus(), cgroup_cpu_limit(root))


def usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1  # pragma: no cover - not Linux


@dataclass(frozen=True)
class _Mount:
    root: str  # the path, inside the hierarchy, that is mounted
    mount_point: str
    fs_type: str
    super_options: frozenset[str]


_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes."""
    return _ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), field)


def _mounts(text: str) -> list[_Mount]:
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        separator = fields.index("-")
        if separator < 5 or len(fields) < separator + 4:
            continue
        mounts.append(
            _Mount(
                _unescape(fields[3]),
                _unescape(fields[4]),
                fields[separator + 1],
                frozenset(fields[separator + 3].split(",")),
            )
        )
    return mounts


def _cgroups(text: str) -> tuple[str | None, str | None]:
    """(v1 path of the `cpu` controller, v2 path) from /proc/self/cgroup, each None when absent."""
    v1 = v2 = None
    for line in text.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            v2 = path
        elif "cpu" in controllers.split(","):
            v1 = path
    return v1, v2


def _directory(root: Path, mount: _Mount, path: str) -> Path | None:
    """The directory of cgroup `path` under `mount` (which may mount a subtree of the hierarchy)."""
    if mount.root != "/" and path != mount.root and not path.startswith(mount.root.rstrip("/") + "/"):
        return None
    relative = path[len(mount.root) :] if mount.root != "/" else path
    return root / mount.mount_point.lstrip("/") / relative.lstrip("/")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _ratio(quota: str, period: str) -> float | None:
    """quota / period in CPUs; None for `max`, -1 (v1's unlimited) or anything unusable."""
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:
        return None
    if quota_us <= 0 or period_us <= 0:
        return None
    return quota_us / period_us


def cgroup_cpu_limit(root: Path = Path("/")) -> float | None:
    """The CPU limit of the cgroup this process is in, in CPUs; None when unlimited or unknown."""
    cgroup_text, mountinfo_text = _read(root / "proc/self/cgroup"), _read(root / "proc/self/mountinfo")
    if cgroup_text is None or mountinfo_text is None:
        return None
    v1, v2 = _cgroups(cgroup_text)
    mounts = _mounts(mountinfo_text)
    if v1 is not None:
        for mount in mounts:
            if mount.fs_type == "cgroup" and "cpu" in mount.super_options:
                directory = _directory(root, mount, v1)
                if directory is None:
                    continue
                quota, period = _read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us")
                return None if quota is None or period is None else _ratio(quota, period)
        return None
    if v2 is not None:
        for mount in mounts:
            if mount.fs_type == "cgroup2":
                directory = _directory(root, mount, v2)
                if directory is None:
                    continue
                limit = _read(directory / "cpu.max")
                if limit is None:
                    return None
                quota, _, period = limit.partition(" ")
                return _ratio(quota, period or "100000")
    return None
