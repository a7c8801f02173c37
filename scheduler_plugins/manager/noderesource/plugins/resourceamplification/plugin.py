"""The resource amplification plugin (`noderesource/plugins/resourceamplification/plugin.go`):
calculates the node's ratios (`amplification.amplification_ratio`, which reads the node's current
CPU normalization ratio annotation), writes the `resource-amplification-ratio` annotation or removes
it (a reset removes it), and asks for a metadata patch when it changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from policies.apis.constants import ANNOTATION_AMPLIFICATION_RATIO, ANNOTATION_CPU_NORMALIZATION_RATIO
from scheduler_plugins.manager.noderesource.framework import (
    AMPLIFICATION_CONFIG,
    NODE_LABELS,
    PreparedNode,
    Read,
    Reading,
    node_annotation,
)
from scheduler_plugins.manager.noderesource.plugins.resourceamplification.amplification import (
    amplification_differs,
    amplification_ratio,
)

NAME: Final = "ResourceAmplification"
NORMALIZATION_ANNOTATION: Final = node_annotation(ANNOTATION_CPU_NORMALIZATION_RATIO)


class ResourceAmplification:
    name: Final = NAME
    reads: Final[tuple[Read[Any], ...]] = (AMPLIFICATION_CONFIG, NODE_LABELS, NORMALIZATION_ANNOTATION)

    def calculate(self, reading: Reading) -> str | None:
        return amplification_ratio(
            reading(AMPLIFICATION_CONFIG), reading(NODE_LABELS), reading(NORMALIZATION_ANNOTATION)
        )

    def prepare(self, result: object, node: PreparedNode) -> None:
        if result is not None:
            node.annotations[ANNOTATION_AMPLIFICATION_RATIO] = cast(str, result)
        else:
            node.annotations.pop(ANNOTATION_AMPLIFICATION_RATIO, None)

    def needs_sync_meta(self, old: Mapping[str, str], new: Mapping[str, str]) -> str | None:
        if old.get(ANNOTATION_AMPLIFICATION_RATIO, "") == new.get(ANNOTATION_AMPLIFICATION_RATIO, ""):
            return None
        return amplification_differs(old, new)
