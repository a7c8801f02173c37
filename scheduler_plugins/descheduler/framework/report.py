"""What one round did, as values the command line prints and the metrics count: every node's
classification per pool, every eviction (or, under dry run, what would be evicted), every skip."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class NodeEntry:
    name: str
    pool: str
    classification: str
    usage: dict[str, float]  # percent of allocatable
    thresholds: dict[str, dict[str, float]]
    note: str = ""  # why a node was not classified (no fresh NodeMetric)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "pool": self.pool,
            "classification": self.classification,
            "usage": self.usage,
            "thresholds": self.thresholds,
        }
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class EvictionEntry:
    pod: str  # namespace/name
    node: str
    plugin: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"pod": self.pod, "node": self.node, "plugin": self.plugin, "reason": self.reason}


@dataclass
class RoundReport:
    round: int
    dry_run: bool = False
    nodes: list[NodeEntry] = field(default_factory=list)
    evictions: list[EvictionEntry] = field(default_factory=list)
    #: evictions that were attempted and did not happen (a limit, a disruption budget, a failure)
    skipped: list[EvictionEntry] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: plugins that raised and were skipped for this round, one line each
    failed_plugins: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "round": self.round,
            "nodes": [n.as_dict() for n in self.nodes],
            "evictions": [e.as_dict() for e in self.evictions],
        }
        if self.skipped:
            out["skipped"] = [e.as_dict() for e in self.skipped]
        if self.errors:
            out["errors"] = list(self.errors)
        if self.failed_plugins:
            out["failedPlugins"] = list(self.failed_plugins)
        return out
