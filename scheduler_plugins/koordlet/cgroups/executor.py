"""Cgroup writes as values, and the ResourceUpdateExecutor that applies them (spec §3).

A strategy returns `CgroupWrite`s; `leveled_order` orders those of a hierarchical resource so that
a parent is never smaller than a child while they are applied: first, top-down (QoS, pod,
container), every cgroup is raised to the union of its old and new value; then, bottom-up, each
is lowered to its new value. The executor remembers what it last wrote to each file and skips a
write of the same text until the entry is older than `cache_ttl` (then the file is compared again,
so a value changed behind the agent's back is restored).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler_plugins.koordlet.cgroups.layout import CgroupLayout, Level
from scheduler_plugins.koordlet.cgroups.resources import CPU_CFS_QUOTA, CPUSET_CPUS, MAX_INT64, Resource
from scheduler_plugins.koordlet.cpuset import format_cpuset, parse_cpuset

log = logging.getLogger("colocate.koordlet.executor")


@dataclass(frozen=True)
class CgroupWrite:
    """Write `value` (v1 terms) of `resource` into the cgroup `cgroup` at depth `level`."""

    strategy: str
    cgroup: str
    resource: Resource
    value: int | str
    level: Level = Level.POD

    def as_dict(self, layout: CgroupLayout) -> dict[str, Any]:
        return {"strategy": self.strategy, "cgroup": self.cgroup, "file": self.resource.file(layout.version),
                "value": self.resource.render(layout.version, self.value)}


def merged(resource: Resource, old: int | str | None, new: int | str) -> int | str:
    """The value that is at least both `old` and `new` (what a parent may hold mid-transition)."""
    if old is None:
        return new
    if resource is CPUSET_CPUS:
        return format_cpuset(parse_cpuset(str(old)) | parse_cpuset(str(new)))
    if isinstance(old, int) and isinstance(new, int):
        if resource is CPU_CFS_QUOTA:  # -1 is unlimited
            return -1 if old < 0 or new < 0 else max(old, new)
        return max(old if old >= 0 else MAX_INT64, new if new >= 0 else MAX_INT64)
    return new


Reader = Callable[[str, Resource], "int | str | None"]


def leveled_order(writes: Sequence[CgroupWrite], current: Reader) -> list[CgroupWrite]:
    """`writes` of hierarchical resources in the two-phase leveled order; others keep their order
    (after the hierarchical ones). A write equal to the current value disappears."""
    flat = [w for w in writes if not w.resource.hierarchical]
    leveled = sorted((w for w in writes if w.resource.hierarchical), key=lambda w: w.level)
    up: list[CgroupWrite] = []
    down: list[CgroupWrite] = []
    for w in leveled:
        old = current(w.cgroup, w.resource)
        union = merged(w.resource, old, w.value)
        if union != old:
            up.append(CgroupWrite(w.strategy, w.cgroup, w.resource, union, w.level))
        if union != w.value:
            down.append(w)
    return [*up, *sorted(down, key=lambda w: -w.level), *flat]


@dataclass
class WriteStats:
    written: int = 0
    skipped: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


class ResourceExecutor:
    """Reads and writes cgroup files under one layout; `dry_run` logs instead of writing."""

    def __init__(self, layout: CgroupLayout, clock: Callable[[], float], cache_ttl: float = 60.0,
                 dry_run: bool = False, on_write: Callable[[CgroupWrite, str], None] | None = None) -> None:
        self.layout, self.clock, self.cache_ttl, self.dry_run = layout, clock, cache_ttl, dry_run
        self.on_write = on_write
        self._cache: dict[str, tuple[str, float]] = {}

    def read(self, cgroup: str, resource: Resource) -> int | str | None:
        try:
            text = self.layout.path(cgroup, resource).read_text()
            return resource.parse(self.layout.version, text)
        except (OSError, ValueError, IndexError):
            return None

    def exists(self, cgroup: str, subsystem: str) -> bool:
        return self.layout.dir(cgroup, subsystem).is_dir()

    def apply(self, writes: Iterable[CgroupWrite]) -> WriteStats:
        """Apply `writes` (in the leveled order for hierarchical resources)."""
        stats = WriteStats()
        for w in leveled_order(list(writes), self.read):
            path = self.layout.path(w.cgroup, w.resource)
            key = str(path)
            try:
                text = w.resource.render(self.layout.version, w.value)
            except ValueError as exc:
                stats.failed += 1
                stats.errors.append(str(exc))
                continue
            now = self.clock()
            cached = self._cache.get(key)
            if cached is not None and cached[0] == text and now - cached[1] < self.cache_ttl:
                stats.skipped += 1
                continue
            if self.dry_run:
                log.info("dry-run: write %s to %s", text, path)
                self._cache[key] = (text, now)
                stats.written += 1
                if self.on_write is not None:
                    self.on_write(w, text)
                continue
            try:
                if cached is not None and path.read_text().strip() == text.strip():
                    self._cache[key] = (text, now)
                    stats.skipped += 1
                    continue
                fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
                try:
                    os.write(fd, text.encode())
                finally:
                    os.close(fd)
            except OSError as exc:
                self._cache.pop(key, None)
                stats.failed += 1
                stats.errors.append(f"{path}: {exc.strerror or exc}")
                log.debug("cannot write %s to %s: %s", text, path, exc)
                continue
            self._cache[key] = (text, now)
            stats.written += 1
            if self.on_write is not None:
                self.on_write(w, text)
        return stats
