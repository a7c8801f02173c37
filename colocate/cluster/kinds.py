"""What one reflector lists and watches: a kind of the core table, optionally narrowed or slimmed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policies.apis.kinds import Kind, kind_named

Object = Mapping[str, Any]
#: What the store keeps of each object of a kind, as client-go's informer transforms
#: (`SharedIndexInformer.SetTransform`): called once per object as it enters the store.
Transform = Callable[[Object], Object]


def keep_metadata(obj: Object) -> Object:
    """`apiVersion`, `kind` and `metadata` of `obj`: what a metadata-only watch gives
    (controller-runtime's `PartialObjectMetadata`), spec and status dropped.

    The whole of `metadata` is kept (but managedFields, which no reader wants): name, namespace and
    resourceVersion key the object and tell a change from a relist's repeat; uid, labels,
    annotations, ownerReferences, finalizers and the creation and deletion timestamps are what a
    reader of metadata reads. They are a few hundred bytes of a pod; a pod's spec and status are the
    kilobytes. Keeping all of ObjectMeta means a reader declaring metadata sees the same object as
    from an API server's PartialObjectMetadata, whichever way the store was fed.
    """
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping) and "managedFields" in metadata:
        metadata = {k: v for k, v in metadata.items() if k != "managedFields"}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": metadata}


@dataclass(frozen=True)
class WatchedKind:
    """A kind as one component watches it: all of it, one namespace, or a field-selected part;
    `metadata_only` when none of its readers reads more than its metadata (`keep_metadata`)."""

    info: Kind
    namespace: str = ""  # watch one namespace only
    field_selector: str = ""
    metadata_only: bool = False

    @classmethod
    def of(
        cls, kind: str, namespace: str = "", field_selector: str = "", *, metadata_only: bool = False
    ) -> WatchedKind:
        return cls(kind_named(kind), namespace, field_selector, metadata_only)

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def group(self) -> str:
        return self.info.group

    @property
    def plural(self) -> str:
        return self.info.plural

    @property
    def api_version(self) -> str:
        return self.info.api_version

    def collection_path(self) -> str:
        return self.info.collection_path(self.namespace)


def transforms_of(kinds: Iterable[WatchedKind]) -> dict[str, Transform]:
    """The store's transform per kind: `keep_metadata` for a kind every watch of which is
    metadata-only."""
    by_kind: dict[str, bool] = {}
    for kind in kinds:
        by_kind[kind.kind] = by_kind.get(kind.kind, True) and kind.metadata_only
    return {kind: keep_metadata for kind, slim in by_kind.items() if slim}
