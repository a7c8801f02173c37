"""What one reflector lists and watches: a kind of the core table, optionally narrowed."""
from __future__ import annotations

from dataclasses import dataclass

from policies.kinds import Kind, kind_named


@dataclass(frozen=True)
class WatchedKind:
    """A kind as one component watches it: all of it, one namespace, or a field-selected part."""

    info: Kind
    namespace: str = ""  # watch one namespace only
    field_selector: str = ""

    @classmethod
    def of(cls, kind: str, namespace: str = "", field_selector: str = "") -> WatchedKind:
        return cls(kind_named(kind), namespace, field_selector)

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
