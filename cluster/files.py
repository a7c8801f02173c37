"""The embedded cluster state: every object in a directory of manifests, reloaded on change.

Files are polled (a stat per file per interval; cheap, and it sees the symlink swaps of a mounted
ConfigMap) in a worker thread, never on the event loop. Each file's objects are cached with its
(mtime, size): only changed files are parsed again, and a file that stops parsing keeps its last
good objects, with the error logged once per change.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.snapshot import ClusterSnapshot, LoadProblem
from policies.manifests import MANIFEST_SUFFIXES, ManifestError, read_manifest_file
from webhook.state import StateHolder

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


@dataclass
class _CachedFile:
    signature: Signature
    objects: list[dict[str, Any]]
    error: str | None = None


@dataclass
class DirectorySource:
    root: Path
    interval: float = 1.0
    _files: dict[Path, _CachedFile] = field(default_factory=dict)
    _scanned_once: bool = False

    def scan(self) -> ClusterSnapshot | None:
        """Re-read changed files; a new snapshot when anything changed, else None. Blocking I/O."""
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
            return None
        self._scanned_once = True
        return self.snapshot()

    def snapshot(self) -> ClusterSnapshot:
        pairs = [(str(path), obj) for path, cached in sorted(self._files.items()) for obj in cached.objects]
        snapshot = ClusterSnapshot.from_objects(pairs)
        file_problems = tuple(LoadProblem(str(p), c.error) for p, c in sorted(self._files.items()) if c.error)
        for problem in snapshot.problems:
            log.warning("%s: %s", problem.source, problem.message)
        return dataclasses.replace(snapshot, problems=file_problems + snapshot.problems)

    async def run(self, state: StateHolder, on_reload: Any = None) -> None:
        """Poll forever, publishing a snapshot whenever the directory changes."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                snapshot = await loop.run_in_executor(None, self.scan)
            except Exception as exc:  # keep serving the last good state
                log.error("reloading %s failed, keeping the last good state: %s", self.root, exc)
                if on_reload:
                    on_reload(None)
            else:
                if snapshot is not None:
                    state.publish(snapshot)
                    log.info("cluster state loaded from %s: %d profiles, %d problems",
                             self.root, len(snapshot.profiles), len(snapshot.problems))
                    if on_reload:
                        on_reload(snapshot)
            await asyncio.sleep(self.interval)
