"""The NodeSLO the agent acts on: the last one that passed validation.

A NodeSLO whose values the slo-controller-config rules refuse (a percentage of −50 or 1e23, an
eviction threshold of 0) is not applied: the agent keeps acting on the last good one, or on none
before there was one, and says so once per rejected object — a log line,
`koordlet_node_slo_rejected_total` and a Warning Event `NodeSLORejected` on the NodeSLO.

A `systemStrategy` key the rules refuse is skipped alone (Koordinator's sysreconcile validates each
key): the NodeSLO applies without it, and each skipped key is told once per object — a log line,
`koordlet_node_slo_skipped_keys_total{key}` and a Warning Event `NodeSLOKeySkipped`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from policies.apis.field_errors import ConfigError
from policies.apis.objects import metadata_of, name_of
from scheduler_plugins.koordlet.nodeslo import NodeSLO

log = logging.getLogger("colocate.koordlet.nodeslo")
EVENT_REASON: Final = "NodeSLORejected"
SKIPPED_EVENT_REASON: Final = "NodeSLOKeySkipped"
#: told of a skipped key: the NodeSLO, the key's field path, why
OnSkipped = Callable[[Mapping[str, Any], str, str], None]


class NodeSLOKeeper:
    def __init__(
        self, on_rejected: Callable[[Mapping[str, Any], str], None] | None = None, on_skipped: OnSkipped | None = None
    ) -> None:
        self.on_rejected, self.on_skipped = on_rejected, on_skipped
        #: (resourceVersion, field path, why) of the skipped keys already told
        self._told_skipped: frozenset[tuple[str, str, str]] = frozenset()
        self.last_good: NodeSLO | None = None
        self._last_obj: Mapping[str, Any] | None = None
        self._last_result: tuple[NodeSLO | None, str | None] = (None, None)
        self._rejected: tuple[str, str] | None = None

    def parse(self, obj: Mapping[str, Any]) -> tuple[NodeSLO | None, str | None]:
        """(the NodeSLO to act on, why `obj` was rejected or None). The store hands out the same
        object until it changes, so an unchanged NodeSLO is parsed once."""
        if obj is self._last_obj:
            return self._last_result
        try:
            slo = NodeSLO.parse(obj)
        except ConfigError as exc:
            kept = self.last_good is not None
            error = f"NodeSLO {name_of(obj)}: {exc}; " + (
                "keeping the last good NodeSLO" if kept else "no good NodeSLO yet, acting as without one"
            )
            key = (str(metadata_of(obj).get("resourceVersion") or ""), error)
            if key != self._rejected:
                self._rejected = key
                log.warning("%s", error)
                if self.on_rejected is not None:
                    self.on_rejected(obj, error)
            result: tuple[NodeSLO | None, str | None] = (self.last_good, error)
        else:
            self.last_good, self._rejected = slo, None
            result = (slo, None)
            self._tell_skipped(obj, slo)
        self._last_obj, self._last_result = obj, result
        return result

    def _tell_skipped(self, obj: Mapping[str, Any], slo: NodeSLO) -> None:
        """Each skipped key once per object (its resourceVersion): a relist's copy is not news."""
        version = str(metadata_of(obj).get("resourceVersion") or "")
        now = frozenset((version, where, why) for where, why in sorted(slo.skipped.items()))
        for _, where, why in sorted(now - self._told_skipped):
            message = f"NodeSLO {name_of(obj)}: {where} skipped: {why}; the other keys apply"
            log.warning("%s", message)
            if self.on_skipped is not None:
                self.on_skipped(obj, where, message)
        self._told_skipped = now
