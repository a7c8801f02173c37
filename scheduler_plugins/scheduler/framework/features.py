"""The scheduler's feature gates: their names and defaults (Koordinator's `pkg/features/features.go`).

The flag is parsed and the gates are read by `policies.apis.feature_gates`, the one parser every
component's `--feature-gates` uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from policies.apis.feature_gates import FeatureGates, parse_feature_gates

ELASTIC_QUOTA_GUARANTEE_USAGE: Final = "ElasticQuotaGuaranteeUsage"

#: Every gate and its default (Koordinator's pkg/features defaults).
KNOWN_GATES: Final[Mapping[str, bool]] = MappingProxyType(
    {
        ELASTIC_QUOTA_GUARANTEE_USAGE: False,
    }
)


def scheduler_gates(text: str | None = "") -> FeatureGates:
    """The scheduler's gates with `--feature-gates` `text` applied (ConfigError naming the flag)."""
    return parse_feature_gates(text, KNOWN_GATES)
