"""Cgroup writes as values, and the ResourceUpdateExecutor that applies them (Koordinator's
`pkg/koordlet/resourceexecutor/`).

A strategy returns `CgroupWrite`s; `leveled_order` orders those of a hierarchical resource so that
a parent is never smaller than a child while they are applied: first, top-down (QoS, pod,
container), every cgroup is raised to the union of its old and new value; then, bottom-up, each
is lowered to its new value. The executor remembers what it last wrote to each file and skips a
write of the same text until the entry is older than `cache_ttl` (then the file is compared again,
so a value changed behind the agent's back is restored). A path that resolves outside the cgroup
root is never written, whatever built it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from policies.apis.cpuset import format_cpuset, parse_cpuset
from scheduler_plugins.koordlet.cgroups.layout import CgroupLayout, Level
from scheduler_plugins.koordlet.cgroups.resources import CPU_CFS_QUOTA, CPUSET_CPUS, MAX_INT64, Resource
from scheduler_plugins.koordlet.cgroups.written import WrittenCache, overwrite

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
        return {
            "strategy": self.strategy,
            "cgroup": self.cgroup,
            "file": self.resource.file(layout.version),
            "value": self.resource.render(layout.version, self.value),
        }


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
#: the child cgroup names of a cgroup in a subsystem's hierarchy (`ResourceExecutor.subdirs`)
Lister = Callable[[str, str], "tuple[str, ...]"]


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
    #: the writes that failed, for their strategy's failure count
    failures: list[CgroupWrite] = field(default_factory=list)


class ResourceExecutor:
    """Reads and writes cgroup files under one layout; `dry_run` logs instead of writing."""

    def __init__(
        self,
        layout: CgroupLayout,
        clock: Callable[[], float],
        cache_ttl: float = 60.0,
        dry_run: bool = False,
        on_write: Callable[[CgroupWrite, str], None] | None = None,
        on_outside: Callable[[str], None] | None = None,
    ) -> None:
        self.layout, self.clock, self.dry_run = layout, clock, dry_run
        self.on_write, self.on_outside = on_write, on_outside
        self._written_cache = WrittenCache(cache_ttl)

    def read(self, cgroup: str, resource: Resource) -> int | str | None:
        try:
            with open(self.layout.path_text(cgroup, resource)) as handle:
                return resource.parse(self.layout.version, handle.read())
        except (OSError, ValueError, IndexError):
            return None

    def subdirs(self, cgroup: str, subsystem: str) -> tuple[str, ...]:
        """The names of the child cgroups of `cgroup` in `subsystem`'s hierarchy (none when missing)."""
        try:
            with os.scandir(self.layout.dir(cgroup, subsystem)) as entries:
                return tuple(sorted(e.name for e in entries if e.is_dir(follow_symlinks=False)))
        except OSError:
            return ()

    def apply(self, writes: Iterable[CgroupWrite]) -> WriteStats:
        """Apply `writes`: those the cache knows are in place are skipped first, the rest go in
        the leveled order (hierarchical resources) and are written."""
        stats = WriteStats()
        now = self.clock()
        pending: list[CgroupWrite] = []
        for w in writes:
            try:
                text = w.resource.render(self.layout.version, w.value)
            except ValueError as exc:
                stats.failed += 1
                stats.errors.append(str(exc))
                stats.failures.append(w)
                continue
            if self._written_cache.fresh(self.layout.path_text(w.cgroup, w.resource), text, now):
                stats.skipped += 1
            else:
                pending.append(w)
        for w in leveled_order(pending, self.read):
            key = self.layout.path_text(w.cgroup, w.resource)
            text = w.resource.render(self.layout.version, w.value)
            if not self.layout.inside(key):  # a symlink or `..` out of the hierarchy: never written
                stats.failed += 1
                stats.errors.append(f"{key}: outside the cgroup root, refused")
                if self.on_outside is not None:
                    self.on_outside(key)
                continue
            if self.dry_run:
                log.info("dry-run: write %s to %s", text, key)
                self._written(w, key, text, now, stats)
                continue
            try:
                if self._written_cache.knows(key):  # expired: compare with the file before writing again
                    with open(key) as handle:
                        if handle.read().strip() == text.strip():
                            self._written_cache.remember(key, text, now)
                            stats.skipped += 1
                            continue
                overwrite(key, text)
            except OSError as exc:
                self._written_cache.forget(key)
                stats.failed += 1
                stats.errors.append(f"{key}: {exc.strerror or exc}")
                stats.failures.append(w)
                log.debug("cannot write %s to %s: %s", text, key, exc)
                continue
            self._written(w, key, text, now, stats)
        return stats

    def _written(self, w: CgroupWrite, key: str, text: str, now: float, stats: WriteStats) -> None:
        self._written_cache.remember(key, text, now)
        stats.written += 1
        if self.on_write is not None:
            self.on_write(w, text)
