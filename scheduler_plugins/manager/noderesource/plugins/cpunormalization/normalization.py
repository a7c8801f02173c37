"""The CPU normalization ratio of a node (`noderesource/plugins/cpunormalization/plugin.go`).

Disabled (node label `cpu-normalization-enabled`, else the strategy) → "1.00". Enabled → the ratio
of the node's CPU model (the NRT's `cpu-basic-info` annotation; hyper-threading × turbo picks the
field), else `defaultRatio`; it must lie in [1, 5]. Any failure yields no ratio this round (None).
The ratio multiplies batch-cpu when it is above 1.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from policies.apis.constants import ANNOTATION_CPU_BASIC_INFO, LABEL_CPU_NORMALIZATION_ENABLED
from policies.apis.feature_gates import parse_bool
from policies.apis.slo_config.cpu_normalization import NormalizationConfig

DEFAULT_RATIO_TEXT: Final = "1.00"
MIN_RATIO: Final = 1.0
MAX_RATIO: Final = 5.0
#: `NormalizationRatioDiffEpsilon`
RATIO_EPSILON: Final = 0.01


def _model_ratio(info: Mapping[str, Any], model: Mapping[str, Mapping[str, float]]) -> float | None:
    ratios = model.get(str(info.get("cpuModel") or ""))
    if ratios is None:
        return None
    ht, turbo = info.get("hyperThreadEnabled") is True, info.get("turboEnabled") is True
    name = (
        "hyperThreadTurboEnabledRatio"
        if ht and turbo
        else "hyperThreadEnabledRatio"
        if ht
        else "turboEnabledRatio"
        if turbo
        else "baseRatio"
    )
    value = ratios.get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def normalization_ratio(
    config: NormalizationConfig, labels: Mapping[str, str], nrt_annotations: Mapping[str, str] | None
) -> str | None:
    """The `cpu-normalization-ratio` annotation text to write, or None when it cannot be computed."""
    strategy = config.strategy_for(labels)
    label = labels.get(LABEL_CPU_NORMALIZATION_ENABLED)
    if label is not None:
        parsed = parse_bool(label)
        if parsed is None:
            return None  # Koordinator fails the calculation on an unparsable label
        enabled = parsed
    else:
        enabled = strategy.enable
    if not enabled:
        return DEFAULT_RATIO_TEXT
    if nrt_annotations is None:
        return None
    text = nrt_annotations.get(ANNOTATION_CPU_BASIC_INFO)
    if not text:
        return None
    try:
        info = json.loads(text)
    except ValueError:
        return None
    if not isinstance(info, dict):
        return None
    ratio = _model_ratio(info, strategy.ratio_model)
    if ratio is None:
        ratio = strategy.default_ratio
    if ratio is None or not MIN_RATIO <= ratio <= MAX_RATIO:
        return None
    return f"{ratio:.2f}"


def parse_ratio(text: str | None) -> float | None:
    """A ratio annotation as a float; None when absent. Raises ValueError when unparsable."""
    if text is None:
        return None
    return float(text)


def ratio_differs(old: float, new: float) -> bool:
    return old > new + RATIO_EPSILON or old < new - RATIO_EPSILON
