"""The node's resource amplification ratios (`noderesource/plugins/resourceamplification/plugin.go`).

The configured ratios when the node's strategy is enabled; the cpu ratio becomes (the configured
one, or 1) × the node's current CPU normalization ratio and is kept when above 1 — so normalization
alone yields `{"cpu":1.50}`. Every ratio must be at least 1. The annotation is the JSON of the
ratios with two decimals; no ratios, or any failure, removes it (Koordinator's Prepare deletes the
annotation whenever the calculation produced none).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from policies.apis.constants import ANNOTATION_AMPLIFICATION_RATIO, RESOURCE_CPU
from policies.apis.slo_config.resource_amplification import AmplificationConfig


def amplification_ratio(
    config: AmplificationConfig, labels: Mapping[str, str], normalization_text: str | None
) -> str | None:
    """The `resource-amplification-ratio` annotation to write, or None to remove it;
    `normalization_text` is the node's current `cpu-normalization-ratio` annotation."""
    strategy = config.strategy_for(labels)
    ratios = dict(strategy.ratios) if strategy.enable else {}
    cpu = ratios.get(RESOURCE_CPU, 0.0)
    final = cpu if cpu > 0 else 1.0
    text = normalization_text
    if text is not None:
        try:
            normalization = float(text)
        except ValueError:
            return None
        if normalization <= 0:
            return None
        final *= normalization
    if final > 1:
        ratios[RESOURCE_CPU] = final
    if any(value < 1 for value in ratios.values()) or not ratios:
        return None
    body = ",".join(f"{json.dumps(name)}:{ratios[name]:.2f}" for name in sorted(ratios))
    return "{" + body + "}"


def amplification_differs(old: Mapping[str, str], new: Mapping[str, str]) -> str | None:
    before, after = old.get(ANNOTATION_AMPLIFICATION_RATIO, ""), new.get(ANNOTATION_AMPLIFICATION_RATIO, "")
    if before == after:
        return None
    if not before:
        return f"resource-amplification-ratio {after} to add"
    if not after:
        return "resource-amplification-ratio to remove"
    return f"resource-amplification-ratio {before} -> {after}"
