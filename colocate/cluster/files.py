"""A directory of manifests as a cluster source, reloaded on change.

Files are polled (a stat per file per interval; cheap, and it sees the symlink swaps of a mounted
ConfigMap). A scan is blocking I/O: callers run it off the event loop. Each file's objects are
cached with its signature (mtime, size, inode, ctime: `cp -p` and `rsync -a` keep the mtime and
often the size, never the ctime): only changed files are parsed again.

Whatever goes wrong keeps the last good objects and becomes a `LoadProblem` the operator sees
(log line, `colocate_cluster_state_problems`, `/readyz` detail), never a silently emptier state:

* a file that stops parsing, or cannot be read, keeps its last good objects;
* a directory that cannot be listed keeps the objects of every file below it;
* a file that raises anything while it is read or parsed is that file's problem, named and counted;
  the other files reload;
* only regular files are read (a FIFO named `x.yaml` would block `open()` forever), directories
  reached twice through symlinks are walked once, a symlink that resolves outside the directory is
  not followed (a link to `/` would walk the whole file system), and a scan has limits on files,
  bytes per file, bytes in all and time. A scan past a limit changes no object: before the first
  load that is an error (not ready); later the last good objects stay and the limit is a problem.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from colocate.cluster.store import ClusterStore
from policies.admission.snapshot import LoadProblem
from policies.apis.field_errors import aggregate
from policies.apis.manifests import MANIFEST_SUFFIXES, ManifestError, parse_manifest_text
from policies.apis.names import object_name_errors
from policies.apis.objects import metadata_of

log = logging.getLogger("colocate.state")
T = TypeVar("T")

Signature = tuple[int, int, int, int]  # mtime ns, size, inode, ctime ns


@dataclass(frozen=True)
class ScanLimits:
    """Bounds of one scan: a directory is operator input, but a wrong mount must not wedge us."""

    max_files: int = 10_000
    max_file_bytes: int = 8 * 1024 * 1024
    max_total_bytes: int = 16 * 1024 * 1024  # two files at the per-file limit; ~20 s of parsing at worst
    deadline: float = 10.0  # seconds one scan may take before it gives up (keeping the last state)


class ScanError(Exception):
    """The directory could not be scanned at all (the last good state is kept)."""


@dataclass
class Listing:
    """What one walk found: manifest files with their stat, and the directories it could not read."""

    files: dict[Path, os.stat_result] = field(default_factory=dict)
    unreadable: dict[Path, str] = field(default_factory=dict)  # directory -> why
    problems: list[LoadProblem] = field(default_factory=list)


def _inside(path: Path, home: str) -> bool:
    resolved = os.path.realpath(path)
    return resolved == home or resolved.startswith(home.rstrip(os.sep) + os.sep)


def list_manifests(root: Path, limits: ScanLimits = ScanLimits(), clock: Any = time.monotonic) -> Listing:
    """Manifest files below `root` (hidden entries such as a mounted volume's `..data` skipped),
    following symlinks that stay inside `root` and walking each directory once."""
    listing = Listing()
    home = os.path.realpath(root)
    deadline = clock() + limits.deadline
    seen_directories: set[tuple[int, int]] = set()
    pending = [root]
    while pending:
        directory = pending.pop()
        if clock() > deadline:
            raise ScanError(f"{root}: scan took longer than {limits.deadline:g}s; keeping the last good state")
        try:
            info = directory.stat()
            if (info.st_dev, info.st_ino) in seen_directories:
                continue  # a symlink back to a directory already walked
            seen_directories.add((info.st_dev, info.st_ino))
            with os.scandir(directory) as scanner:
                entries = sorted(scanner, key=lambda e: e.name)
        except OSError as exc:
            reason = listing.unreadable[directory] = str(exc.strerror or exc)
            listing.problems.append(
                LoadProblem(
                    str(directory), f"cannot read the directory ({reason}); the last good objects of its files are kept"
                )
            )
            continue
        subdirectories = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            try:
                if entry.is_symlink() and not _inside(path, home):
                    listing.problems.append(
                        LoadProblem(str(path), "a symlink that resolves outside the directory, not followed")
                    )
                    continue
                entry_stat = entry.stat()  # follows symlinks
            except OSError:
                continue  # a dangling symlink: nothing there
            if stat.S_ISDIR(entry_stat.st_mode):
                subdirectories.append(path)
            elif entry.name.endswith(MANIFEST_SUFFIXES):
                if not stat.S_ISREG(entry_stat.st_mode):
                    listing.problems.append(LoadProblem(str(path), "not a regular file, skipped"))
                    continue
                if len(listing.files) >= limits.max_files:
                    raise ScanError(f"{root}: more than {limits.max_files} manifest files")
                listing.files[path] = entry_stat
        pending.extend(reversed(subdirectories))
    return listing


def manifest_files(root: Path) -> list[Path]:
    """The manifest files below `root`, in the order they are loaded."""
    return sorted(list_manifests(root).files)


def read_manifest_text(path: Path, max_bytes: int = ScanLimits.max_file_bytes) -> str:
    """The text of one regular file of at most `max_bytes`; anything else is a `ManifestError`.
    Opened without blocking and checked after opening, so a FIFO or a device named `x.yaml` is
    refused instead of hanging the reader."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ManifestError(f"{path}: {exc.strerror or exc}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ManifestError(f"{path}: not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ManifestError(f"{path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    if len(raw) > max_bytes:
        raise ManifestError(f"{path}: larger than {max_bytes} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def read_manifest_file(path: Path, max_bytes: int = ScanLimits.max_file_bytes) -> list[dict[str, Any]]:
    """Every object in one file; a file that cannot be read or parsed is a `ManifestError`."""
    return parse_manifest_text(read_manifest_text(path, max_bytes), str(path))


def file_problem(path: Path, error: str) -> LoadProblem:
    """The problem of one file: its source is `path` (with `:line:column` when the error has a
    position), its message the error without the path repeated."""
    text = str(path)
    if error.startswith(text):
        rest = error[len(text) :]
        position, sep, message = rest.lstrip(":").partition(": ")
        if sep and position and all(part.isdigit() for part in position.split(":")):
            return LoadProblem(f"{text}:{position}", message)
        return LoadProblem(text, rest.lstrip(":").strip() or error)
    return LoadProblem(text, error)


def _signature(info: os.stat_result) -> Signature:
    return (info.st_mtime_ns, info.st_size, info.st_ino, info.st_ctime_ns)


@dataclass
class _CachedFile:
    signature: Signature
    objects: list[dict[str, Any]]
    error: str | None = None


class DirectorySource:
    """Keeps `store` in step with the manifests below `root`: a changed file is parsed again, a
    file that stops parsing keeps its last good objects, a removed file takes its objects along.
    Every kind the store knows is replaced on each reload, so one that vanished from the files
    empties; the first scan makes the store synced."""

    def __init__(
        self, root: Path, store: ClusterStore, limits: ScanLimits = ScanLimits(), log_problems: bool = True
    ) -> None:
        self.root, self.store, self.limits, self.log_problems = root, store, limits, log_problems
        self._logged: frozenset[LoadProblem] = frozenset()
        self._files: dict[Path, _CachedFile] = {}
        self._walk_problems: list[LoadProblem] = []
        self._scan_problem: LoadProblem | None = None
        self._scanned_once = False

    def scan(self) -> bool:
        """Re-read changed files into the store; True when anything changed (always the first
        time). When the directory cannot be scanned (missing, past a limit) nothing changes: the
        first time that raises `ScanError`; later it is a problem of the root, shown with the last
        good objects (True when that problem is new)."""
        try:
            changed = self._scan()
        except ScanError as exc:
            if not self._scanned_once:
                raise
            problem = LoadProblem(str(self.root), f"{exc}; the last good objects are kept")
            if problem == self._scan_problem:
                return False
            self._scan_problem = problem
            self._apply()
            return True
        if self._scan_problem is not None:
            self._scan_problem = None
            self._apply()
            return True
        return changed

    def _scan(self) -> bool:
        if not self.root.is_dir():
            raise ScanError(f"{self.root}: not a directory")
        listing = list_manifests(self.root, self.limits)
        if self.root in listing.unreadable and not self._scanned_once:  # nothing to keep: not loaded, not ready
            raise ScanError(f"{self.root}: cannot read the directory ({listing.unreadable[self.root]})")
        total = sum(info.st_size for info in listing.files.values())
        if total > self.limits.max_total_bytes:
            raise ScanError(
                f"{self.root}: {total} bytes of manifests, over the scan limit of {self.limits.max_total_bytes} "
                f"bytes ({self.limits.max_total_bytes / 2**20:g} MiB) for one directory; the limit is fixed "
                "(ScanLimits): split the state, or read the cluster from the API server (--kubeconfig)"
            )
        changed = [p.message for p in listing.problems] != [p.message for p in self._walk_problems]
        self._walk_problems = listing.problems
        for path, info in listing.files.items():
            signature = _signature(info)
            cached = self._files.get(path)
            if cached is not None and cached.signature == signature:
                continue
            changed = True
            try:
                self._files[path] = _CachedFile(signature, read_manifest_file(path, self.limits.max_file_bytes))
            except Exception as exc:  # whatever a file does, it is that file's problem only
                error = str(exc) if isinstance(exc, ManifestError) else f"{path}: {type(exc).__name__}: {exc}"
                error = " ".join(error.split())[:1000]
                kept = cached.objects if cached else []
                self._files[path] = _CachedFile(signature, kept, error)
        for gone in set(self._files) - set(listing.files):
            if any(gone.is_relative_to(d) for d in listing.unreadable):
                continue  # not gone: hidden behind a directory we cannot read just now
            del self._files[gone]
            changed = True
        if not changed and self._scanned_once:
            return False
        self._scanned_once = True
        self._apply()
        return True

    def _apply(self) -> None:
        by_kind: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        problems = [
            *([self._scan_problem] if self._scan_problem else []),
            *self._walk_problems,
            *(file_problem(p, c.error) for p, c in sorted(self._files.items()) if c.error),
        ]
        for path, cached in sorted(self._files.items()):
            for obj in cached.objects:
                kind, name = obj.get("kind"), metadata_of(obj).get("name")
                if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
                    problems.append(LoadProblem(str(path), "object without kind or metadata.name skipped"))
                    continue
                refused = object_name_errors(kind, metadata_of(obj))
                if refused:  # the API server would never have stored it: no cluster holds it
                    problems.append(LoadProblem(str(path), f"{kind} {aggregate(refused)}: skipped"))
                    continue
                by_kind.setdefault(kind, []).append((str(path), obj))
        with self.store.lock:
            self.store.set_problems(tuple(problems))
            for kind in sorted(set(self.store.kinds()) | set(by_kind)):
                self.store.replace_sourced(kind, by_kind.get(kind, ()))
        if self.log_problems:  # each once, when it appears: a broken file is not a log line per scan
            for problem in problems:
                if problem not in self._logged:
                    log.warning("%s: %s", problem.source, problem.message)
        self._logged = frozenset(problems)


def start_in_daemon_thread(call: Callable[[], T], name: str) -> asyncio.Future[T]:
    """Run a blocking call in a daemon thread and return a future for its result. Unlike the loop's
    executor, a call stuck in the kernel (a hung network file system) never holds up exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def target() -> None:
        try:
            result, error = call(), None
        except BaseException as exc:  # handed to the awaiting task
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop closed while we were stuck: nobody waits any more
            pass

    threading.Thread(target=target, name=name, daemon=True).start()
    return future


def load_directory(root: Path, kinds: Iterable[str] = ()) -> ClusterStore:
    """A store holding every object below `root`, read once (the offline commands: their problems
    are the store's, for the command to print)."""
    store = ClusterStore(kinds)
    DirectorySource(root, store, log_problems=False).scan()
    return store


def scan_all_or_refuse(root: Path, store: ClusterStore, label: str) -> DirectorySource:
    """The first scan of a command whose every file must be usable (`plan`, `run --cluster`): a
    `root` that is not a directory, or any file left out, is a `ManifestError` of one line (named
    `label`, e.g. `--cluster DIR`, when it is the directory itself). The source returned logs the
    problems of later scans and keeps the last good objects, as a running source does."""
    if not root.is_dir():
        raise ManifestError(f"{label}: not a directory")
    source = DirectorySource(root, store, log_problems=False)  # the first scan's are an error
    source.scan()
    if store.problems:
        raise ManifestError(f"{store.problems[0].source}: {store.problems[0].message}")
    source.log_problems = True
    return source
