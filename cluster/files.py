"""The embedded cluster state: every object in a directory of manifests, reloaded on change.

Files are polled (a stat per file per interval; cheap, and it sees the symlink swaps of a mounted
ConfigMap) in a worker thread, never on the event loop. Each file's objects are cached with its
(mtime, size): only changed files are parsed again, and a file that stops parsing keeps its last
good objects, with the error logged once per change.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster.store import ClusterStore
from policies.manifests import MANIFEST_SUFFIXES, ManifestError, parse_manifest_text
from policies.objects import metadata_of
from policies.snapshot import LoadProblem

log = logging.getLogger("colocate.state")

Signature = tuple[int, int]


def manifest_files(root: Path) -> list[Path]:
    """Manifest files below `root`, skipping hidden entries (a mounted volume's `..data` dirs)."""
    found: list[Path] = []
    for directory, subdirectories, files in os.walk(root, followlinks=True):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
        found.extend(Path(directory, f) for f in sorted(files)
                     if not f.startswith(".") and f.endswith(MANIFEST_SUFFIXES))
    return found


def read_manifest_file(path: Path) -> list[dict[str, Any]]:
    """Every object in one file; a file that cannot be read or parsed is a `ManifestError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: {exc}") from exc
    return parse_manifest_text(text, str(path))


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

    def __init__(self, root: Path, store: ClusterStore) -> None:
        self.root, self.store = root, store
        self._files: dict[Path, _CachedFile] = {}
        self._scanned_once = False

    def scan(self) -> bool:
        """Re-read changed files into the store; True when anything changed (always the first
        time). Blocking I/O: run it in a worker thread."""
        if not self.root.is_dir():
            raise ManifestError(f"{self.root}: not a directory")
        changed = False
        seen = set()
        for path in manifest_files(self.root):
            seen.add(path)
            try:
                stat = path.stat()
            except OSError:
                continue
            signature = (stat.st_mtime_ns, stat.st_size)
            cached = self._files.get(path)
            if cached is not None and cached.signature == signature:
                continue
            changed = True
            try:
                self._files[path] = _CachedFile(signature, read_manifest_file(path))
            except ManifestError as exc:
                kept = cached.objects if cached else []
                self._files[path] = _CachedFile(signature, kept, str(exc))
                log.error("cannot load %s, keeping its last good objects (%d): %s", path, len(kept), exc)
        for gone in set(self._files) - seen:
            del self._files[gone]
            changed = True
        if not changed and self._scanned_once:
            return False
        self._scanned_once = True
        self._apply()
        return True

    def _apply(self) -> None:
        by_kind: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        problems = [LoadProblem(str(p), c.error) for p, c in sorted(self._files.items()) if c.error]
        for path, cached in sorted(self._files.items()):
            for obj in cached.objects:
                kind, name = obj.get("kind"), metadata_of(obj).get("name")
                if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
                    problems.append(LoadProblem(str(path), "object without kind or metadata.name skipped"))
                    continue
                by_kind.setdefault(kind, []).append((str(path), obj))
        with self.store.lock:
            self.store.set_problems(tuple(problems))
            for kind in sorted(set(self.store.kinds()) | set(by_kind)):
                self.store.replace_sourced(kind, by_kind.get(kind, ()))
        for problem in problems:
            log.warning("%s: %s", problem.source, problem.message)


def load_directory(root: Path, kinds: Iterable[str] = ()) -> ClusterStore:
    """A store holding every object below `root`, read once (the offline commands)."""
    store = ClusterStore(kinds)
    DirectorySource(root, store).scan()
    return store
