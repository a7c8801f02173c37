"""A read-only view of one object kept as a plain dict, its accessors read once.

A module of its own, not in `policies.apis.objects`: that module is compiled with mypyc
(`colocate/cluster/compiled.py`), and the interpreted classes that derive from this one (the
scheduler's `PodInfo`, `ReservationInfo`, `NodeInfo`) could not derive from a compiled class
(`devtools.compiled_copy.hazards`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from policies.apis.objects import annotations_of, labels_of, metadata_of, spec_of, status_of


class ObjectView:
    """A read-only view of one object kept as a plain dict: the accessors above, each read once.

    The scheduler's `PodInfo`, `ReservationInfo` and `NodeInfo` derive from it what their plugins
    read on every node of every cycle; never mutate `obj`, build a new view instead.
    """

    __slots__ = ("obj", "__dict__")

    def __init__(self, obj: Mapping[str, Any]) -> None:
        self.obj = obj

    @cached_property
    def metadata(self) -> Mapping[str, Any]:
        return metadata_of(self.obj)

    @cached_property
    def spec(self) -> Mapping[str, Any]:
        return spec_of(self.obj)

    @cached_property
    def status(self) -> Mapping[str, Any]:
        return status_of(self.obj)

    @cached_property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @cached_property
    def uid(self) -> str:
        return str(self.metadata.get("uid") or "")

    @cached_property
    def labels(self) -> Mapping[str, str]:
        return labels_of(self.obj)

    @cached_property
    def annotations(self) -> Mapping[str, str]:
        return annotations_of(self.obj)
