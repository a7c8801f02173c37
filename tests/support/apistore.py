"""The in-memory object store behind the API-server stand-in: resourceVersions, history, watchers.

Like etcd behind kube-apiserver: one global, increasing resourceVersion; every write is recorded in
a history a watch can resume from, until `compact()` drops it (then a watch from an older version
gets 410 Gone).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from policies.apis.kinds import Kind


@dataclass
class Event:
    version: int
    type: str
    obj: dict[str, Any]
    prev: dict[str, Any] | None = None  # the object before a MODIFIED (watch filters need it)


@dataclass
class Watcher:
    resource: Kind
    namespace: str
    queue: asyncio.Queue[Event | None] = field(default_factory=asyncio.Queue)


class Conflict(Exception):
    pass


class NotFound(Exception):
    pass


class Invalid(Exception):
    """422: the write breaks a rule of the resource (e.g. a Secret's type is immutable)."""


class Store:
    def __init__(self) -> None:
        self.objects: dict[Kind, dict[tuple[str, str], dict[str, Any]]] = {}
        self.history: dict[Kind, list[Event]] = {}
        self.compacted_to = 0  # versions at or below this are gone from the history
        self.watchers: list[Watcher] = []
        self._versions = itertools.count(1)
        self.version = 0

    def _bump(self) -> int:
        self.version = next(self._versions)
        return self.version

    def _record(self, resource: Kind, type_: str, obj: dict[str, Any], prev: dict[str, Any] | None = None) -> None:
        event = Event(int(obj["metadata"]["resourceVersion"]), type_, copy.deepcopy(obj), copy.deepcopy(prev))
        self.history.setdefault(resource, []).append(event)
        for watcher in self.watchers:
            if watcher.resource == resource and watcher.namespace in ("", obj["metadata"].get("namespace", "")):
                watcher.queue.put_nowait(event)

    def list(self, resource: Kind, namespace: str = "") -> list[dict[str, Any]]:
        items = self.objects.get(resource, {})
        return [items[k] for k in sorted(items) if not namespace or k[0] == namespace]

    def get(self, resource: Kind, namespace: str, name: str) -> dict[str, Any]:
        try:
            return self.objects[resource][(namespace, name)]
        except KeyError:
            raise NotFound(f'{resource.plural} "{name}" not found') from None

    def put(self, resource: Kind, obj: dict[str, Any], *, create_only: bool = False) -> dict[str, Any]:
        """Create or replace; the caller's resourceVersion, when given, must be current (optimistic lock)."""
        obj = copy.deepcopy(obj)
        metadata = obj.setdefault("metadata", {})
        key = (metadata.get("namespace", "") if resource.namespaced else "", metadata["name"])
        existing = self.objects.get(resource, {}).get(key)
        if existing is not None and create_only:
            raise Conflict(f'{resource.plural} "{key[1]}" already exists')
        given = metadata.get("resourceVersion")
        if existing is not None and given and given != existing["metadata"]["resourceVersion"]:
            raise Conflict(f"the object {key[1]} has been modified; please apply your changes to the latest version")
        obj.setdefault("apiVersion", resource.api_version)
        obj.setdefault("kind", resource.kind)
        if resource.kind == "Secret":  # defaulted, then immutable, as kube-apiserver does
            obj.setdefault("type", "Opaque")
            if existing is not None and existing.get("type") != obj["type"]:
                raise Invalid(f'Secret "{key[1]}" is invalid: type: Invalid value: "{obj["type"]}": field is immutable')
        if resource.kind == "Namespace":  # kube-apiserver labels every namespace with its name
            metadata.setdefault("labels", {})["kubernetes.io/metadata.name"] = metadata["name"]
        metadata["resourceVersion"] = str(self._bump())
        if existing is not None:
            metadata.setdefault("uid", existing["metadata"].get("uid"))
        else:
            metadata.setdefault("uid", f"uid-{self.version}")
        self.objects.setdefault(resource, {})[key] = obj
        self._record(resource, "ADDED" if existing is None else "MODIFIED", obj, existing)
        return obj

    def patch(self, resource: Kind, namespace: str, name: str, patch: Any, patch_type: str) -> dict[str, Any]:
        current = copy.deepcopy(self.get(resource, namespace, name))
        if patch_type == "json":
            patched = jsonpatch.apply_patch(current, patch)
        else:  # merge patch (strategic merge treated as a JSON merge patch: enough for metadata/data/caBundle)
            patched = merge_patch(current, patch)
        patched["metadata"].pop("resourceVersion", None)
        return self.put(resource, patched)

    def delete(self, resource: Kind, namespace: str, name: str) -> dict[str, Any]:
        obj = self.objects.get(resource, {}).pop((namespace, name), None)
        if obj is None:
            raise NotFound(f'{resource.plural} "{name}" not found')
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self._bump())
        self._record(resource, "DELETED", obj)
        return obj

    def events_since(self, resource: Kind, version: int, namespace: str = "") -> list[Event]:
        if version < self.compacted_to:
            raise Conflict("too old resource version")
        return [
            e
            for e in self.history.get(resource, ())
            if e.version > version and (not namespace or e.obj["metadata"].get("namespace") == namespace)
        ]

    def compact(self) -> None:
        """Forget the history up to now, as etcd compaction does."""
        self.compacted_to = self.version
        for events in self.history.values():
            events.clear()


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
