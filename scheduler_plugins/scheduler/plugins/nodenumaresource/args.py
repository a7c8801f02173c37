"""NodeNUMAResourceArgs (Koordinator's `pkg/scheduler/apis/config/types.go`, `v1/defaults.go`): the
default CPU bind policy and the two scoring strategies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.apis.constants import RESOURCE_CPU, RESOURCE_MEMORY
from policies.apis.field_errors import ConfigError, Fields, check_range

FULL_PCPUS: Final = "FullPCPUs"
SPREAD_BY_PCPUS: Final = "SpreadByPCPUs"
CPU_BIND_POLICIES: Final = (FULL_PCPUS, SPREAD_BY_PCPUS, "")
LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
DEFAULT_CPU_BIND_POLICY: Final = FULL_PCPUS
DEFAULT_SCORING_RESOURCES: Final = ((RESOURCE_CPU, 1), (RESOURCE_MEMORY, 1))


@dataclass(frozen=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[tuple[str, int], ...] = DEFAULT_SCORING_RESOURCES


@dataclass(frozen=True)
class NodeNUMAResourceArgs:
    default_cpu_bind_policy: str = DEFAULT_CPU_BIND_POLICY
    scoring_strategy: ScoringStrategy = ScoringStrategy()
    numa_scoring_strategy: ScoringStrategy = ScoringStrategy()


def parse_scoring_strategy(fields: Fields, default: ScoringStrategy = ScoringStrategy()) -> ScoringStrategy:
    """`{type: LeastAllocated|MostAllocated, resources: [{name, weight}]}`, weights in (0, 100]."""
    if not fields.raw:
        return default
    kind = fields.str("type", LEAST_ALLOCATED)
    if kind not in (LEAST_ALLOCATED, MOST_ALLOCATED):
        raise ConfigError(fields.at("type"), f"must be {LEAST_ALLOCATED} or {MOST_ALLOCATED}, got {kind!r}")
    raw = fields.raw.get("resources")
    if raw is None:
        return ScoringStrategy(kind, default.resources)
    if not isinstance(raw, list):
        raise ConfigError(fields.at("resources"), "must be a list of {name, weight}")
    resources = []
    for i, item in enumerate(raw):
        entry = Fields(item, f"{fields.at('resources')}[{i}]")
        name, weight = entry.str("name"), entry.int("weight", 1)
        if not name:
            raise ConfigError(entry.at("name"), "is required")
        check_range(entry.at("weight"), weight, 0, 100, open_low=True)
        resources.append((name, weight))
    return ScoringStrategy(kind, tuple(resources))


def parse_args(raw: Mapping[str, Any] | None, path: str) -> NodeNUMAResourceArgs:
    fields = Fields(raw, path)
    policy = fields.str("defaultCPUBindPolicy", DEFAULT_CPU_BIND_POLICY)
    if policy not in CPU_BIND_POLICIES:
        raise ConfigError(
            fields.at("defaultCPUBindPolicy"), f"must be {FULL_PCPUS}, {SPREAD_BY_PCPUS} or empty, got {policy!r}"
        )
    return NodeNUMAResourceArgs(
        policy,
        parse_scoring_strategy(fields.sub("scoringStrategy")),
        parse_scoring_strategy(fields.sub("numaScoringStrategy")),
    )
