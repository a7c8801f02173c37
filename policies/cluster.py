"""The read-only view of the cluster that policies decide against.

Live mode (watches) and directory mode (files) both build a `ClusterSnapshot`: an immutable index of
the objects, with the profiles already parsed and sorted by name, so that nothing on the admission
path parses or sorts. A new snapshot replaces the old one wholesale; a request keeps the snapshot it
started with.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from policies.constants import ELASTIC_QUOTA_KIND, PROFILE_KIND
from policies.profile_matching import ProfileIndex
from policies.profiles import ColocationProfile, ProfileError, parse_profile
from policies.quota_index import QuotaIndex

if TYPE_CHECKING:
    from policies.elastic_quota.tree import QuotaTree

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

    @classmethod
    def from_objects(cls, objects: Iterable[tuple[str, Mapping[str, Any]]]) -> ClusterSnapshot:
        """Index `(source, object)` pairs; the source (a file path, say) only labels problems."""
        by_kind: dict[str, dict[ObjectKey, Mapping[str, Any]]] = {}
        profiles: dict[str, ColocationProfile] = {}
        problems: list[LoadProblem] = []
        for source, obj in objects:
            kind = obj.get("kind")
            metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
            name = metadata.get("name")
            if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
                problems.append(LoadProblem(source, "object without kind or metadata.name skipped"))
                continue
            if kind == PROFILE_KIND:
                try:
                    profile = parse_profile(obj)
                except ProfileError as exc:
                    problems.append(LoadProblem(source, str(exc)))
                    continue
                problems.extend(LoadProblem(source, f"ClusterColocationProfile {name!r}: {w}") for w in profile.warnings)
                profiles[name] = profile
            key = (str(metadata.get("namespace") or ""), name)
            by_kind.setdefault(kind, {})[key] = obj
        ordered = tuple(profiles[name] for name in sorted(profiles, key=lambda n: n.encode()))
        return cls(
            objects=MappingProxyType({k: MappingProxyType(v) for k, v in by_kind.items()}),
            profiles=ordered,
            problems=tuple(problems),
            quotas=QuotaIndex.build(by_kind.get(ELASTIC_QUOTA_KIND, {}).values()),
            profile_index=ProfileIndex.build(ordered),
        )

    @cached_property
    def quota_tree(self) -> QuotaTree:
        """The ElasticQuota tree (spec 10.2), built on first use and then kept with this snapshot."""
        from policies.elastic_quota.tree import QuotaTree  # here: the tree's module imports the admission types

        return QuotaTree.build(self.list(ELASTIC_QUOTA_KIND), self.list("Pod"))

    def get(self, kind: str, name: str, namespace: str = "") -> Mapping[str, Any] | None:
        return self.objects.get(kind, {}).get((namespace, name))

    def list(self, kind: str) -> Iterable[Mapping[str, Any]]:
        return self.objects.get(kind, {}).values()

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """Labels of Namespace `name`, or None when the cluster has no such namespace."""
        namespace = self.get("Namespace", name)
        if namespace is None:
            return None
        labels = (namespace.get("metadata") or {}).get("labels")
        return labels if isinstance(labels, Mapping) else {}

    def priority_class(self, name: str) -> Mapping[str, Any] | None:
        return self.get("PriorityClass", name)


EMPTY_SNAPSHOT = ClusterSnapshot()
