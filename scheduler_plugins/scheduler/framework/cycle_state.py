"""Per-cycle scratch space shared by the plugins of one scheduling cycle (`framework.CycleState`).

Keys are namespaced by the writing plugin's name; values are whatever that plugin needs. A
`clone()` is shallow, as upstream: plugins store values they do not mutate after writing.
"""
from __future__ import annotations

from typing import Any, Final

#: The name of the reservation the pod reserved in this cycle (Koordinator frameworkext's
#: nominated reservation): written by the Reservation plugin at Reserve, read by the scheduling
#: loop to report which reservation a placement consumed.
RESERVED_RESERVATION: Final = "frameworkext/reserved-reservation"


class CycleState:
    __slots__ = ("_data", "skip_filter_plugins", "skip_score_plugins", "skip_before_filter")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        #: BeforeFilter transformers with nothing to change for this pod (told by their
        #: BeforePreFilter): the framework keeps its batch Filter path when all of them are here
        self.skip_before_filter: set[str] = set()

    def read(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        other = CycleState()
        other._data = dict(self._data)
        other.skip_filter_plugins = set(self.skip_filter_plugins)
        other.skip_score_plugins = set(self.skip_score_plugins)
        other.skip_before_filter = set(self.skip_before_filter)
        return other
