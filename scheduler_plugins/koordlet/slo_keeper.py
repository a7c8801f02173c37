"""The NodeSLO the agent acts on: the last one that passed validation.

A NodeSLO whose values the slo-controller-config rules refuse (a percentage of −50 or 1e23, an
eviction threshold of 0) is not applied: the agent keeps acting on the last good one, or on none
before there was one, and says so once per rejected object — a log line,
`koordlet_node_slo_rejected_total` and a Warning Event `NodeSLORejected` on the NodeSLO.
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


class NodeSLOKeeper:
    def __init__(self, on_rejected: Callable[[Mapping[str, Any], str], None] | None = None) -> None:
        self.on_rejected = on_rejected
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
        self._last_obj, self._last_result = obj, result
        return result
