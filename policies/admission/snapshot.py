"""The read-only view of the cluster that policies decide against.

Live mode (watches) and directory mode (files) both build a `ClusterSnapshot`: an immutable index of
the objects, with the profiles already parsed and sorted by name, so that nothing on the admission
path parses or sorts. A new snapshot replaces the old one wholesale; a request keeps the snapshot it
started with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar, cast

from policies.admission.profile_matching import ProfileIndex
from policies.admission.profiles import ColocationProfile, ProfileError, parse_profile
from policies.admission.quota_index import QuotaIndex
from policies.apis.constants import ELASTIC_QUOTA_KIND, PROFILE_KIND
from policies.apis.objects import metadata_of, name_of, namespace_of

_NO_OBJECTS: Mapping[Any, Any] = MappingProxyType({})

T = TypeVar("T")
ObjectKey = tuple[str, str]  # (namespace or "", name)


@dataclass(frozen=True)
class LoadProblem:
    """An object the snapshot could not use, and why; shown to the operator, never fatal."""

    source: str
    message: str


@dataclass(frozen=True)
class ClusterSnapshot:
    objects: Mapping[str, Mapping[ObjectKey, Mapping[str, Any]]] = field(default_factory=dict)
    profiles: tuple[ColocationProfile, ...] = ()
    problems: tuple[LoadProblem, ...] = ()
    quotas: QuotaIndex = field(default_factory=QuotaIndex)
    profile_index: ProfileIndex = field(default_factory=ProfileIndex)
    _derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_objects(cls, objects: Iterable[tuple[str, Mapping[str, Any]]], *, strict: bool = False) -> ClusterSnapshot:
        """Index `(source, object)` pairs; the source (a file path, say) only labels problems.
        `strict`: the objects never met an API server (see `policies.admission.profiles`)."""
        by_kind: dict[str, dict[ObjectKey, Mapping[str, Any]]] = {}
        profiles: dict[str, ColocationProfile] = {}
        problems: list[LoadProblem] = []
        for source, obj in objects:
            entry = index_entry(source, obj, strict=strict)
            problems.extend(entry.problems)
            if entry.key is None:
                continue
            if entry.profile is not None:
                profiles[entry.key[1]] = entry.profile
            by_kind.setdefault(entry.kind, {})[entry.key] = obj
        ordered = sorted_profiles(profiles.values())
        return cls(
            objects=MappingProxyType({k: MappingProxyType(v) for k, v in by_kind.items()}),
            profiles=ordered,
            problems=tuple(problems),
            quotas=QuotaIndex.build(by_kind.get(ELASTIC_QUOTA_KIND, {}).values()),
            profile_index=ProfileIndex.build(ordered),
        )

    def with_objects(self, kind: str, objects: Iterable[Mapping[str, Any]]) -> ClusterSnapshot:
        """This snapshot and `objects` of `kind` besides (read from the API server for one request
        because the watch has not shown them yet); derived views are built afresh for it."""
        added = {(str(namespace_of(o) or ""), str(name_of(o) or "")): o for o in objects}
        merged = {**self.objects, kind: MappingProxyType({**self.objects.get(kind, {}), **added})}
        quotas = (
            QuotaIndex.build(merged.get(ELASTIC_QUOTA_KIND, {}).values()) if kind == ELASTIC_QUOTA_KIND else self.quotas
        )
        return dataclasses.replace(self, objects=MappingProxyType(merged), quotas=quotas, _derived={})

    def derived(self, name: str, build: Callable[[ClusterSnapshot], T]) -> T:
        """A view derived from this snapshot (the ElasticQuota tree), built on first use and then
        kept with it: a new snapshot starts without, so the view is never older than its objects.
        The snapshot knows no view's type, so the modules that define views depend on it, not
        the other way round."""
        try:
            return cast(T, self._derived[name])
        except KeyError:
            value = self._derived[name] = build(self)
            return value

    def get(self, kind: str, name: str, namespace: str = "") -> Mapping[str, Any] | None:
        return self.objects.get(kind, _NO_OBJECTS).get((namespace, name))

    def list(self, kind: str) -> Iterable[Mapping[str, Any]]:
        return self.objects.get(kind, {}).values()

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """Labels of Namespace `name`, or None when the cluster has no such namespace."""
        namespace = self.get("Namespace", name)
        if namespace is None:
            return None
        labels = (namespace.get("metadata") or _NO_OBJECTS).get("labels")
        # `dict` first: the check against the Mapping ABC costs far more, and this runs per admission.
        return labels if isinstance(labels, dict) or isinstance(labels, Mapping) else {}

    def priority_class(self, name: str) -> Mapping[str, Any] | None:
        return self.get("PriorityClass", name)


EMPTY_SNAPSHOT = ClusterSnapshot()


@dataclass(frozen=True)
class IndexEntry:
    """What one object contributes to a snapshot: its key (None when unusable), profile and problems."""

    kind: str
    key: ObjectKey | None
    profile: ColocationProfile | None = None
    problems: tuple[LoadProblem, ...] = ()


def index_entry(
    source: str, obj: Mapping[str, Any], *, strict: bool = False, refuse_sensitive: bool = False
) -> IndexEntry:
    """Check one object and parse it when it is a profile: the only per-object work a snapshot needs."""
    kind = obj.get("kind")
    metadata = metadata_of(obj)
    name = metadata.get("name")
    if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
        return IndexEntry(str(kind), None, None, (LoadProblem(source, "object without kind or metadata.name skipped"),))
    key = (str(metadata.get("namespace") or ""), name)
    for field_name in ("labels", "annotations"):
        values = metadata.get(field_name)
        if values is not None and not (
            isinstance(values, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in values.items())
        ):
            # Selectors and mutations read these on every request: a list where a string belongs
            # would fail each admission; refuse the object once, here.
            return IndexEntry(
                kind,
                None,
                None,
                (
                    LoadProblem(
                        source,
                        f"{kind} {name!r}: metadata.{field_name}: Invalid value: must map strings to strings; "
                        f"object skipped",
                    ),
                ),
            )
    if kind != PROFILE_KIND:
        return IndexEntry(kind, key)
    try:
        profile = parse_profile(obj, strict=strict, refuse_sensitive=refuse_sensitive)
    except ProfileError as exc:
        return IndexEntry(kind, None, None, (LoadProblem(source, str(exc)),))
    warnings = tuple(LoadProblem(source, f"ClusterColocationProfile {name!r}: {w}") for w in profile.warnings)
    return IndexEntry(kind, key, profile, warnings)


def sorted_profiles(profiles: Iterable[ColocationProfile]) -> tuple[ColocationProfile, ...]:
    """Profiles in the order they are applied: by name, compared as bytes (Go's string order)."""
    return tuple(sorted(profiles, key=lambda p: p.name.encode()))


class SnapshotBuilder:
    """Builds successive snapshots of a changing set of objects, redoing only what changed.

    A watch changes one object at a time; re-parsing 1,000 profiles and copying 10,000 namespaces
    for each event would make a burst of events quadratic. The builder keeps each object's parsed
    entry, and the frozen index of every kind that did not change since the last `build()`, and
    reuses them. Not thread-safe: one owner puts, deletes and builds. `strict`: the objects come from
    files, not from an API server (see `policies.admission.profiles`). `refuse_sensitive`: profiles whose patch
    changes security-sensitive fields are refused (`policies.admission.patch_risks`).
    """

    def __init__(self, *, strict: bool = False, refuse_sensitive: bool = False) -> None:
        self.strict, self.refuse_sensitive = strict, refuse_sensitive
        self._objects: dict[str, dict[ObjectKey, Mapping[str, Any]]] = {}
        self._entries: dict[str, dict[ObjectKey, IndexEntry]] = {}
        self._frozen: dict[str, Mapping[ObjectKey, Mapping[str, Any]]] = {}
        self._problems: dict[str, tuple[LoadProblem, ...]] = {}  # per kind, redone only for changed kinds
        #: per kind, how many entries have problems: a kind with none (the usual case) is not walked
        #: again for them when it changes (every pod admitted changes the pods)
        self._with_problems: dict[str, int] = {}
        self._dirty: set[str] = set()
        self._last: ClusterSnapshot = EMPTY_SNAPSHOT

    def put(self, obj: Mapping[str, Any], source: str = "") -> None:
        """Add or replace one object (an ADDED or MODIFIED event)."""
        key = self._key_of(obj)
        kind = str(obj.get("kind"))
        previous = old = self._entries.get(kind, {}).get(key)
        if old is None or not _same_version(self._objects.get(kind, {}).get(key), obj):
            old = index_entry(source or kind, obj, strict=self.strict, refuse_sensitive=self.refuse_sensitive)
        self._dirty.add(kind)
        self._count_problems(kind, previous, -1)
        self._count_problems(kind, old, 1)
        self._entries.setdefault(kind, {})[key] = old
        if old.key is None:  # unusable: remembered for its problem, not served
            self._objects.get(kind, {}).pop(key, None)
        else:
            self._objects.setdefault(kind, {})[key] = obj

    def delete(self, kind: str, key: ObjectKey) -> None:
        self._dirty.add(kind)
        self._objects.get(kind, {}).pop(key, None)
        self._count_problems(kind, self._entries.get(kind, {}).pop(key, None), -1)

    def _count_problems(self, kind: str, entry: IndexEntry | None, change: int) -> None:
        if entry is not None and entry.problems:
            self._with_problems[kind] = self._with_problems.get(kind, 0) + change

    def build(self) -> ClusterSnapshot:
        """A snapshot of the current objects; the previous one when nothing changed."""
        if not self._dirty:
            return self._last
        for kind in self._dirty:
            self._frozen[kind] = MappingProxyType(dict(self._objects.get(kind, {})))
            if self._with_problems.get(kind):
                self._problems[kind] = tuple(p for e in self._entries.get(kind, {}).values() for p in e.problems)
            else:
                self._problems[kind] = ()
        last = self._last
        profiles, profile_index = last.profiles, last.profile_index
        if PROFILE_KIND in self._dirty:
            profiles = sorted_profiles(e.profile for e in self._entries.get(PROFILE_KIND, {}).values() if e.profile)
            profile_index = ProfileIndex.build(profiles)
        quotas = last.quotas
        if ELASTIC_QUOTA_KIND in self._dirty:
            quotas = QuotaIndex.build(self._objects.get(ELASTIC_QUOTA_KIND, {}).values())
        problems = tuple(p for kind_problems in self._problems.values() for p in kind_problems)
        self._dirty.clear()
        self._last = ClusterSnapshot(
            objects=MappingProxyType({k: v for k, v in self._frozen.items() if v}),
            profiles=profiles,
            problems=problems,
            quotas=quotas,
            profile_index=profile_index,
        )
        return self._last

    @staticmethod
    def _key_of(obj: Mapping[str, Any]) -> ObjectKey:
        metadata = metadata_of(obj)
        return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


def _same_version(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """True when both carry the same non-empty resourceVersion: the object did not change."""
    if old is None:
        return False
    version = (new.get("metadata") or {}).get("resourceVersion")
    return bool(version) and (old.get("metadata") or {}).get("resourceVersion") == version
