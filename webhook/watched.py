"""What the webhook lists and watches, and the RBAC rules for it: both derived from the plugins.

Each admission plugin declares what it reads from the cluster snapshot (`reads`, a set of
`policies.admission.plugin.Read`); the routes of a registry read the union. A kind read whole is watched
whole; a kind read only in one namespace, or as one named object, is watched that narrowly (the
slo-controller-config ConfigMap: namespace koordinator-system, `metadata.name=slo-controller-config`).
The same narrowing gives the RBAC rule: list and watch, cluster-wide or in that namespace, and for
one named object only that name (RBAC authorises a list or watch by resourceNames when it selects
`metadata.name`).

A kind every reader of which reads only metadata (`Read(..., metadata_only=True)`: the quota tree's
Pods) is watched metadata-only: the store keeps apiVersion, kind and metadata of each object
(`colocate.cluster.kinds.keep_metadata`). One reader of the whole object (the background audit's
`AUDIT_READS`, passed as `also` when the audit runs) keeps the kind whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from colocate.cluster.kinds import WatchedKind
from policies.admission.plugin import Read
from policies.apis.kinds import KINDS, kind_named
from webhook.registry import Registry

READ_VERBS = ("list", "watch")


def merged_reads(reads: Iterable[Read]) -> tuple[Read, ...]:
    """One read per kind, wide enough for every plugin's, in the order of the kinds table.

    Two reads of one kind that differ in name widen to their namespace; in namespace, to the kind.
    The merged read is metadata-only when every read of the kind is.
    """
    by_kind: dict[str, Read] = {}
    for read in reads:
        seen = by_kind.get(read.kind)
        if seen is None:
            by_kind[read.kind] = read
            continue
        metadata_only = seen.metadata_only and read.metadata_only
        if (seen.namespace, seen.name) == (read.namespace, read.name):
            by_kind[read.kind] = Read(read.kind, read.namespace, read.name, metadata_only)
        elif seen.namespace == read.namespace:
            by_kind[read.kind] = Read(read.kind, read.namespace, metadata_only=metadata_only)
        else:
            by_kind[read.kind] = Read(read.kind, metadata_only=metadata_only)
    order = {name: index for index, name in enumerate(KINDS)}
    return tuple(sorted(by_kind.values(), key=lambda read: order[read.kind]))


def watch_of(read: Read) -> WatchedKind:
    return WatchedKind.of(
        read.kind,
        namespace=read.namespace,
        field_selector=f"metadata.name={read.name}" if read.name else "",
        metadata_only=read.metadata_only,
    )


def watched_kinds(registry: Registry, also: Iterable[Read] = ()) -> tuple[WatchedKind, ...]:
    """The kinds the routes of `registry` read, and those of `also` (another reader of the same
    state: the background audit), each narrowed and slimmed as far as all its readers allow."""
    return tuple(watch_of(read) for read in merged_reads([*registry.reads(), *also]))


@dataclass(frozen=True, order=True)
class ReadRule:
    """One RBAC rule the webhook needs: a ClusterRole rule, or a Role rule in `namespace`."""

    namespace: str  # "" = cluster-wide
    api_group: str
    resource: str
    resource_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = READ_VERBS


def read_rule(read: Read) -> ReadRule:
    kind = kind_named(read.kind)
    return ReadRule(read.namespace, kind.group, kind.plural, (read.name,) if read.name else ())


def read_rules(registry: Registry) -> tuple[ReadRule, ...]:
    """The list/watch grants the webhook's reflectors need for `registry`, no more."""
    return tuple(read_rule(read) for read in merged_reads(registry.reads()))
