"""The mid resource plugin (`noderesource/plugins/midresource/plugin.go`): calculates mid-cpu and
mid-memory (`mid.node_mid`), writes them in the node's status (cpu as a milli-core count, memory in
binary form) or removes them on reset, and asks for a status write when they move beyond the
diff threshold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from policies.apis.constants import MID_CPU, MID_MEMORY
from policies.apis.quantity import NANO, QuantityFormat, canonical_text
from policies.apis.slo_config.colocation import ColocationStrategy
from scheduler_plugins.manager.noderesource.framework import METRIC, NODE_INPUT, STRATEGY, PreparedNode, Read, Reading
from scheduler_plugins.manager.noderesource.inputs import Res
from scheduler_plugins.manager.noderesource.plugins.midresource.mid import node_mid
from scheduler_plugins.manager.noderesource.prepare import memory_milli
from scheduler_plugins.manager.noderesource.update import resource_differences

NAME: Final = "MidResource"
RESOURCES: Final = (MID_CPU, MID_MEMORY)


class MidResource:
    name: Final = NAME
    reads: Final[tuple[Read[Any], ...]] = (STRATEGY, NODE_INPUT, METRIC)
    resources: Final = RESOURCES

    def calculate(self, reading: Reading) -> Res:
        return node_mid(reading(STRATEGY), reading(NODE_INPUT), reading(METRIC))

    def prepare(self, result: object, node: PreparedNode) -> None:
        if result is None:
            for name in RESOURCES:
                node.remove(name)
            return
        cpu, memory = cast(Res, result)
        whole_bytes = -(-memory // 1000)
        node.set(MID_CPU, str(cpu), cpu * 1000)
        text = canonical_text(whole_bytes * NANO, QuantityFormat.BINARY_SI)
        node.set(MID_MEMORY, text, memory_milli(text, whole_bytes * 1000))

    def needs_sync(self, strategy: ColocationStrategy, old: Mapping[str, int], new: Mapping[str, int]) -> Sequence[str]:
        return resource_differences(RESOURCES, strategy.resource_diff_threshold, old, new)
