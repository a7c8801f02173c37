"""The host files outside the pods' cgroups that the koordlet reads and writes: `/proc/sys`
(SystemConfig), `/sys/kernel/mm` (memcg reaping), `/sys/class/block` (device numbers for blkio)
and the resctrl filesystem (RdtResctrl).

A strategy returns `HostWrite`s (a root, a path under it, the text); `HostFiles` applies them
under the configured roots, so tests point the roots at fake trees in the kernel's formats. Each
root is injectable (`--proc-root`, `--sys-root`, `--resctrl-root`), read once at the CLI edge.
Whether an interface is there is a question a strategy asks here (`available`) and answers in
its status and in `koordlet_interface_unavailable`, never by silently doing nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from scheduler_plugins.koordlet.cgroups.written import WrittenCache, overwrite

log = logging.getLogger("colocate.koordlet.host")

PROC, SYS, RESCTRL, CGROUP = "proc", "sys", "resctrl", "cgroup"
ROOT_NAMES: Final = (PROC, SYS, RESCTRL, CGROUP)

#: the interfaces a strategy may find missing: the closed label set of koordlet_interface_unavailable
INTERFACE_BLKIO, INTERFACE_IO, INTERFACE_RESCTRL = "blkio", "io", "resctrl"
INTERFACE_PROC_SYS_VM, INTERFACE_MEMCG_REAPER = "procSysVm", "memcgReaper"
INTERFACE_PROC_SYS_KERNEL, INTERFACE_PAGE_CACHE_LIMIT, INTERFACE_SCHED_FEATURES = (
    "procSysKernel",
    "pageCacheLimit",
    "schedFeatures",
)
INTERFACES: Final = (
    INTERFACE_BLKIO,
    INTERFACE_IO,
    INTERFACE_RESCTRL,
    INTERFACE_PROC_SYS_VM,
    INTERFACE_MEMCG_REAPER,
    INTERFACE_PROC_SYS_KERNEL,
    INTERFACE_PAGE_CACHE_LIMIT,
    INTERFACE_SCHED_FEATURES,
)


@dataclass(frozen=True)
class HostRoots:
    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    resctrl: Path = Path("/sys/fs/resctrl")
    cgroup: Path = Path("/sys/fs/cgroup")

    def of(self, root: str) -> Path:
        return {PROC: self.proc, SYS: self.sys, RESCTRL: self.resctrl, CGROUP: self.cgroup}[root]


@dataclass(frozen=True)
class HostWrite:
    """Write `value` into `path` below the root named `root` (making the directory first when
    `mkdir`: a resctrl group).

    `each_line`: every line of `value` is its own write() on the file opened for appending, and a
    line the kernel refuses does not stop the others — a resctrl `tasks` file takes one task id a
    write, and a task may exit before it is moved (Koordinator's `UpdateResctrlTasksFunc`).
    `cached: False` writes it every time: the value is a difference against what the file holds
    now (task ids, sched_features toggles), so a remembered text says nothing."""

    strategy: str
    root: str
    path: str
    value: str
    mkdir: bool = False
    each_line: bool = False
    cached: bool = True

    def as_dict(self, roots: HostRoots) -> dict[str, Any]:
        return {"strategy": self.strategy, "file": str(roots.of(self.root) / self.path), "value": self.value}


class HostView:
    """What a round may read of the host: files under the roots (None when missing)."""

    def __init__(self, roots: HostRoots) -> None:
        self.roots = roots

    def read(self, root: str, path: str) -> str | None:
        try:
            return (self.roots.of(root) / path).read_text()
        except (OSError, UnicodeDecodeError):
            return None

    def exists(self, root: str, path: str = "") -> bool:
        return (self.roots.of(root) / path).exists()

    def is_dir(self, root: str, path: str = "") -> bool:
        return (self.roots.of(root) / path).is_dir()


class NoHost(HostView):
    """A host with none of the interfaces (the default of a round built without one)."""

    def __init__(self) -> None:
        super().__init__(HostRoots(Path("/nonexistent"), Path("/nonexistent"), Path("/nonexistent")))

    def read(self, root: str, path: str) -> str | None:
        return None

    def exists(self, root: str, path: str = "") -> bool:
        return False

    def is_dir(self, root: str, path: str = "") -> bool:
        return False


#: the one `NoHost` (it has no state): a round built without a host shares it
NO_HOST: Final = NoHost()


@dataclass
class HostStats:
    written: int = 0
    skipped: int = 0
    failed: int = 0
    #: lines of `each_line` writes the kernel refused (a task that exited meanwhile): not errors
    refused: int = 0
    errors: list[str] = field(default_factory=list)


class HostFiles:
    """Applies `HostWrite`s; like the cgroup executor it skips the text it wrote last to a file
    until `cache_ttl` has passed, and `dry_run` logs instead of writing."""

    def __init__(
        self,
        roots: HostRoots,
        clock: Callable[[], float],
        cache_ttl: float = 60.0,
        dry_run: bool = False,
        on_write: Callable[[HostWrite], None] | None = None,
    ) -> None:
        self.roots, self.clock, self.dry_run, self.on_write = roots, clock, dry_run, on_write
        self._written_cache = WrittenCache(cache_ttl)

    def apply(self, writes: Iterable[HostWrite]) -> HostStats:
        stats = HostStats()
        now = self.clock()
        for w in writes:
            target = self.roots.of(w.root) / w.path
            key = str(target)
            if w.cached and self._written_cache.fresh(key, w.value, now):
                stats.skipped += 1
                continue
            if self.dry_run:
                log.info("dry-run: write %r to %s", w.value, key)
            else:
                try:
                    if w.mkdir and not target.parent.is_dir():
                        target.parent.mkdir()
                    if w.each_line:
                        stats.refused += _append_lines(key, w.value)
                    else:
                        overwrite(key, w.value)
                except OSError as exc:
                    self._written_cache.forget(key)
                    stats.failed += 1
                    stats.errors.append(f"{key}: {exc.strerror or exc}")
                    continue
            if w.cached:
                self._written_cache.remember(key, w.value, now)
            stats.written += 1
            if self.on_write is not None:
                self.on_write(w)
        return stats


def _append_lines(path: str, value: str) -> int:
    """Each non-empty line of `value` as its own write() (with its newline) on `path` opened for
    appending; the number the kernel refused. Opening the file is the only error raised."""
    refused = 0
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        for line in value.splitlines():
            if not line.strip():
                continue
            try:
                os.write(fd, f"{line.strip()}\n".encode())
            except OSError:
                refused += 1
    finally:
        os.close(fd)
    return refused
