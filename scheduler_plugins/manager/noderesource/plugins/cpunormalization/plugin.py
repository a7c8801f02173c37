"""The CPU normalization plugin (`noderesource/plugins/cpunormalization/plugin.go`): calculates the
node's ratio from the NRT's CPU model (`normalization.normalization_ratio`; None when it cannot be
computed, which leaves the annotation as it is), writes the `cpu-normalization-ratio` annotation, and
asks for a metadata patch when it is created, removed or moves by more than 0.01."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final, cast

from policies.apis.constants import ANNOTATION_CPU_NORMALIZATION_RATIO
from scheduler_plugins.manager.noderesource.framework import (
    NODE_LABELS,
    NORMALIZATION_CONFIG,
    NRT_ANNOTATIONS,
    PreparedNode,
    Read,
    Reading,
)
from scheduler_plugins.manager.noderesource.plugins.cpunormalization.normalization import (
    normalization_ratio,
    parse_ratio,
    ratio_differs,
)

NAME: Final = "CPUNormalization"
KEY: Final = ANNOTATION_CPU_NORMALIZATION_RATIO


@lru_cache(maxsize=256)
def _ratio_parses(text: str | None) -> bool:
    """Whether `parse_ratio` takes the text (cached by text: the manager wrote it)."""
    try:
        parse_ratio(text)
    except ValueError:
        return False
    return True


def meta_reason(old: Mapping[str, str], new: Mapping[str, str]) -> str | None:
    """Why the ratio annotation must be patched (`isCPUNormalizationRatioDifferent`), or None."""
    try:
        before = parse_ratio(old.get(KEY))
    except ValueError:
        return "cpu-normalization-ratio unparsable"
    try:
        after = parse_ratio(new.get(KEY))
    except ValueError:
        return None
    if before is None and after is None:
        return None
    if before is None:
        return f"cpu-normalization-ratio {new[KEY]} to add"
    if after is None:
        return "cpu-normalization-ratio to remove"
    if ratio_differs(before, after):
        return f"cpu-normalization-ratio {old[KEY]} -> {new[KEY]}"
    return None


class CPUNormalization:
    name: Final = NAME
    reads: Final[tuple[Read[Any], ...]] = (NORMALIZATION_CONFIG, NODE_LABELS, NRT_ANNOTATIONS)

    def calculate(self, reading: Reading) -> str | None:
        return normalization_ratio(reading(NORMALIZATION_CONFIG), reading(NODE_LABELS), reading(NRT_ANNOTATIONS))

    def prepare(self, result: object, node: PreparedNode) -> None:
        if result is not None:
            node.annotations[KEY] = cast(str, result)

    def needs_sync_meta(self, old: Mapping[str, str], new: Mapping[str, str]) -> str | None:
        if old.get(KEY) == new.get(KEY) and _ratio_parses(old.get(KEY)):
            return None  # the same text, one that parses: no difference (without the parse)
        return meta_reason(old, new)
