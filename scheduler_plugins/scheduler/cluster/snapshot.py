"""Reading a cluster snapshot directory, and the source interface the extender uses.

A snapshot directory holds YAML or JSON files (searched recursively, in sorted path order), each
with one object, several YAML documents, or a `List`/`*List` with `items`. Objects of kind Node,
NodeMetric and Pod are used; anything else is ignored. A Pod with `spec.nodeName` is bound,
without one it is pending. The API-server source (`cluster/kube.py`) is a `LiveClusterSource`:
its state fills in while `run()` is awaited, and the framework's API client comes from it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Protocol, runtime_checkable

import yaml

from scheduler_plugins.scheduler.cluster.state import ClusterState
from scheduler_plugins.scheduler.errors import SnapshotError

if TYPE_CHECKING:
    from scheduler_plugins.clock import Clock
    from scheduler_plugins.scheduler.framework.handle import ClusterClient

SUFFIXES = (".yaml", ".yml", ".json")
KINDS = ("Node", "NodeMetric", "Pod")


class ClusterSource(Protocol):
    def load(self) -> ClusterState: ...


@runtime_checkable
class LiveClusterSource(ClusterSource, Protocol):
    """A source that keeps its `ClusterState` current while `run()` is awaited on the event loop."""

    def synced(self) -> bool: ...

    async def run(self) -> None: ...

    def client(self, clock: "Clock") -> "ClusterClient": ...


def read_objects(path: Path) -> Iterator[dict[str, Any]]:
    """Every Kubernetes object in one file, Lists flattened."""
    try:
        text = path.read_text()
        docs = [json.loads(text)] if path.suffix == ".json" else list(yaml.safe_load_all(text))
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise SnapshotError(f"{path}: cannot parse: {exc}") from exc
    for doc in docs:
        if not doc:
            continue
        if not isinstance(doc, dict):
            raise SnapshotError(f"{path}: expected an object, got {type(doc).__name__}")
        if isinstance(doc.get("items"), list):
            for item in doc["items"]:
                kind = doc.get("kind", "")
                if isinstance(item, dict) and "kind" not in item and kind.endswith("List"):
                    item = {**item, "kind": kind[: -len("List")]}
                yield item
        else:
            yield doc


def read_directory(directory: Path) -> list[dict[str, Any]]:
    if not directory.is_dir():
        raise SnapshotError(f"{directory}: not a directory")
    objects: list[dict[str, Any]] = []
    for path in sorted(p for p in directory.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
        for obj in read_objects(path):
            if obj.get("kind") in KINDS:
                if not (obj.get("metadata") or {}).get("name"):
                    raise SnapshotError(f"{path}: a {obj.get('kind')} without metadata.name")
                objects.append(obj)
    return objects


class SnapshotDirectorySource:
    """A `ClusterSource` backed by files on disk, re-read on every `load()`."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def load(self) -> ClusterState:
        return ClusterState.from_objects(read_directory(self.directory))
