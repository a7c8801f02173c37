"""Scheduler feature gates (`--feature-gates Name=true,Other=false`), read once at the CLI edge.

Only gates this scheduler implements are accepted; an unknown name or a value other than
true/false is a usage error naming the flag, as kube-scheduler's `--feature-gates` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from policies.field_errors import ConfigError

ELASTIC_QUOTA_GUARANTEE_USAGE: Final = "ElasticQuotaGuaranteeUsage"

#: Every gate and its default (Koordinator's pkg/features defaults).
KNOWN_GATES: Final[Mapping[str, bool]] = MappingProxyType(
    {
        ELASTIC_QUOTA_GUARANTEE_USAGE: False,
    }
)


@dataclass(frozen=True)
class FeatureGates:
    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        return self.overrides.get(name, KNOWN_GATES[name])


def parse_feature_gates(text: str | None, path: str = "--feature-gates") -> FeatureGates:
    """`A=true,B=false` (spaces around items allowed; empty text = all defaults)."""
    overrides: dict[str, bool] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false"):
            raise ConfigError(path, f"{item!r}: expected Name=true or Name=false")
        if name not in KNOWN_GATES:
            raise ConfigError(path, f"unrecognized feature gate {name!r} (known: {', '.join(sorted(KNOWN_GATES))})")
        overrides[name] = value == "true"
    return FeatureGates(overrides)
